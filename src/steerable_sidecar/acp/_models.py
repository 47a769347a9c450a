"""``steerable acp``'s model selection and token usage (docs/acp.md, "Models" and "Token usage").

The model is an ACP session config option (``configOptions``, stable in protocol v1): each
``session/new`` and ``session/load`` answer carries one ``select`` option, id ``model``, category
``model``, its ``currentValue`` the session's model and its ``options`` the models offered (the
configured ``STEERABLE_MODEL`` first, then ``steerable acp --models``, then the model Harbor's ACP
runner asks for: :func:`~steerable_sidecar.acp._command.harbor_model`). The client changes it with
``session/set_config_option`` (:func:`chosen_model` reads the value); the change holds for that
session's later prompts. The older unstable ``models`` / ``session/set_model`` pair is not part of
the protocol the SDK speaks here (schema 1.19), so it is not offered.

A turn's ``session/prompt`` answer carries ``usage`` (:func:`turn_usage`): the tokens of the turn's
model requests, summed, as the server reported them; nothing when it reported none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from acp import RequestError
from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption
from acp.schema import Usage as AcpUsage

from steerable_agent_runtime.llm import Usage

from ._model_ids import MAX_MODEL_ID_CHARS, model_id_problem

__all__ = [
    "DEFAULT_MODEL_ID",
    "MAX_MODEL_ID_CHARS",
    "MODEL_OPTION_ID",
    "chosen_model",
    "model_option",
    "offered_models",
    "turn_usage",
]

MODEL_OPTION_ID: Final = "model"
"""The id (and category) of the model's session config option."""

DEFAULT_MODEL_ID: Final = "default"
"""The model's id when the provider names none (the scripted model, an injected provider)."""


def offered_models(default: str, more: Sequence[str]) -> tuple[str, ...]:
    """The models a session may pick: ``default`` first, then ``more``, each once."""
    return tuple(dict.fromkeys((default, *more)))


def model_option(current: str, offered: Sequence[str], default: str) -> SessionConfigOptionSelect:
    """The ``model`` config option: ``current`` selected among ``offered`` (and itself, when not one)."""
    choices = [
        SessionConfigSelectOption(
            value=model,
            name=model,
            description="the configured model (STEERABLE_MODEL)" if model == default else None,
        )
        for model in dict.fromkeys((*offered, current))
    ]
    return SessionConfigOptionSelect(
        id=MODEL_OPTION_ID,
        name="Model",
        description="The model this session's prompts are sent to.",
        category="model",
        type="select",
        current_value=current,
        options=choices,
    )


def chosen_model(config_id: str, value: str | bool, offered: Sequence[str]) -> str:
    """The model a ``session/set_config_option`` picks.

    An offered model as it is; an id naming one with a ``provider/`` prefix the offered one lacks
    (``openai/gpt-4o`` for ``gpt-4o``), or without the prefix the offered one has, that model; any
    other id as it is (an OpenAI-compatible server decides which models it serves: an unknown one
    fails the next prompt with the server's own error).

    Raises:
        RequestError: ``-32602`` (``Invalid params``) for an option other than ``model`` (the
            caller answers ``mode`` itself: :mod:`steerable_sidecar.acp._modes`), a value
            that is not a string, or an id that is empty, longer than :data:`MAX_MODEL_ID_CHARS`
            or holds whitespace or control characters; ``data.reason`` says which.
    """
    if config_id != MODEL_OPTION_ID:
        raise RequestError.invalid_params(
            {
                "configId": config_id[:MAX_MODEL_ID_CHARS],
                "reason": "unknown config option: the session has 'model' and 'mode'",
            }
        )
    if not isinstance(value, str):
        raise RequestError.invalid_params(
            {"configId": config_id, "reason": "the model option takes a model id (a string)"}
        )
    value = value.strip()
    problem = model_id_problem(value)
    if problem is not None:
        shown = value if len(value) <= MAX_MODEL_ID_CHARS else value[:MAX_MODEL_ID_CHARS] + "..."
        raise RequestError.invalid_params({"configId": config_id, "value": shown, "reason": problem})
    if value in offered:
        return value
    bare = value.split("/", 1)[1] if "/" in value else ""
    if bare in offered:
        return bare
    prefixed = [model for model in offered if "/" in model and model.split("/", 1)[1] == value]
    return prefixed[0] if len(prefixed) == 1 else value


def turn_usage(usage: Usage) -> AcpUsage | None:
    """A turn's ``PromptResponse.usage``; ``None`` when the server reported no tokens at all.

    ``inputTokens`` counts every prompt token (cached ones included, as the server counts them);
    ``cachedReadTokens`` is the part read from the server's cache, when the server said.
    """
    if usage.total_tokens == 0:  # no count came with any answer: omitted, never made up
        return None
    return AcpUsage(
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        total_tokens=usage.total_tokens,
        cached_read_tokens=usage.cached_tokens,
    )
