"""Subprocess transports: stdlib's ``BaseSubprocessTransport`` (pipes connected through
the loop's pipe transports), started with ``subprocess.Popen``; the loop learns of the
child's exit through a pidfd watched on the ring (no child watcher, no thread)."""

import subprocess
from asyncio import base_subprocess


class SubprocessTransport(base_subprocess.BaseSubprocessTransport):
    """A child process with pipes for the stdio streams asked for."""

    def _start(self, args, shell, stdin, stdout, stderr, bufsize, **kwargs):
        self._proc = subprocess.Popen(
            args, shell=shell, stdin=stdin, stdout=stdout, stderr=stderr,
            universal_newlines=False, bufsize=bufsize, **kwargs)
