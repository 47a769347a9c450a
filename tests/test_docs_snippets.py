"""Every fenced block in README.md and docs/*.md runs, or parses, as it is written.

The rule is in docs/development.md ("Docs snippets"): ``python`` blocks run as programs, ``bash``
blocks as scripts, ``console`` blocks command by command (exit status and the output lines
shown); ``json``, ``jsonl`` and ``toml`` blocks parse; ``text`` blocks are prose. An HTML comment
right above a fence (``<!-- docs-test: skip (why) -->``, ``exit N``, ``pytest``, ``run_code``)
changes that. One test per block, named ``FILE.md:LINE``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COPIED = ("README.md", "pyproject.toml")  # the examples read these, as they would in a checkout
TIMEOUT_S = 60
LANGS = {"python", "bash", "console", "json", "jsonl", "toml", "text", "ts"}
"""``ts`` blocks are compiled and run by the TypeScript package's own suite (js/test/readme.test.ts)."""
_FENCE = re.compile(r"^```(\S*)\s*$")
_DIRECTIVE = re.compile(r"^<!-- docs-test: (.*?) -->\s*$")
_SKIP = re.compile(r"^skip \((.+)\)$")
_EXIT = re.compile(r"^exit (\d+)$")
_MODES = {"pytest": {"python"}, "run_code": {"python"}}


@dataclass(frozen=True)
class Snippet:
    """One fenced block: where it is, its language tag, its text and the directive above it."""

    path: Path
    line: int  # the opening fence, 1-based
    lang: str
    code: str
    directive: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def _snippets() -> list[Snippet]:
    found = []
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            fence = _FENCE.match(lines[i])
            if fence is None:
                i += 1
                continue
            end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == "```"), None)
            assert end is not None, f"{path.relative_to(ROOT)}:{i + 1}: the fence is never closed"
            above = _DIRECTIVE.match(lines[i - 1]) if i else None
            code = "\n".join(lines[i + 1 : end]) + "\n"
            found.append(Snippet(path, i + 1, fence.group(1), code, above.group(1) if above else None))
            i = end + 1
    return found


SNIPPETS = _snippets()
RUNNABLE = [s for s in SNIPPETS if s.lang in LANGS - {"text", "ts"} and not _SKIP.match(s.directive or "")]
NOT_RUN = [s for s in SNIPPETS if _SKIP.match(s.directive or "")]
"""Blocks that cannot run in a test (a model endpoint, an install, the internet): not tests, so
the suite reports no skips for them; each names its reason, checked below."""


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("STEERABLE_") or k == "STEERABLE_CROSS_PROCESS_LOCK"
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["XDG_STATE_HOME"] = str(tmp_path / ".state")  # the sidecar's session records stay in tmp_path
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    for name in COPIED:
        shutil.copyfile(ROOT / name, work / name)
    return work


def _run(argv: list[str], cwd: Path, env: dict[str, str], where: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"{where}: still running after {TIMEOUT_S} s\nstdout: {exc.stdout!r}\nstderr: {exc.stderr!r}"
        )


def _squeeze(line: str) -> str:
    return " ".join(line.split())  # column widths depend on the installed plugins' names


def _line_pattern(expected: str) -> re.Pattern[str]:
    """``...`` stands for any text, ``<placeholder>`` for any value; the rest is literal."""
    parts = re.split(r"(\.\.\.|<[^<>]+>)", _squeeze(expected))
    return re.compile("".join(".*" if p == "..." or p.startswith("<") else re.escape(p) for p in parts))


def _check_output(expected: list[str], printed: str, where: str) -> None:
    """Every expected line (but a bare ``...``) matches a printed line, in order."""
    lines = iter(_squeeze(line) for line in printed.splitlines())
    for want in expected:
        if want.strip() in ("", "..."):
            continue
        pattern = _line_pattern(want)
        if not any(pattern.fullmatch(line) for line in lines):
            pytest.fail(f"{where}: no printed line matches {want.strip()!r} (in order); printed:\n{printed}")


def _console_commands(code: str) -> list[tuple[str, list[str]]]:
    """``[(command, expected output lines)]``: ``$ `` lines with their ``\\`` continuations."""
    commands: list[tuple[str, list[str]]] = []
    lines = code.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.startswith("$ "):
            assert commands, f"output before the first command: {line!r}"
            commands[-1][1].append(line)
            continue
        command = [line[2:]]
        while command[-1].endswith("\\") and i < len(lines):
            command.append(lines[i])
            i += 1
        commands.append(("\n".join(command), []))
    return commands


def _expected_exit(snippet: Snippet) -> int:
    match = _EXIT.match(snippet.directive or "")
    return int(match.group(1)) if match else 0


_RUN_CODE = """\
import asyncio, json, sys
from steerable_agent_runtime import workspace_tools_for_cwd
from steerable_sidecar.run_code._tool import run_code_tool

async def main():
    router = workspace_tools_for_cwd(".")
    router.register(run_code_tool(".", router=router))
    code = open(sys.argv[1], encoding="utf-8").read()
    arguments = {"code": code, "description": "the docs snippet"}
    result = await router.dispatch({"id": "c1", "name": "run_code", "arguments": arguments})
    print(json.dumps(result.to_wire()))
    sys.exit(0 if result.success else 1)

asyncio.run(main())
"""


def _run_python(snippet: Snippet, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    if snippet.directive == "pytest":
        (work / "test_snippet.py").write_text(snippet.code, encoding="utf-8")
        env["PYTHONPATH"] = str(ROOT / "tests")  # conftest (the fixtures) and fake_openai
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider"]
        argv += ["-o", "asyncio_mode=auto", "-W", "error", "--rootdir", str(work), "test_snippet.py"]
        return _run(argv, work, env, snippet.where)
    if snippet.directive == "run_code":
        (work / "body.py").write_text(snippet.code, encoding="utf-8")
        (work.parent / "run_body.py").write_text(_RUN_CODE, encoding="utf-8")
        return _run([sys.executable, str(work.parent / "run_body.py"), "body.py"], work, env, snippet.where)
    (work.parent / "snippet.py").write_text(snippet.code, encoding="utf-8")
    return _run([sys.executable, str(work.parent / "snippet.py")], work, env, snippet.where)


def test_every_fence_has_a_known_language_and_directive():
    assert len(SNIPPETS) > 50  # the parser found the blocks
    for s in SNIPPETS:
        assert s.lang in LANGS, f"{s.where}: fence language {s.lang!r} is not one of {sorted(LANGS)}"
        if s.directive is None:
            continue
        known = _SKIP.match(s.directive) or _EXIT.match(s.directive) or s.directive in _MODES
        assert known, f"{s.where}: unknown directive {s.directive!r} (a skip needs a reason: skip (why))"
        if s.directive in _MODES:
            assert s.lang in _MODES[s.directive], f"{s.where}: {s.directive} is for python blocks"
        if _EXIT.match(s.directive):
            assert s.lang in ("bash", "console"), f"{s.where}: exit N is for bash and console blocks"


def test_the_blocks_that_do_not_run_are_few_and_say_why():
    reasons = {}
    for snippet in NOT_RUN:
        match = _SKIP.match(snippet.directive or "")
        assert match is not None
        reasons[snippet.where] = match.group(1)
    assert all(len(reason) > 10 for reason in reasons.values()), reasons
    assert len(NOT_RUN) <= 10, f"{len(NOT_RUN)} blocks are not run: {reasons}"
    assert all(s.lang in ("bash", "console") for s in NOT_RUN), "a python or json block always runs or parses"


@pytest.mark.parametrize("snippet", RUNNABLE, ids=[s.where for s in RUNNABLE])
def test_snippet(snippet: Snippet, tmp_path: Path) -> None:
    where = snippet.where
    if snippet.lang in ("json", "jsonl", "toml"):
        parse = tomllib.loads if snippet.lang == "toml" else json.loads
        texts = snippet.code.splitlines() if snippet.lang == "jsonl" else [snippet.code]
        for text in filter(str.strip, texts):
            try:
                parse(text)
            except ValueError as exc:  # JSONDecodeError and TOMLDecodeError both are
                pytest.fail(f"{where}: not {snippet.lang}: {exc}")
        return
    work, env = _workdir(tmp_path), _env(tmp_path)
    if snippet.lang == "python":
        run = _run_python(snippet, work, env)
        assert run.returncode == 0, f"{where}: exit {run.returncode}\n{run.stdout}\n{run.stderr}"
        claims = re.findall(r"\s# -> (.*)$", snippet.code, re.M)  # what that line prints
        _check_output(claims, run.stdout, where)
        return
    if snippet.lang == "bash":
        run = _run(["bash", "-e", "-c", snippet.code], work, env, where)
        assert run.returncode == _expected_exit(snippet), f"{where}: exit {run.returncode}\n{run.stderr}"
        return
    assert snippet.lang == "console"
    for command, expected in _console_commands(snippet.code):
        run = _run(["bash", "-c", command], work, env, where)
        assert run.returncode == _expected_exit(snippet), (
            f"{where}: `{command}` exited {run.returncode}\n{run.stdout}\n{run.stderr}"
        )
        _check_output(expected, run.stdout, f"{where}: `{command}`")
