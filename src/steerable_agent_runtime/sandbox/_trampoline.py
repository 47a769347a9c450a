"""What an editor's terminal runs for ``bash``: ``python -I -S _trampoline.py RUN_DIR`` (pinned bytecode).

Standard library only, run outside the sandbox by whoever started it (an ACP client's
``terminal/create``), so its command line holds nothing but steerable's interpreter, this file and
a private directory: the sandbox's own start (the launcher's words, the environment, the folder)
is in ``RUN_DIR/plan.json``, which steerable wrote and which nothing a sandboxed command can write.
In order: claim the plan (rename it: a plan steerable withdrew, or one run already, is refused with
exit 125), fork the launcher in a session of its own (no controlling terminal, stdin
``/dev/null``, the plan's environment only, nothing else inherited), write ``pid`` (this process
and the launcher), then pass the command's stdout and stderr on to the terminal as they come
while keeping what ``bash``'s result keeps (the head and tail of each, ``cap`` bytes), and when
it has ended write ``stdout.head`` ... ``status.json`` and exit with its status. ``SIGTERM``,
``SIGINT`` (Ctrl-C in the terminal) and ``SIGHUP`` are passed on to the launcher as ``SIGTERM``,
which stops the command and everything it started. A terminal that stops reading never holds the
command up: what it cannot take at once is not shown there (the result still has it).
"""

from __future__ import annotations

import json
import os
import select
import signal
import stat
import sys
import time

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: no typing import at run time (start-up cost)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["main"]

_DRAIN_GRACE_S = 2.0  # after the launcher exits, how long its output pipes may stay open
_READ = 65536


class _Kept:
    """The first and last halves of ``cap`` bytes of a stream, and its total (the runner's ``Clip``)."""

    def __init__(self, cap: int) -> None:
        self.head_cap = cap - cap // 2
        self.tail_cap = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_cap:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_cap:
                del self.tail[: len(self.tail) - self.tail_cap]

    def write(self, run: str, name: str) -> None:
        with open(os.path.join(run, name + ".head"), "wb") as fh:
            fh.write(self.head)
        with open(os.path.join(run, name + ".tail"), "wb") as fh:
            fh.write(self.tail[-self.tail_cap :] if self.tail_cap else b"")


def _start(plan: dict[str, Any], out_w: int, err_w: int) -> None:
    """In the forked child: a session of its own, stdin ``/dev/null``, then the launcher (never returns)."""
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.closerange(3, 65536)
        argv = [str(word) for word in plan["argv"]]
        env = {str(k): str(v) for k, v in plan["env"].items()}
        os.chdir(str(plan["cwd"]))
        os.execve(argv[0], argv, env)
    except BaseException as exc:  # the child must never return into the relay
        os.write(2, f"steerable-sandbox: setup failed, not running the command: {exc}\n".encode())
        os._exit(125)


def _show(fd: int, chunk: bytes, state: dict[int, bool]) -> None:
    """Pass ``chunk`` on to the terminal when it takes it at once; a gone terminal is left alone."""
    if not state.get(fd, True):
        return
    try:
        os.write(fd, chunk)
    except BlockingIOError:  # the terminal is not reading: this part is not shown there
        pass
    except OSError:
        state[fd] = False


def _claim(run: str) -> dict[str, Any] | None:
    """The plan, taken so nobody else can run it; ``None`` when it is gone (withdrawn, or run)."""
    try:  # steerable's own private folder: not a symlink, this user's, nobody else's to write
        info = os.lstat(run)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None  # gone and made again by someone else: whatever plan it holds is not ours
    claimed = os.path.join(run, "claimed.json")
    try:
        os.rename(os.path.join(run, "plan.json"), claimed)
    except OSError:
        return None
    with open(claimed, "rb") as fh:
        plan: dict[str, Any] = json.loads(fh.read())
    os.unlink(claimed)
    return plan


def _write(run: str, name: str, text: str) -> None:
    """``RUN_DIR/name`` holding ``text``, whole or not at all (written aside, then renamed)."""
    with open(os.path.join(run, name + ".tmp"), "w", encoding="utf-8") as fh:
        fh.write(text)
    os.rename(os.path.join(run, name + ".tmp"), os.path.join(run, name))


def _relay(child: int, streams: dict[int, tuple[_Kept, int]], reaped: list[bool]) -> int:
    """Pass the launcher's output on while keeping it; its wait status once it ended."""
    shown: dict[int, bool] = {}
    for fd in (1, 2):
        try:
            os.set_blocking(fd, False)
        except OSError:
            shown[fd] = False
    open_fds = list(streams)
    status: int | None = None
    ended = 0.0
    while open_fds:
        if status is None:
            done, code = os.waitpid(child, os.WNOHANG)
            if done:
                status, ended, reaped[0] = code, time.monotonic(), True
        elif time.monotonic() - ended > _DRAIN_GRACE_S:  # a process outside our reach holds a pipe
            break
        ready, _, _ = select.select(open_fds, [], [], 0.1)
        for fd in ready:
            chunk = os.read(fd, _READ)
            if not chunk:
                open_fds.remove(fd)
                continue
            kept, terminal = streams[fd]
            kept.feed(chunk)
            _show(terminal, chunk, shown)
    if status is None:
        _, status = os.waitpid(child, 0)
        reaped[0] = True
    return status


def main(argv: list[str]) -> int:
    run = argv[1]
    plan = _claim(run)
    if plan is None:
        sys.stderr.write("steerable-sandbox: this command was withdrawn (or already ran); nothing was run\n")
        return 125
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    child = os.fork()
    if child == 0:
        _start(plan, out_w, err_w)
    os.close(out_w)
    os.close(err_w)
    _write(run, "pid", f"{os.getpid()} {child}\n")
    reaped = [False]  # once reaped, the pid may be another process's

    def stop(signum: int, frame: object) -> None:
        if not reaped[0]:
            try:
                os.kill(child, signal.SIGTERM)
            except OSError:
                pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop)
    cap = int(plan["cap"])
    out, err = _Kept(cap), _Kept(cap)
    code = os.waitstatus_to_exitcode(_relay(child, {out_r: (out, 1), err_r: (err, 2)}, reaped))
    code = 128 - code if code < 0 else code
    out.write(run, "stdout")
    err.write(run, "stderr")
    _write(run, "status.json", json.dumps({"exit": code, "stdout": out.total, "stderr": err.total}))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
