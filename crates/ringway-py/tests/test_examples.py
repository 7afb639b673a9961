"""The examples run (each on both backends) and say what they did."""

import os
import subprocess
import sys

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")


def test_echo_example_runs(backend):
    out = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, "echo.py"), "--backend", backend,
         "--clients", "5", "--messages", "200"],
        capture_output=True, text=True, timeout=60, check=True).stdout
    assert out == (f"Loop on {backend}: 1000 echoes of 1024 B over 5 connections in "
                   f"{out.split(' in ')[1].split(' s;')[0]} s; child said "
                   "'hello from a child'\n")
