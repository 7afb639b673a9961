"""io_uring refused (a seccomp filter answering EPERM to io_uring_setup, as container
runtimes do): the loop falls back to epoll, says why, and still works. The filter is
set up in a child process, which cannot undo it."""

import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(r"""
    import asyncio, ctypes, errno, struct, sys
    # BPF: load the syscall number; io_uring_setup (425 on every architecture with the
    # unified syscall table) gets EPERM, everything else is allowed.
    BPF_LD_W_ABS, BPF_JEQ_K, BPF_RET_K = 0x20, 0x15, 0x06
    RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
    prog = [(BPF_LD_W_ABS, 0, 0, 0), (BPF_JEQ_K, 0, 1, 425),
            (BPF_RET_K, 0, 0, RET_ERRNO | errno.EPERM), (BPF_RET_K, 0, 0, RET_ALLOW)]
    raw = b"".join(struct.pack("HBBI", *ins) for ins in prog)
    buf = ctypes.create_string_buffer(raw, len(raw))
    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    fprog = Fprog(len(prog), ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(38, 1, 0, 0, 0) == 0, "PR_SET_NO_NEW_PRIVS"
    assert libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) == 0, ctypes.get_errno()

    import ringway
    loop = ringway.new_event_loop(backend="auto")
    print("backend:", loop.backend, "|", loop._ringway_backend_description)
    try:
        ringway.new_event_loop(backend="uring")
    except OSError as e:
        print("forced io_uring refused:", e)

    async def main():
        async def echo(r, w):
            while d := await r.read(65536):
                w.write(d)
            w.close()
        server = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async def one(i):
            r, w = await asyncio.open_connection("127.0.0.1", port)
            data = bytes([i]) * 100_000
            w.write(data)
            got = await r.readexactly(len(data))
            assert got == data
            w.close()
        await asyncio.gather(*(one(i) for i in range(20)))
        server.close()
        await server.wait_closed()
        return "echo ok"
    print(loop.run_until_complete(asyncio.wait_for(main(), 60)))
    loop.close()
""")


def test_seccomp_refusal_falls_back_to_epoll():
    env = dict(os.environ)
    env.pop("RINGWAY_BACKEND", None)
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          timeout=120, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "backend: epoll" in out, out
    assert "EPERM" in out, out
    assert "forced io_uring refused:" in out, out
    assert "echo ok" in out, out
