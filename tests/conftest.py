"""The ``fake_openai`` fixture: a local OpenAI-compatible server (see ``tests/fake_openai.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from fake_openai import FakeOpenAI


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
