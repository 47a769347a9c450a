"""The output relay of a ``bash`` command in the container posture (``STEERABLE_SANDBOX=container``).

``python -I -S _relay.py LOG NAME=TOKEN -- command...``, standard library only. The relay
forks a drainer into a session of its own, then the command (in the relay's process group, so a
timeout still kills it and its background jobs; ``NAME=TOKEN`` added to the environment the relay
was started with, which marks every process it starts), and exits with the command's status
(``128 + n`` when signal ``n`` killed it).

The command's stdout and stderr are pipes to the drainer, which passes them on to the relay's own
(the runner's pipes) until the relay exits; then it passes on what is already there (for at most
:data:`DRAIN_S`), closes the runner's pipes, so the call returns although a background process
still holds the command's, and from then on appends what those processes print to ``LOG`` (at
most :data:`LOG_MAX_BYTES`; the older part is moved to ``LOG.1``) until the last of them closes
its end. A server started with ``&`` never writes to a closed pipe, during the run or after it.
"""

from __future__ import annotations

import os
import select
import sys
import time

__all__ = ["DRAIN_S", "LOG_MAX_BYTES", "main"]

LOG_MAX_BYTES = 4 * 1024 * 1024
"""Bytes a leftover process's output may take in ``LOG`` before the older part moves to ``LOG.1``."""
DRAIN_S = 0.2
"""How long the output already written is passed on once the command ended."""
_CHUNK = 65536


class _Log:
    """``LOG``, opened at the first write; writing stops quietly when it cannot be written."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd: int | None = None
        self.size = 0
        self.failed = False

    def write(self, chunk: bytes) -> None:
        if self.failed:
            return
        try:
            if self.fd is not None and self.size and self.size + len(chunk) > LOG_MAX_BYTES:
                os.close(self.fd)
                self.fd = None
                os.replace(self.path, self.path + ".1")
            if self.fd is None:
                flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
                self.fd = os.open(self.path, flags, 0o600)
                self.size = os.fstat(self.fd).st_size
            _write_all(self.fd, chunk)
            self.size += len(chunk)
        except OSError:
            self.failed = True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _environment() -> dict[bytes, bytes]:
    """The environment the relay was started with: Python itself may add ``LC_CTYPE`` (PEP 538)."""
    try:
        with open("/proc/self/environ", "rb") as fh:
            raw = fh.read()
    except OSError:
        return dict(os.environb)
    env: dict[bytes, bytes] = {}
    for entry in raw.split(b"\0"):
        name, eq, value = entry.partition(b"=")
        if eq and name:
            env[name] = value
    return env


class _Drainer:
    """Passes the command's output on until the relay ends, then to the log until every writer is gone."""

    def __init__(self, out_r: int, err_r: int, ended_r: int, log: _Log) -> None:
        self.sinks = {out_r: 1, err_r: 2}
        self.ended_r = ended_r
        self.log = log
        self.passing = True
        self.poller = select.poll()
        for fd in (out_r, err_r, ended_r):
            self.poller.register(fd, select.POLLIN)

    def run(self) -> None:
        while self.sinks:
            for fd, _ in self.poller.poll():
                if fd == self.ended_r:
                    self.hand_over()
                elif fd in self.sinks:
                    self.take(fd)

    def take(self, fd: int) -> bool:
        """Read one chunk of ``fd`` and send it where output goes now; ``False`` at its end."""
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            return False
        if not chunk:
            self.poller.unregister(fd)
            os.close(fd)
            del self.sinks[fd]
            return False
        if self.passing:
            try:
                _write_all(self.sinks[fd], chunk)
                return True
            except OSError:  # the caller is gone: what follows goes to the log
                self.passing = False
        self.log.write(chunk)
        return True

    def hand_over(self) -> None:
        """The relay exited: pass on what is there already, then close the runner's pipes."""
        self.poller.unregister(self.ended_r)
        os.close(self.ended_r)
        self.ended_r = -1  # its number may be the log's next
        deadline = time.monotonic() + DRAIN_S
        for fd in list(self.sinks):
            os.set_blocking(fd, False)
            while self.passing and fd in self.sinks and time.monotonic() < deadline and self.take(fd):
                pass
        self.passing = False
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)  # the runner's readers see the end: the call returns
        os.dup2(null, 2)
        os.close(null)


def main(args: list[str]) -> int:
    """Run ``args`` (``LOG NAME=TOKEN -- command...``) as the module docstring says."""
    log, mark, command = args[0], args[1], args[3:]
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    ended_r, ended_w = os.pipe()  # the relay holds the write end until it exits
    if os.fork() == 0:
        try:
            os.setsid()  # out of the process group a timeout kills
            for fd in (out_w, err_w, ended_w):
                os.close(fd)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
            os.chdir("/")
            _Drainer(out_r, err_r, ended_r, _Log(log)).run()
        finally:
            os._exit(0)
    for fd in (out_r, err_r, ended_r):
        os.close(fd)
    env = _environment()
    name, _, token = mark.partition("=")
    env[os.fsencode(name)] = os.fsencode(token)
    pid = os.fork()
    if pid == 0:
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        try:
            os.execvpe(command[0], command, env)
        except OSError as exc:
            os.write(2, f"steerable: {command[0]}: {exc.strerror}\n".encode(errors="replace"))
            os._exit(127 if isinstance(exc, FileNotFoundError) else 126)
    os.close(out_w)
    os.close(err_w)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # the runner's pipes are the drainer's alone
    os.dup2(null, 2)
    os.close(null)
    _, status = os.waitpid(pid, 0)
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
