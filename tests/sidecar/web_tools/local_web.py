"""A real ``steerable`` command whose ``web_fetch`` reaches local servers, through the injected seams.

``python -P -m web_tools.local_web SEAMS.json ARGS...`` (``tests/sidecar`` on ``PYTHONPATH``) runs
``steerable ARGS...`` (``sidecar``, ``run``, ``acp``, ``mcp``: the real entry point, its real wire)
with every ``install_web_tools`` given the two seams tests inject in-process (docs/web-tools.md,
"In a program"): a resolver answering from ``SEAMS["hosts"]`` that appends each name it looks up
to the file ``SEAMS["lookups"]`` (so a test counts DNS lookups), and a :class:`PinRecorder`
sending a request pinned to ``"address:port"`` to ``127.0.0.1:SEAMS["routes"][...]``. The URL
checks, the domain policy, the SSRF check, the pinned connection and the consent gate are the code
a deployment runs; nothing reaches the internet. :func:`local_installer` is the same for a test
that serves a command in its own process.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from steerable_sidecar import web_tools
from steerable_sidecar.web_tools import WebTools

from .web_servers import PinRecorder, ScriptedResolver


class Seams(TypedDict):
    """What the launched command's network is: names, where pinned addresses go, the lookup log."""

    hosts: Mapping[str, Sequence[str]]
    routes: Mapping[str, int]
    lookups: str


def write_seams(path: Path, seams: Seams) -> Path:
    """``seams`` as the launcher reads them."""
    path.write_text(json.dumps(seams), encoding="utf-8")
    return path


def lookups(seams: Seams) -> list[str]:
    """The names the command looked up, in order (``[]`` when none)."""
    log = Path(seams["lookups"])
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def local_installer(seams: Seams, install: Callable[..., WebTools]) -> Callable[..., WebTools]:
    """``install`` (``install_web_tools``) with the seams' resolver and a transport of its own."""
    table = ScriptedResolver(seams["hosts"])
    log = Path(seams["lookups"])

    async def resolver(host: str, port: int) -> list[str]:
        with log.open("a", encoding="utf-8") as out:
            out.write(host + "\n")
        return await table(host, port)

    def installer(*args: Any, **kwargs: Any) -> WebTools:
        # a transport per install: closing one session's web tools closes its transport
        return functools.partial(install, resolver=resolver, transport=PinRecorder(seams["routes"]))(
            *args, **kwargs
        )

    return installer


def main(argv: Sequence[str]) -> int:
    seams: Seams = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    setattr(web_tools, "install_web_tools", local_installer(seams, web_tools.install_web_tools))  # noqa: B010
    from steerable_sidecar.cli._main import main as steerable

    return steerable(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
