"""How an agent run ends (:class:`RunOutcome`) and its default round limit, without the loop.

Both are public in :mod:`steerable_agent_runtime.loop`; they live here so that what only needs the
names (the ``steerable run`` parser and its exit-code table, read by every ``steerable`` command)
does not import the loop, the tools and pydantic.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["DEFAULT_MAX_ROUNDS", "RunOutcome"]

DEFAULT_MAX_ROUNDS = 50
"""Model calls per run before the loop stops with ``max_rounds``."""


class RunOutcome(StrEnum):
    """How a run ended."""

    __module__ = "steerable_agent_runtime.loop"  # its public home (repr, pickling, docs)

    COMPLETED = "completed"
    """The model answered without calling a tool."""
    TERMINAL = "terminal"
    """A tool result was terminal (``is_terminal_result``)."""
    MAX_ROUNDS = "max_rounds"
    """The round limit was reached while the model still called tools."""
    CANCELLED = "cancelled"
    """:meth:`AgentLoop.cancel` was called."""
    ERROR = "error"
    """The provider failed (:class:`~steerable_agent_runtime.errors.ProviderError`)."""
    INCOMPLETE = "incomplete"
    """The model's answer was cut off (``finish_reason: length``) or withheld by a content filter
    (``content_filter``, GLM's ``sensitive``): not a finished task (see
    :mod:`steerable_agent_runtime.finish`)."""
    EMPTY_ANSWER = "empty_answer"
    """The model answered with no text and no tool call, twice in a row (LOOP-1)."""
    REFUSED = "refused"
    """The model declined the task (OpenAI's ``refusal`` field); ``RunSummary.error`` carries its
    words."""
