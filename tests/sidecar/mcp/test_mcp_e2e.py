"""End to end: ``steerable mcp --workspace DIR`` as a real subprocess, driven by the official MCP client.

The workspace is a copy of this project's own checkout (``git ls-files``), so the tools work on a
real tree of source, docs and pyproject. Each test starts one server; every await is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

import steerable_agent_runtime

TIMEOUT_S = 30

READ_TOOLS = {"read_file", "list_dir", "glob", "grep"}
WRITE_TOOLS = {"write_file", "edit_file", "apply_patch"}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@contextlib.asynccontextmanager
async def serve(ws: Path, env: dict[str, str]) -> AsyncIterator[Client]:
    """Start ``python -m steerable_sidecar mcp --workspace ws`` and connect a client to it."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "steerable_sidecar", "mcp", "--workspace", str(ws)],
        # the SDK adds HOME, PATH and the like; the STEERABLE_* knobs a test sets go through
        env={"PYTHONPATH": env["PYTHONPATH"], **{k: v for k, v in env.items() if k.startswith("STEERABLE_")}},
    )
    try:
        async with asyncio.timeout(TIMEOUT_S), Client(params) as client:
            yield client
    except BaseExceptionGroup as group:  # the client's task groups wrap a failing assert: unwrap it
        leaves = _leaves(group)
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for exc in group.exceptions:
        found.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return found


async def call(client: Client, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
    async with asyncio.timeout(TIMEOUT_S):
        return await client.call_tool(name, arguments)


def wire(result: mcp_types.CallToolResult) -> dict[str, Any]:
    """The ToolResult the server sent: structuredContent, checked against the JSON text block."""
    assert result.structured_content is not None
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, mcp_types.TextContent)
    assert json.loads(block.text) == result.structured_content
    assert result.is_error is (result.structured_content["success"] is not True)  # ENV-4
    structured: dict[str, Any] = result.structured_content
    return structured


def ok(result: mcp_types.CallToolResult) -> dict[str, Any]:
    body = wire(result)
    assert result.is_error is False, body
    assert body["success"] is True
    data: dict[str, Any] = body["data"]
    return data


def refused(result: mcp_types.CallToolResult, code: str) -> dict[str, Any]:
    """A recoverable failure: isError on the MCP side, needsFollowup on the ToolResult (ENV-7)."""
    body = wire(result)
    assert result.is_error is True, body
    assert body["success"] is False
    assert body["needsFollowup"] is True
    assert "terminal" not in body
    assert body["data"]["code"] == code, body
    return body


# -- tools/list ---------------------------------------------------------------------------------


async def test_list_tools_schemas_and_mode_annotations(
    repo_copy: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    # TIER-3 (offered list = the direct tier), MODE-2 (mode -> MCP annotations), FILE-2 (expectedVersion)
    async with serve(repo_copy, child_env()) as client:
        assert client.server_info is not None
        assert client.server_info.name == "steerable"
        assert client.server_info.version == steerable_agent_runtime.__version__
        async with asyncio.timeout(TIMEOUT_S):
            listed = await client.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == READ_TOOLS | WRITE_TOOLS | {"bash", "web_fetch"}
    assert len(listed.tools) == 9
    for tool in listed.tools:
        assert tool.description
        assert tool.input_schema["type"] == "object"
        assert tool.annotations is not None
    assert tools["read_file"].input_schema["required"] == ["path"]
    assert set(tools["read_file"].input_schema["properties"]) == {"path", "offset", "limit"}
    assert {"path", "content", "expectedVersion"} <= set(tools["write_file"].input_schema["properties"])
    assert {"path", "edits", "expectedVersion", "old_string", "new_string"} <= set(
        tools["edit_file"].input_schema["properties"]
    )
    assert tools["apply_patch"].input_schema["required"] == ["patch"]

    # Issue 15: every hint is stated (MCP's defaults for an absent one are the cautious ones), with a title.
    hints = {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
    dumped = {}
    for name, listed_tool in tools.items():
        ann = listed_tool.annotations
        assert ann is not None
        dumped[name] = ann.model_dump(by_alias=True, exclude_none=True)  # the wire spelling: camelCase
        assert set(dumped[name]) == {"title", *hints}, name
        assert listed_tool.title == dumped[name]["title"]
    assert dumped["read_file"]["title"] == "Read file" and dumped["apply_patch"]["title"] == "Apply patch"
    for name in READ_TOOLS:  # read: read-only, idempotent, closed world
        assert {k: dumped[name][k] for k in hints} == {
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        }, name
    for name in WRITE_TOOLS:  # safe_write: a bounded mutation, not read-only and not destructive
        assert {k: dumped[name][k] for k in hints} == {
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": False,
            "openWorldHint": False,
        }, name
    # a read of the open web (WEB-3)
    assert dumped["web_fetch"]["readOnlyHint"] is True and dumped["web_fetch"]["openWorldHint"] is True
    # local (a shell): may do anything on the machine, so destructive; open world only when the
    # sandbox lets its commands reach the network (STEERABLE_SANDBOX_NETWORK, off here)
    assert {k: dumped["bash"][k] for k in hints} == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": False,
    }
    # the mode itself, for a steerable that fronts this server (it reads bash back as local)
    assert tools["bash"].meta == {"steerable/mode": "local"}
    assert tools["read_file"].meta == {"steerable/mode": "read"}


async def test_bash_is_open_world_when_the_sandbox_lets_commands_reach_the_network(
    repo_copy: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    async with serve(repo_copy, child_env(STEERABLE_SANDBOX_NETWORK="1")) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    annotations = listed["bash"].annotations
    assert annotations is not None and annotations.open_world_hint is True
    assert annotations.destructive_hint is True and annotations.read_only_hint is False


# -- read_file ------------------------------------------------------------------------------------


async def test_read_real_file_version_is_sha256_and_partial_view_gate(
    repo_copy: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    # FILE-1 (version = SHA-256 of the full content), FILE-10 (partial view blocks a blind overwrite)
    path = repo_copy / "pyproject.toml"
    raw = path.read_bytes()
    text = raw.decode("utf-8")
    async with serve(repo_copy, child_env()) as client:
        data = ok(await call(client, "read_file", {"path": "pyproject.toml"}))
        assert data["path"] == "pyproject.toml"
        assert data["version"] == sha256(raw)
        assert data["content"] == text
        assert data["partial"] is False
        assert data["totalLines"] == len(text.splitlines())

        # A ranged read still reports the full file's version, and is a partial view.
        rel = "src/steerable_sidecar/cli/_main.py"
        source = (repo_copy / rel).read_bytes()
        ranged = ok(await call(client, "read_file", {"path": rel, "offset": 2, "limit": 3}))
        assert ranged["version"] == sha256(source)
        assert ranged["partial"] is True
        assert (ranged["startLine"], ranged["endLine"]) == (2, 4)
        assert ranged["content"] == "".join(source.decode("utf-8").splitlines(keepends=True)[1:4])

        # A full write_file after only a partial view is refused; the file is untouched.
        body = refused(await call(client, "write_file", {"path": rel, "content": "gone\n"}), "partial_read")
        assert rel in body["error"]
        assert (repo_copy / rel).read_bytes() == source

        # A targeted, CAS-checked edit is allowed after a partial view...
        edited = ok(
            await call(
                client,
                "edit_file",
                {"path": rel, "old_string": "import argparse\n", "new_string": "import argparse  # edited\n"},
            )
        )
        assert edited["version"] == sha256((repo_copy / rel).read_bytes())
        # ...but an edit shows only what it changed: the view stays partial, a blind overwrite
        # is still refused, and a full read is what clears the flag.
        refused(await call(client, "write_file", {"path": rel, "content": "# rewritten\n"}), "partial_read")
        full = ok(await call(client, "read_file", {"path": rel}))
        assert full["partial"] is False
        written = ok(await call(client, "write_file", {"path": rel, "content": "# rewritten\n"}))
        assert written["created"] is False
        assert (repo_copy / rel).read_bytes() == b"# rewritten\n"
        assert written["version"] == sha256(b"# rewritten\n")


# -- edit_file ------------------------------------------------------------------------------------


async def test_edit_real_file_disk_bytes_version_and_diff(
    repo_copy: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    # FILE-3 (every successful write refreshes the state), FILE-4 (CAS against the tracked state)
    path = repo_copy / "pyproject.toml"
    before = path.read_bytes()
    assert b'name = "steerable"\n' in before
    async with serve(repo_copy, child_env()) as client:
        read = ok(await call(client, "read_file", {"path": "pyproject.toml"}))
        data = ok(
            await call(
                client,
                "edit_file",
                {
                    "path": "pyproject.toml",
                    "edits": [{"oldText": 'name = "steerable"', "newText": 'name = "steerable-e2e"'}],
                    "expectedVersion": read["version"],
                },
            )
        )
        after = path.read_bytes()
        assert after == before.replace(b'name = "steerable"\n', b'name = "steerable-e2e"\n', 1)
        assert data["path"] == "pyproject.toml"
        assert data["version"] == sha256(after)
        assert data["editsApplied"] == 1
        diff = data["diff"]
        assert diff.startswith("--- a/pyproject.toml\n+++ b/pyproject.toml\n")
        assert '\n-name = "steerable"\n+name = "steerable-e2e"\n' in diff

        # The edit refreshed the tracked version: a second edit without expectedVersion passes the CAS.
        again = ok(
            await call(
                client,
                "edit_file",
                {"path": "pyproject.toml", "old_string": "steerable-e2e", "new_string": "steerable-e2e2"},
            )
        )
        final = path.read_bytes()
        assert final == before.replace(b'name = "steerable"\n', b'name = "steerable-e2e2"\n', 1)
        assert again["version"] == sha256(final)
        # The returned version is a valid expectedVersion for the next write.
        ok(
            await call(
                client,
                "write_file",
                {"path": "pyproject.toml", "content": before.decode(), "expectedVersion": again["version"]},
            )
        )
        assert path.read_bytes() == before


# -- apply_patch ----------------------------------------------------------------------------------


def _update_first_line(rel: str, text: str) -> tuple[str, str]:
    """An Update File hunk that rewrites the first line of ``text``; returns (hunk, new text)."""
    lines = text.splitlines()
    context = "".join(f" {line}\n" for line in lines[1:3])
    hunk = f"*** Update File: {rel}\n@@\n-{lines[0]}\n+{lines[0]} [patched]\n{context}"
    return hunk, text.replace(lines[0], f"{lines[0]} [patched]", 1)


async def test_apply_multi_file_patch_updates_two_real_files_and_adds_one(
    repo_copy: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    # FILE-11 (apply_patch atomic across files), FILE-3 / FILE-7 (data.versions refreshes the state)
    targets = ["pyproject.toml", "src/steerable_sidecar/__main__.py"]
    originals = {rel: (repo_copy / rel).read_bytes() for rel in targets}
    added = "docs/e2e-note.md"
    assert not (repo_copy / added).exists()
    async with serve(repo_copy, child_env()) as client:
        for rel in targets:
            ok(await call(client, "read_file", {"path": rel}))
        hunks, expected = [], {}
        for rel in targets:
            hunk, new_text = _update_first_line(rel, originals[rel].decode("utf-8"))
            hunks.append(hunk)
            expected[rel] = new_text.encode("utf-8")
        patch = (
            "*** Begin Patch\n"
            + "".join(hunks)
            + f"*** Add File: {added}\n+# Note\n+\n+Added by the MCP end-to-end test.\n"
            + "*** End Patch\n"
        )
        expected[added] = b"# Note\n\nAdded by the MCP end-to-end test.\n"

        result = await call(client, "apply_patch", {"patch": patch})
        data = ok(result)
        for rel, content in expected.items():
            assert (repo_copy / rel).read_bytes() == content, rel
        assert result.structured_content is not None
        assert result.structured_content["data"]["versions"] == {
            rel: sha256(content) for rel, content in expected.items()
        }
        assert set(data["filesChanged"]) == set(expected)
        assert data["deleted"] == []
        assert "+++ b/pyproject.toml" in data["diff"]

        # The patch refreshed the read state of every file it wrote, the added one included.
        ok(await call(client, "edit_file", {"path": added, "old_string": "# Note", "new_string": "# Notes"}))
        ok(await call(client, "write_file", {"path": targets[0], "content": originals[targets[0]].decode()}))
        assert (repo_copy / targets[0]).read_bytes() == originals[targets[0]]

        # Atomic: a patch whose second operation fails writes nothing, not even its first.
        other = "src/steerable_sidecar/cli/_session.py"
        before_other = (repo_copy / other).read_bytes()
        bad = (
            "*** Begin Patch\n"
            f"*** Add File: docs/never.md\n+never\n"
            f"*** Update File: {other}\n@@\n-this line is not in the file\n+x\n"
            "*** End Patch\n"
        )
        refused(await call(client, "apply_patch", {"patch": bad}), "not_read")
        assert not (repo_copy / "docs/never.md").exists()
        assert (repo_copy / other).read_bytes() == before_other


# -- conflicts ------------------------------------------------------------------------------------


async def test_outside_change_is_a_conflict_and_a_touch_is_not(
    repo_copy: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    # FILE-4 (outside change = conflict), FILE-9 (content hash: touch ok, same-mtime change caught), FILE-2
    path = repo_copy / "src/steerable_sidecar/cli/_parser.py"
    rel = "src/steerable_sidecar/cli/_parser.py"
    original = path.read_bytes()
    for anchor in (b"import argparse\n", b"import sys\n", b'prog="steerable"'):
        assert original.count(anchor) == 1, anchor  # the real file's anchors this test edits
    async with serve(repo_copy, child_env()) as client:
        read = ok(await call(client, "read_file", {"path": rel}))
        assert read["version"] == sha256(original)

        # A touch (new mtime, same bytes) is not a conflict.
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
        edited = ok(
            await call(
                client,
                "edit_file",
                {"path": rel, "old_string": "import argparse\n", "new_string": "import argparse  # e2e\n"},
            )
        )
        assert edited["version"] == sha256(path.read_bytes())

        # Another process changes the content, keeping the mtime: the edit is refused, file untouched.
        st = path.stat()
        outside = path.read_bytes().replace(b'prog="steerable"', b'prog="steerable-outside"', 1)
        assert outside != path.read_bytes()
        path.write_bytes(outside)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert path.stat().st_mtime_ns == st.st_mtime_ns
        result = await call(
            client,
            "edit_file",
            {"path": rel, "old_string": "import sys\n", "new_string": "import sys  # e2e\n"},
        )
        body = refused(result, "conflict")
        assert result.structured_content is not None
        assert result.structured_content["data"]["code"] == "conflict"
        assert body["data"]["expectedVersion"] == edited["version"]
        assert "currentVersion" not in body["data"]  # never handed out: it would open the gate
        assert "modified outside this session" in body["error"]
        assert "read it again" in body["error"]
        assert path.read_bytes() == outside

        # An explicit stale expectedVersion is a conflict too, and write_file is gated the same way.
        stale = await call(
            client, "write_file", {"path": rel, "content": "x\n", "expectedVersion": read["version"]}
        )
        refused(stale, "conflict")
        assert path.read_bytes() == outside

        # Recovery within the session: read again, then the edit goes through.
        ok(await call(client, "read_file", {"path": rel}))
        ok(
            await call(
                client,
                "edit_file",
                {"path": rel, "old_string": "import sys\n", "new_string": "import sys  # e2e\n"},
            )
        )
        assert b"import sys  # e2e\n" in path.read_bytes()
        assert b'prog="steerable-outside"' in path.read_bytes()


# -- read-before-write gate ----------------------------------------------------------------------


async def test_write_to_unread_file_is_gated_new_files_are_not(
    repo_copy: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    # FILE-8 (hard gate naming the fix), FILE-5 (new or vanished files: plain create), FILE-6 (per process)
    # ENV-4 / ENV-7 (a failure with needsFollowup, isError on the MCP side)
    readme = repo_copy / "README.md"
    original = readme.read_bytes()
    async with serve(repo_copy, child_env()) as client:
        result = await call(client, "write_file", {"path": "README.md", "content": "# overwritten\n"})
        assert result.is_error is True
        assert result.structured_content is not None
        assert result.structured_content["needsFollowup"] is True
        block = result.content[0]
        assert isinstance(block, mcp_types.TextContent)
        assert json.loads(block.text)["needsFollowup"] is True
        body = refused(result, "not_read")
        assert "read it first" in body["error"]
        assert body["data"]["path"] == "README.md"
        assert readme.read_bytes() == original

        # edit_file is gated the same way.
        refused(
            await call(client, "edit_file", {"path": "README.md", "old_string": "#", "new_string": "##"}),
            "not_read",
        )
        assert readme.read_bytes() == original

        # A brand-new file is never gated.
        created = ok(await call(client, "write_file", {"path": "notes/new.txt", "content": "hello\n"}))
        assert created == {
            "path": "notes/new.txt",
            "version": sha256(b"hello\n"),
            "created": True,
            "bytes": 6,
            "lines": 1,
        }  # a summary: the content is not echoed back (issue 31)
        assert (repo_copy / "notes/new.txt").read_bytes() == b"hello\n"

        # A file that vanished since the read is a plain create.
        ok(await call(client, "read_file", {"path": "pyproject.toml"}))
        (repo_copy / "pyproject.toml").unlink()
        recreated = ok(await call(client, "write_file", {"path": "pyproject.toml", "content": "[project]\n"}))
        assert recreated["created"] is True
        assert (repo_copy / "pyproject.toml").read_bytes() == b"[project]\n"

        # The read state belongs to the server process: a second server never saw README.md read.
        ok(await call(client, "read_file", {"path": "README.md"}))
        async with serve(repo_copy, child_env()) as second:
            refused(await call(second, "write_file", {"path": "README.md", "content": "# no\n"}), "not_read")
        assert readme.read_bytes() == original
        ok(await call(client, "write_file", {"path": "README.md", "content": "# yes\n"}))
        assert readme.read_bytes() == b"# yes\n"


# -- bad calls ------------------------------------------------------------------------------------


async def test_unknown_tool_bad_arguments_and_escapes_are_followups(
    repo_copy: Path, child_env: Callable[..., dict[str, str]]
) -> None:
    # ENV-7 (failures with needsFollowup re-prompt), TIER-2 (dispatch by name), FILE-11 (confinement)
    async with serve(repo_copy, child_env()) as client:
        # Issue 15: a name that is no tool is JSON-RPC -32602 (MCP 2025-06-18, tools: error
        # handling), and its message keeps the router's suggestions
        with pytest.raises(MCPError) as unknown:
            await call(client, "reed_file", {"path": "README.md"})
        assert unknown.value.error.code == -32602
        assert "Unknown tool 'reed_file'" in unknown.value.error.message
        assert "Did you mean: read_file" in unknown.value.error.message
        assert "read_file" in unknown.value.error.data["suggestions"]

        with pytest.raises(MCPError) as nothing_close:
            await call(client, "zzz_qqq", {})
        assert nothing_close.value.error.code == -32602
        assert nothing_close.value.error.data == {"code": "unknown_tool", "suggestions": []}

        # a known name that is off here (run_code without STEERABLE_RUN_CODE=1) stays a tool
        # result: the model reads why and carries on
        off = refused(await call(client, "run_code", {"code": "print(1)"}), "tool_unavailable")
        assert "STEERABLE_RUN_CODE=1" in off["error"]

        invalid = refused(await call(client, "read_file", {}), "invalid_arguments")
        assert invalid["data"]["errors"] == [{"field": "path", "message": "Field required"}]
        assert "Fix these fields and call read_file again" in invalid["error"]

        escape = refused(
            await call(client, "read_file", {"path": "../outside.txt"}), "path_outside_workspace"
        )
        assert "outside the workspace" in escape["error"]

        missing = refused(await call(client, "read_file", {"path": "no/such/file.py"}), "file_not_found")
        assert missing["data"]["path"] == "no/such/file.py"

        # The server keeps serving after failures.
        found = ok(await call(client, "grep", {"pattern": "def main", "path": "src/steerable_sidecar"}))
        assert any(m["path"] == "src/steerable_sidecar/cli/_main.py" for m in found["matches"])


# -- file names that are not UTF-8 ----------------------------------------------------------------


async def test_non_utf8_file_name_does_not_kill_the_server(
    repo_copy: Path, child_env: Callable[..., dict[str, str]], latin1_named_file: Path
) -> None:
    # latin1_named_file puts docs/caf\xe9.txt in the workspace copy
    # FILE-11 (real trees: a Latin-1 file name is legal on Linux), ENV-7 (the server keeps serving)
    async with serve(repo_copy, child_env()) as client:
        # A healthy server answers in milliseconds; a short bound keeps a hang from costing 30 s.
        try:
            async with asyncio.timeout(5):
                listed = await client.call_tool("list_dir", {"path": "docs"})
        except TimeoutError:
            pytest.fail("list_dir on a directory holding a non-UTF-8 file name got no answer")
        body = wire(listed)
        if body["success"]:
            assert body["data"]["path"] == "docs"
        else:
            assert body["needsFollowup"] is True
        # The server is still alive and serving.
        ok(await call(client, "read_file", {"path": "README.md"}))


def test_a_fronted_steerable_bash_stays_local_when_its_hints_say_closed_world() -> None:
    """MODE-4: destructive + closed world reads back as ``destructive`` (runs unasked); the mode in
    ``_meta`` keeps a fronted steerable's bash ``local``. Only ``local`` is taken from there."""
    from steerable_agent_runtime import ToolMode
    from steerable_sidecar.mcp_sources._tools import build_tool

    async def handler(**_: Any) -> str:
        return ""

    hints = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}
    schema = {"type": "object", "properties": {"command": {"type": "string"}}}

    def mode_of(meta: Any) -> ToolMode:
        definition = {"name": "bash", "inputSchema": schema, "annotations": hints, "_meta": meta}
        return build_tool("peer", definition, handler, exposure="deferred", timeout_ms=None).mode

    assert mode_of({"steerable/mode": "local"}) is ToolMode.LOCAL
    assert mode_of(None) is ToolMode.DESTRUCTIVE
    assert mode_of({"steerable/mode": "read"}) is ToolMode.DESTRUCTIVE  # never loosened
