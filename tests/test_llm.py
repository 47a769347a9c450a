"""The model seam (llm.py): the scripted provider."""

from __future__ import annotations

import pytest

from steerable_agent_runtime.errors import UserError
from steerable_agent_runtime.llm import ScriptedProvider


def test_invalid_scripted_usage_is_refused_when_the_provider_is_built() -> None:
    with pytest.raises(UserError) as caught:
        ScriptedProvider(["fine", {"text": "x", "usage": "lots"}])
    assert str(caught.value) == 'scripted turn 2, usage: "lots" is not an object'
