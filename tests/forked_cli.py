"""The sqlclose command run as a process of its own, forked from an interpreter that has imported it.

A fresh ``python -m sqlclose.cli`` spends ~0.6 s importing sqlclose, DuckDB, sqlglot, numpy, pyarrow
and pydantic before the command does anything, and the suite ran the command ~430 times. A test
whose subject is the command as a process (its exit code, stdout, stderr, the files it leaves)
gets the same from ``run_cli``: a child forked from a server process that imported everything
once. The child is a real process with its own pid, working folder, environment, file
descriptors and resource limits; it runs the module ``python -m sqlclose.cli`` runs (``runpy``,
as the interpreter does), the console script's ``run`` with ``argv[0]`` the script's path, or a
benchmark script as ``python benchmarks/x.py`` would (``run_script``), and
ends as the interpreter would: ``SystemExit``'s code, a traceback and 1 for any other exception,
the ``atexit`` handlers, the streams flushed.

What a forked child cannot reproduce falls back to ``subprocess.run``: an environment whose
interpreter settings (``PYTHON*``, ``LANG``, ``LC_*``) differ from the server's, which decide how
the interpreter starts. The interpreter's own start (imports, ``--help`` before any engine) is
tested with real processes (tests/test_cold_start.py, tests/test_cli.py), and so are signals.
"""

from __future__ import annotations

import atexit
import io
import json
import locale
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

CONSOLE_SCRIPT = str(Path(sys.executable).with_name("sqlclose"))
_STARTUP = ("PYTHON", "LANG", "LC_")  # read by the interpreter as it starts: a fork cannot change them

# The server: imports the command and what its subcommands import, then forks a child per request.
_SERVER = r"""
import atexit, importlib, json, os, runpy, signal, socket, sys, traceback
import sqlclose.cli, sqlclose.api, sqlclose.release.release, sqlclose.search.incognito
for target in sqlclose.cli.COMMANDS.values():
    importlib.import_module(target.split(":")[0])

def child(request, fds):
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    if request["fsize"] is not None:
        import resource
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (request["fsize"], request["fsize"]))
    code = 0
    try:
        if request["module"]:
            sys.argv = ["-m", *request["args"]]
            runpy.run_module("sqlclose.cli", run_name="__main__", alter_sys=True)
        elif request["path"]:
            sys.argv = [request["path"], *request["args"]]
            sys.path[0] = os.path.dirname(request["path"])  # as `python path` puts the script's folder first
            runpy.run_path(request["path"], run_name="__main__")
        else:
            sys.argv = [request["script"], *request["args"]]
            sqlclose.cli.run()
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code & 0xFF)

server = socket.socket(fileno=int(sys.argv[1]))
while True:
    message, fds, _, _ = socket.recv_fds(server, 1 << 22, 3)
    if not message:
        break
    pid = os.fork()
    if pid == 0:
        server.close()
        child(json.loads(message), fds)
    for fd in fds:
        os.close(fd)
    server.send(json.dumps({"pid": pid}).encode())
    _, status = os.waitpid(pid, 0)
    server.send(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode())
"""


class _Server:
    def __init__(self) -> None:
        # SOCK_SEQPACKET: each request and reply arrives whole, as one message.
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.env = dict(os.environ)
        # Its stdout is not the worker's (pytest-xdist talks to its workers over pipes): nothing the
        # server might print can reach them. Each child gets its own streams.
        self.process = subprocess.Popen([sys.executable, "-c", _SERVER, str(theirs.fileno())],
                                        pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL)
        theirs.close()
        self.socket = ours
        self.lock = threading.Lock()

    def starts_like(self, env: Mapping[str, str]) -> bool:
        def startup(e: Mapping[str, str]) -> dict[str, str]:
            return {k: v for k, v in e.items() if k.startswith(_STARTUP)}
        return startup(env) == startup(self.env)

    def run(self, request: dict, fds: list[int], timeout: float) -> int:
        with self.lock:
            socket.send_fds(self.socket, [json.dumps(request).encode()], fds)
            pid = self._reply()["pid"]
            late = threading.Event()
            timer = threading.Timer(timeout, lambda: (late.set(), _kill(pid)))
            timer.start()
            try:
                status = self._reply()["status"]
            finally:
                timer.cancel()
            if late.is_set():
                raise subprocess.TimeoutExpired(request["args"], timeout)
            return status

    def _reply(self) -> dict:
        message = self.socket.recv(1 << 16)
        if not message:
            raise RuntimeError(f"the forking server stopped (exit {self.process.poll()})")
        return json.loads(message)

    def close(self) -> None:
        self.socket.close()
        self.process.wait(timeout=30)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


_server: _Server | None = None


def _the_server() -> _Server:
    global _server
    if _server is None or _server.process.poll() is not None:
        _server = _Server()
        atexit.register(_server.close)
    return _server


class _Drain(threading.Thread):
    """Reads a pipe to its end, so that a child writing more than a pipe holds is never blocked."""

    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self.fd, self.chunks = fd, []
        self.start()

    def run(self) -> None:
        with open(self.fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(1 << 16):
                self.chunks.append(chunk)

    def result(self) -> bytes:
        self.join()
        return b"".join(self.chunks)


def _text(data: bytes) -> str:
    """As ``subprocess.run(text=True)`` decodes: the locale's encoding, universal newlines."""
    return io.TextIOWrapper(io.BytesIO(data), encoding=locale.getpreferredencoding(False)).read()


def run_cli(args: Sequence[object], *, cwd: str | Path | None = None, env: Mapping[str, str] | None = None,
            timeout: float = 300, fsize: int | None = None, module: bool = True) -> subprocess.CompletedProcess:
    """``subprocess.run([python, "-m", "sqlclose.cli", *args], capture_output=True, text=True)``
    (``module=False``: the ``sqlclose`` console script), as a child forked from the server.
    ``fsize``: the child's RLIMIT_FSIZE, SIGXFSZ ignored (a write past it fails with EFBIG)."""
    args = [str(a) for a in args]
    command = [sys.executable, "-m", "sqlclose.cli", *args] if module else [CONSOLE_SCRIPT, *args]
    return _forked(command, {"args": args, "module": module, "path": None, "script": CONSOLE_SCRIPT},
                   cwd, env, timeout, fsize)


def run_script(path: str | Path, args: Sequence[object], *, cwd: str | Path | None = None,
               env: Mapping[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``subprocess.run([python, path, *args], capture_output=True, text=True)`` (a benchmark
    script), as a child forked from the server: the script runs as ``__main__`` (``runpy``), its
    folder first on ``sys.path``, as the interpreter runs it."""
    args = [str(a) for a in args]
    path = str(Path(path).resolve())
    return _forked([sys.executable, path, *args], {"args": args, "module": False, "path": path, "script": None},
                   cwd, env, timeout, None)


def _forked(command: list[str], request: dict, cwd: str | Path | None, env: Mapping[str, str] | None,
            timeout: float, fsize: int | None) -> subprocess.CompletedProcess:
    """``command``'s result, from a child the server forks for ``request`` (what the child runs)."""
    environ = dict(os.environ if env is None else env)
    server = _the_server()
    if not server.starts_like(environ):
        return _subprocess(command, cwd, environ, timeout, fsize)
    request = {**request, "cwd": str(Path(cwd or os.getcwd())), "env": environ, "fsize": fsize}
    # Pipes, as subprocess.run's: a file-size limit does not bound them, and they are read as filled.
    (out_r, out_w), (err_r, err_w) = os.pipe(), os.pipe()
    readers = [_Drain(out_r), _Drain(err_r)]
    try:
        with open(os.devnull, "rb") as stdin:
            status = server.run(request, [stdin.fileno(), out_w, err_w], timeout)
    finally:
        os.close(out_w)
        os.close(err_w)
        stdout, stderr = (reader.result() for reader in readers)
    return subprocess.CompletedProcess(command, status, _text(stdout), _text(stderr))


def _subprocess(command: list[str], cwd, env, timeout, fsize) -> subprocess.CompletedProcess:
    def limit() -> None:
        import resource
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=limit if fsize is not None else None)
