"""Subprocesses (pipes for stdio, exit codes through a pidfd on the ring), pipes and
signal handlers."""

import asyncio
import os
import signal
import sys

from conftest import run


def test_subprocess_exec_pipes_and_exit_codes(loop):
    async def main():
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c",
            "import sys; d = sys.stdin.buffer.read(); "
            "sys.stdout.buffer.write(d.upper()); sys.stderr.write('err'); sys.exit(3)",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        data = os.urandom(300_000).hex().encode()
        out, err = await proc.communicate(data)
        assert out == data.upper()
        assert err == b"err"
        assert proc.returncode == 3

    run(loop, main())


def test_subprocess_shell_kill_and_many_at_once(loop):
    async def main():
        procs = [await asyncio.create_subprocess_shell(
            f"echo {i}; exit {i % 5}", stdout=asyncio.subprocess.PIPE)
            for i in range(20)]
        outs = await asyncio.gather(*(p.communicate() for p in procs))
        assert [o[0] for o in outs] == [f"{i}\n".encode() for i in range(20)]
        assert [p.returncode for p in procs] == [i % 5 for i in range(20)]
        sleeper = await asyncio.create_subprocess_exec("sleep", "30")
        sleeper.kill()
        assert await sleeper.wait() == -signal.SIGKILL

    run(loop, main())


def test_read_and_write_pipes(loop):
    async def main():
        rfd, wfd = os.pipe()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                     os.fdopen(rfd, "rb", 0))
        wtr, wproto = await loop.connect_write_pipe(asyncio.Protocol,
                                                   os.fdopen(wfd, "wb", 0))
        payload = b"p" * 1_000_000  # more than a pipe holds: queued, then drained
        wtr.write(payload)
        got = await reader.readexactly(len(payload))
        assert got == payload
        wtr.close()
        assert await reader.read() == b""

    run(loop, main())


def test_signal_handlers_run_in_the_loop(loop):
    async def main():
        got = loop.create_future()
        loop.add_signal_handler(signal.SIGUSR1, lambda: got.set_result("usr1"))
        os.kill(os.getpid(), signal.SIGUSR1)
        assert await asyncio.wait_for(got, 5) == "usr1"
        assert loop.remove_signal_handler(signal.SIGUSR1)
        assert not loop.remove_signal_handler(signal.SIGUSR1)
        assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL

    run(loop, main())
