"""Installs ringway into a fresh virtual environment and runs ``smoke.py`` there.

    python check_install.py --wheel WHEEL     # no Rust toolchain on PATH
    python check_install.py --source DIR      # pip install DIR (builds with maturin)

The wheel check runs with a PATH that has no ``cargo``, ``rustc`` or ``maturin`` (and
says so): proof that a user without Rust can install and use the wheel. Prints the time
the install and the smoke test took; exits non-zero on any failure."""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def no_rust_path():
    """The directories of PATH that hold no Rust tool (and no maturin)."""
    keep = []
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not any(os.path.exists(os.path.join(d, t)) for t in ("cargo", "rustc", "maturin")):
            keep.append(d)
    return os.pathsep.join(keep)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--wheel")
    what.add_argument("--source")
    args = ap.parse_args()
    env = dict(os.environ)
    for var in ("VIRTUAL_ENV", "PYTHONPATH", "RINGWAY_BACKEND"):
        env.pop(var, None)
    if args.wheel:
        env["PATH"] = no_rust_path()
        for tool in ("cargo", "rustc", "maturin"):
            if shutil.which(tool, path=env["PATH"]):
                print(f"check_install: {tool} is still on PATH", file=sys.stderr)
                return 1
    with tempfile.TemporaryDirectory() as d:
        venv = os.path.join(d, "venv")
        t_venv = time.monotonic()
        # A bare environment (no pip bootstrapped into it: this interpreter's pip
        # installs into it), the quickest fresh one.
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True,
                       env=env)
        py = os.path.join(venv, "bin", "python")
        pip = [sys.executable, "-m", "pip", "--python", py, "install", "-q",
               "--disable-pip-version-check"]
        t0 = time.monotonic()
        if args.wheel:
            subprocess.run(pip + ["--no-index", args.wheel], check=True, env=env)
        else:
            subprocess.run(pip + [args.source], check=True, env=env)
        t1 = time.monotonic()
        # From the temporary directory: the package must come from the environment,
        # not from a source tree next to the test.
        r = subprocess.run([py, os.path.join(HERE, "smoke.py")], env=env, cwd=d)
        t2 = time.monotonic()
    kind = "wheel" if args.wheel else "source"
    print(f"check_install ({kind}, Python {sys.version.split()[0]}): venv "
          f"{t0 - t_venv:.1f} s, install {t1 - t0:.1f} s, smoke test {t2 - t1:.1f} s"
          + (", no cargo/rustc/maturin on PATH" if args.wheel else ""))
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
