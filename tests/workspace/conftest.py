import itertools
from pathlib import Path
from typing import Any

import pytest

from steerable_agent_runtime import ToolCall, workspace_tools_for_cwd

_ids = itertools.count()


class Session:
    """A workspace router plus a helper to call it like a model would."""

    def __init__(self, root: Path, **options: Any):
        self.root = root
        self.router = workspace_tools_for_cwd(root, **options)
        self.workspace = self.router.workspace

    async def __call__(self, tool_name, /, **arguments):
        return await self.router.dispatch(ToolCall(id=f"c{next(_ids)}", name=tool_name, arguments=arguments))

    async def read(self, path, **arguments):
        result = await self("read_file", path=path, **arguments)
        assert result.success, result.error
        return result.data

    def write_raw(self, path, data: bytes):
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def raw(self, path: str) -> bytes:
        return (self.root / path).read_bytes()

    def names(self, sub=".") -> list[str]:
        """The directory's entries as a user sees them: without steerable's own ``.steerable`` folder."""
        return sorted(p.name for p in (self.root / sub).iterdir() if p.name != ".steerable")

    def leftovers(self) -> list[str]:
        """Temp files anywhere and write intents still in the journal (both should be gone)."""
        temps = [p.relative_to(self.root).as_posix() for p in self.root.rglob(".steerable-*.tmp")]
        txn = self.root / ".steerable" / "txn"
        intents = [f".steerable/txn/{p.name}" for p in txn.iterdir()] if txn.exists() else []
        return sorted(temps + intents)


@pytest.fixture
def session(tmp_path, monkeypatch):
    monkeypatch.delenv("STEERABLE_REQUIRE_READ_BEFORE_WRITE", raising=False)
    root = tmp_path / "ws"
    root.mkdir()
    return Session(root)


@pytest.fixture
def make_session():
    return Session
