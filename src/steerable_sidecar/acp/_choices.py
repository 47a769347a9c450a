"""A ``steerable acp`` session's mode and model, kept in its durable record across processes.

Each pick (``session/set_mode``, the ``mode`` or ``model`` config option, ``/mode``, ``/model``)
appends a ``choice`` entry (:func:`choice_entry`) to the session's record, once the record exists
(a session's record opens with its ``session`` entry at its first prompt, which writes the picks
made before it). ``session/load`` in another process reads the last one back
(:func:`recorded_choice`): the session opens in the mode and with the model it was left with,
the model read as a pick made there (``chosen_model``). A recorded mode that process does not
offer is not taken: its ``--consent`` mode holds (docs/acp.md, "Modes").
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any, Final

from acp import RequestError

from steerable_agent_runtime.modes import ConsentPolicy
from steerable_agent_runtime.record import DurableRecord

from ._models import MODEL_OPTION_ID, chosen_model

__all__ = ["CHOICE_ENTRY", "RecordedChoice", "choice_entry", "recorded_choice"]

logger = logging.getLogger(__name__)

CHOICE_ENTRY: Final = "choice"
"""The record entry kind holding a session's picked mode and model."""

_MARK: Final = b'"type":"choice"'  # how the entry's kind is written (record._line: compact JSON)
_TAIL_BYTES: Final = 1 << 20  # read from the end in steps of this many bytes


def choice_entry(policy: ConsentPolicy, model: str | None) -> dict[str, Any]:
    """The ``choice`` entry's payload: the mode's name and the model (``None``: the configured one)."""
    return {"mode": policy.name, "model": model}


@dataclass(frozen=True, slots=True)
class RecordedChoice:
    """What a record says was picked last, as far as this process offers it.

    Attributes:
        policy: The mode, when one was recorded and this process offers it; else ``None``.
        model: The model id, when one other than this process's default was recorded; else
            ``None`` (the configured one).
    """

    policy: ConsentPolicy | None = None
    model: str | None = None


async def recorded_choice(
    record: DurableRecord, modes: tuple[ConsentPolicy, ...], models: tuple[str, ...]
) -> RecordedChoice:
    """The last ``choice`` entry of ``record`` (read in a worker thread), limited to what is offered.

    Args:
        record: The session's record.
        modes: The modes this process offers (by name).
        models: The model ids this process offers, its default first.

    Returns:
        A :class:`RecordedChoice`; all ``None`` when nothing (usable) was recorded or the record
        cannot be read.
    """
    try:
        payload = await asyncio.to_thread(_last_choice, record)
    except OSError as exc:
        logger.warning("acp: the mode of %s could not be read back: %s", record.path.name, exc)
        return RecordedChoice()
    if payload is None:
        return RecordedChoice()
    mode, model = payload.get("mode"), payload.get("model")
    policy = next((p for p in modes if isinstance(mode, str) and p.name == mode), None)
    if mode is not None and policy is None:
        logger.info("acp: %s was left in mode %r, not offered here", record.path.name, mode)
    picked: str | None = None
    if isinstance(model, str):
        try:  # read as a pick made here is
            picked = chosen_model(MODEL_OPTION_ID, model, models)
        except RequestError:
            logger.info("acp: %s was left with model %r, not a model id", record.path.name, model[:80])
    return RecordedChoice(policy, None if picked == models[0] else picked)


def _last_choice(record: DurableRecord) -> dict[str, Any] | None:
    """The payload of the record's last whole ``choice`` entry, read backwards from the end."""
    try:
        file = record.path.open("rb")
    except FileNotFoundError:
        return None
    with file:
        end = file.seek(0, 2)
        carry = b""  # the start of a line cut by the step before (it continues in ``carry``)
        while end > 0:
            start = max(0, end - _TAIL_BYTES)
            file.seek(start)
            block = file.read(end - start) + carry
            lines = block.split(b"\n")
            carry = lines.pop(0) if start > 0 else b""  # maybe cut: read whole with the next step
            for line in reversed(lines):
                payload = _choice_of(line)
                if payload is not None:
                    return payload
            end = start
        return _choice_of(carry)


def _choice_of(line: bytes) -> dict[str, Any] | None:
    """The payload of ``line`` when it is a whole ``choice`` entry (a torn or foreign line is not)."""
    if _MARK not in line:
        return None
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(entry, dict) or entry.get("type") != CHOICE_ENTRY:
        return None
    payload = entry.get(CHOICE_ENTRY)
    return payload if isinstance(payload, dict) else None
