"""Run a command with our standard input passed to it and copied, line by line, to a log file.

``python tee_stdin.py LOG COMMAND...``: each line read from stdin is written to COMMAND's stdin,
then appended to LOG: once a line is in LOG, the command has it. COMMAND's stdout and stderr are
ours; at the end of input its stdin is closed, and its exit status is ours. A test starts an MCP
server this way to wait for a request to reach the server (not for a fixed time).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys


def main(log: str, command: list[str]) -> int:
    child = subprocess.Popen(command, stdin=subprocess.PIPE)
    assert child.stdin is not None
    with open(log, "ab", buffering=0) as copy:
        for line in sys.stdin.buffer:
            try:
                child.stdin.write(line)
                child.stdin.flush()
            except BrokenPipeError:  # the command left: so do we
                break
            copy.write(line)
    with contextlib.suppress(BrokenPipeError):
        child.stdin.close()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
