"""Fixtures for every test: ``workspace`` (an empty directory) and ``fake_openai`` (``tests/fake_openai.py``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from fake_openai import FakeOpenAI


@pytest.fixture(scope="session", autouse=True)
def _own_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep what tests make steerable record (sessions, protected entries) out of the user's state folder."""
    if os.environ.get("STEERABLE_STATE_DIR"):
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STEERABLE_STATE_DIR", str(tmp_path_factory.mktemp("state")))
        yield


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty directory to work in, ``tmp_path / "ws"`` (tests/sidecar/conftest.py seeds a file)."""
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture(scope="session")
def _fake_openai_server() -> Iterator[FakeOpenAI]:
    # One server per session: uvicorn's shutdown alone takes 0.1-0.2 s, too slow to pay per test.
    from fake_openai import FakeOpenAI  # starlette and uvicorn load only when a test asks

    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def fake_openai(_fake_openai_server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """The fake server with an empty script and request log; ``.script([...])`` queues turns."""
    _fake_openai_server.reset()
    yield _fake_openai_server
    _fake_openai_server.reset()


_WEB_ENV_NAMES = {"TAVILY_API_KEY"} | {f"{v}_PROXY" for v in ("HTTP", "HTTPS", "ALL", "NO")}


@pytest.fixture(autouse=True)
def _no_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see steerable as a fresh install does, whatever the developer's shell exports.

    Every ``STEERABLE_*`` variable is unset but the state directory this session's fixture chose
    (``STEERABLE_RUN_CODE=1`` or ``STEERABLE_LOG_LEVEL=DEBUG`` exported must not change a test),
    no configuration file is read (``STEERABLE_CONFIG=off``), and the web tools have no search key,
    no proxy and their default bounds. A test that wants a setting sets it.
    """
    for name in list(os.environ):
        if (
            name.startswith("STEERABLE_") and name != "STEERABLE_STATE_DIR"
        ) or name.upper() in _WEB_ENV_NAMES:
            monkeypatch.delenv(name)
    monkeypatch.setenv("STEERABLE_CONFIG", "off")
