"""``j-cli`` in a process forked from a warm one: how :func:`helpers.run_cli` runs most calls.

Each call is still a process of its own, with its own stdin, stdout, stderr,
cwd, environment and exit status: the child of a small server (the *warm
parent*, one per pytest worker) that imported j-cli's entry modules once (and
the stdlib HTTP and TLS modules the kernel commands use). What a call skips is
the interpreter's start and those imports: 20-65 ms of CPU a call here
instead of 35-105 ms, over some 3,000 calls a run of the suite.

What differs from the installed script, and so is started as the script
(``run_cli(..., cold=True)``, or by :func:`helpers.run_cli` on its own): how
``j-cli`` starts (the console script, ``-X importtime``, what a command
imports), what the interpreter reads from the environment as it starts
(``PYTHON*``, the locale, the time zone), and calls made at once from two
threads. A test that signals a call or reads it while it runs starts its own
process. The warm parent imports only modules that read nothing from the
environment at import time, and no module whose presence j-cli tests
(``jcli_sidecar.ipynb.nbindex``: see ``jcli.__main__``); its ``sys.path``
starts with the script's folder, as the script's does; ``random`` reseeds
itself in every child.

The protocol, on a socketpair: the test sends one msgpack request
(argv, cwd, environment, as bytes) with the child's three standard fds attached; the
parent forks, answers the child's pid, waits for it and answers its exit
status (``-N`` for signal N, as :mod:`subprocess` says it).
"""

from __future__ import annotations

import atexit
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time

import msgpack

#: What the warm parent imports before its first fork.
WARM_MODULES = (
    "jcli.__main__",
    "jcli.fastpath",
    "jcli.cli",
    "jcli.hooks_entry",
    "jcli.emit",
    "jcli.setup.command",
    "jcli.setup.hosts",
    "jcli.setup.claude",
    "jcli.setup.codex",
    "jcli.setup.opencode",
    "jcli.setup.dsh",
    "jcli.setup.gitignore",
    "jcli.setup.status",
    "jcli.kernel_cmd",
    "jcli.exec_cmd",
    "jcli.embedded",
    "jcli.transport",
    "http.client",
    "ssl",
)

_PARENT_SOURCE = r"""
import atexit, os, socket, sys, traceback, msgpack
sys.path[0] = os.path.dirname(sys.argv[2])  # as the script's: its own folder, never the cwd ('' here)
for name in sys.argv[3:]:
    __import__(name)
from jcli.__main__ import main
control = socket.socket(fileno=int(sys.argv[1]))
while True:
    try:
        data, fds, _, _ = socket.recv_fds(control, 1 << 20, 3)
    except OSError:
        break
    if not data:
        break  # the test process is gone: so is this one
    request = msgpack.unpackb(data)
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            control.close()
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
                os.close(fd)
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environb.update(request["env"])
            sys.argv = [os.fsdecode(arg) for arg in request["argv"]]
            try:
                code = main(sys.argv[1:])
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException:
            traceback.print_exc()
        finally:
            atexit._run_exitfuncs()  # what j-cli registered runs as at a real exit (os._exit skips it)
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except BaseException:  # a closed pipe: nothing more to say
                    pass
            os._exit(code if isinstance(code, int) else 1)
    for fd in fds:
        os.close(fd)
    control.sendall(msgpack.packb(["pid", pid]))
    _, status = os.waitpid(pid, 0)
    control.sendall(msgpack.packb(["status", os.waitstatus_to_exitcode(status)]))
"""


class WarmParent:
    """The warm parent of this process's calls: started on first use, gone when this process is."""

    def __init__(self, jcli: str, env: dict[str, str]) -> None:
        self.jcli = jcli
        ours, theirs = socket.socketpair()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _PARENT_SOURCE, str(theirs.fileno()), jcli, *WARM_MODULES],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=env,
        )
        theirs.close()
        self.control = ours
        self.unpacker = msgpack.Unpacker()
        atexit.register(self.stop)

    def stop(self) -> None:
        """Close the socket: the warm parent reads its end and exits; wait for it."""
        self.control.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def _answer(self, deadline: float) -> list:
        while True:
            for item in self.unpacker:
                return item
            self.control.settimeout(max(0.0, deadline - time.monotonic()))
            data = self.control.recv(4096)
            if not data:
                raise RuntimeError(f"the warm j-cli parent ended (status {self.proc.wait()})")
            self.unpacker.feed(data)

    def run(self, args: tuple[str, ...], cwd, stdin: bytes, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
        """One call, run to its end: like ``subprocess.run([JCLI, *args], capture_output=True)``."""
        deadline = time.monotonic() + timeout
        stdin_r, stdin_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        request = {  # as bytes, like exec's: an argument or a value that is no UTF-8 crosses intact
            "argv": [os.fsencode(arg) for arg in (self.jcli, *args)],
            "cwd": os.fsencode(cwd or os.getcwd()),
            "env": {os.fsencode(name): os.fsencode(value) for name, value in env.items()},
        }
        try:
            socket.send_fds(self.control, [msgpack.packb(request)], [stdin_r, out_w, err_w])
        finally:
            for fd in (stdin_r, out_w, err_w):
                os.close(fd)
        kind, pid = self._answer(deadline)
        assert kind == "pid"
        output = {out_r: bytearray(), err_r: bytearray()}
        try:
            self._pump(stdin_w, stdin, output, deadline)
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            raise
        finally:
            for fd in output:
                os.close(fd)
        kind, code = self._answer(deadline)
        assert kind == "status"
        return subprocess.CompletedProcess([self.jcli, *args], code, bytes(output[out_r]), bytes(output[err_r]))

    @staticmethod
    def _pump(stdin_w: int, stdin: bytes, output: dict[int, bytearray], deadline: float) -> None:
        """Feed stdin and read stdout and stderr to their ends, at once (a child may fill a pipe first)."""
        os.set_blocking(stdin_w, False)
        pending = memoryview(stdin)
        with selectors.DefaultSelector() as sel:
            for fd in output:
                sel.register(fd, selectors.EVENT_READ)
            if pending:
                sel.register(stdin_w, selectors.EVENT_WRITE)
            else:
                os.close(stdin_w)
            while sel.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    if pending:
                        os.close(stdin_w)
                    raise TimeoutError("j-cli did not end in time")
                for key, _ in sel.select(left):
                    if key.fd == stdin_w:
                        try:
                            pending = pending[os.write(stdin_w, pending) :]
                        except BrokenPipeError:
                            pending = pending[:0]  # the child stopped reading: as subprocess.run does
                        if not pending:
                            sel.unregister(stdin_w)
                            os.close(stdin_w)
                        continue
                    chunk = os.read(key.fd, 1 << 16)
                    if chunk:
                        output[key.fd] += chunk
                    else:
                        sel.unregister(key.fd)


_parent: WarmParent | None = None
_one_at_a_time = threading.Lock()  # one request and its answers on the socket at a time


def run_warm(jcli: str, args: tuple[str, ...], cwd, stdin: bytes, env: dict[str, str] | None, base_env: dict[str, str], timeout: float):
    """Run ``j-cli args`` forked from this process's warm parent (started with ``base_env`` on first use)."""
    with _one_at_a_time:
        return _run(jcli, args, cwd, stdin, env, base_env, timeout)


def run_warm_if_free(jcli: str, args: tuple[str, ...], cwd, stdin: bytes, env: dict[str, str], base_env: dict[str, str], timeout: float):
    """:func:`run_warm`, or None when another thread's call holds the warm parent (the caller then starts j-cli itself)."""
    if not _one_at_a_time.acquire(blocking=False):
        return None
    try:
        return _run(jcli, args, cwd, stdin, env, base_env, timeout)
    finally:
        _one_at_a_time.release()


def _run(jcli, args, cwd, stdin, env, base_env, timeout) -> subprocess.CompletedProcess:
    global _parent
    if _parent is None or _parent.proc.poll() is not None:
        _parent = WarmParent(jcli, base_env)
    return _parent.run(args, cwd, stdin, dict(os.environ) if env is None else dict(env), timeout)
