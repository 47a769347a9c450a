"""``SpillHooks``: keep oversized tool data out of the transcript, and let the model read it back.

Spec: Web tools / Bounds ("the transcript-side bound is the existing spill hook (SpillHooks
externalizes oversized data), not a second truncation path"), File tools (spilled bodies are
skipped when the read state is rebuilt). A result whose ``data`` serialises to more than
``threshold_bytes`` is stored whole in a file; the transcript keeps a preview, the small scalar
fields (``path``, ``version``, ``partial``... so the read state still rebuilds), and a locator.
The model pages through the stored text with the ``read_spilled`` tool.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import tempfile
from pathlib import Path
from typing import Annotated, Any, Final

from pydantic import Field

from ._codes import ToolErrorCode
from ._state_write import state_write_error
from .errors import ToolRetry, UserError
from .modes import ToolMode
from .tools import Tool, ToolRouter
from .types import ToolCall, ToolResult

__all__ = ["DEFAULT_SPILL_THRESHOLD_BYTES", "READ_SPILLED_TOOL_NAME", "SpillHooks", "scalar_fields"]

DEFAULT_SPILL_THRESHOLD_BYTES: Final = 256 * 1024
"""Data above this many bytes of UTF-8 JSON is spilled (256 KiB)."""

PREVIEW_CHARS: Final = 2_000
"""Characters of the stored JSON text kept inline as the preview."""

READ_SPILLED_TOOL_NAME: Final = "read_spilled"

_MAX_SCALAR_CHARS: Final = 512
_MAX_KEPT_CHARS: Final = 2_048  # of all the scalar fields kept: a result of 100,000 fields stays small
_LOCATOR = re.compile(r"spill://([A-Za-z0-9_-]{1,128})")


def scalar_fields(data: dict[str, Any]) -> dict[str, Any]:
    """The small top-level fields a spilled or cut result keeps, so the read state still rebuilds.

    Args:
        data: A result's ``data``.

    Returns:
        Its booleans, numbers and strings of at most 512 characters, in order, until the keys and
        values kept reach 2,048 characters.
    """
    kept: dict[str, Any] = {}
    room = _MAX_KEPT_CHARS
    for key, value in data.items():
        if isinstance(value, bool | int | float) or (
            isinstance(value, str) and len(value) <= _MAX_SCALAR_CHARS
        ):
            room -= len(str(key)) + len(str(value))
            if room < 0:
                break
            kept[key] = value
    return kept


class SpillHooks:
    """Externalise oversized tool-result data to files under ``directory``.

    Args:
        directory: Where spilled bodies go (created on first use; one file per spilled call).
        threshold_bytes: Spill ``data`` whose JSON text is longer than this many UTF-8 bytes, at
            least 1 (else ``UserError``).
        preview_chars: Characters of the JSON text kept in the transcript.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        threshold_bytes: int = DEFAULT_SPILL_THRESHOLD_BYTES,
        preview_chars: int = PREVIEW_CHARS,
    ) -> None:
        if threshold_bytes < 1:
            raise UserError("threshold_bytes must be positive")
        self.directory = Path(directory)
        self.threshold_bytes = threshold_bytes
        self.preview_chars = preview_chars

    async def apply(
        self, call: ToolCall, result: ToolResult, *, threshold_bytes: int | None = None
    ) -> ToolResult:
        """Return ``result`` unchanged, or with its ``data`` spilled when it is too big.

        The returned result's ``data`` holds the top-level scalar fields of the original (strings
        up to 512 characters, numbers, booleans; 2,048 characters of them at most, in order) and
        ``spilled: {locator, bytes, preview}``; ``message`` tells the model how to read the rest.

        Args:
            call: The call the result answers (its id names the file).
            result: The tool result.
            threshold_bytes: This call's bound in place of :attr:`threshold_bytes` (a tool with a
                tighter cap of its own: MCP results, SAFE-5).

        Returns:
            The result to record and show the model.

        Raises:
            StateWriteError: The body could not be stored (an ``OSError`` naming the file and,
                for a full disk, how to move the state directory).
        """
        if not result.data:
            return result
        try:
            text = json.dumps(result.data, ensure_ascii=False)
        except (ValueError, RecursionError):  # no JSON form: to_wire() answers for it, unspilled
            return result
        size = len(text.encode("utf-8", "surrogatepass"))
        if size <= (self.threshold_bytes if threshold_bytes is None else threshold_bytes):
            return result
        # random suffix: ids that clean to the same text (call.1, call_1), or the same id in another
        # run over this directory, never share a file
        key = re.sub(r"[^A-Za-z0-9_-]", "_", call.id)[:96] + "-" + secrets.token_hex(6)
        await asyncio.to_thread(self._store, key, text)
        locator = f"spill://{key}"
        kept = scalar_fields(result.data)
        kept["spilled"] = {"locator": locator, "bytes": size, "preview": text[: self.preview_chars]}
        note = (
            f"The result data was {size} bytes, too large for the conversation; it is stored at {locator}. "
            f"Call {READ_SPILLED_TOOL_NAME} with that locator (and offset/limit) to read it."
        )
        message = f"{result.message} {note}" if result.message else note
        return result.model_copy(update={"data": kept, "message": message})

    def _store(self, key: str, text: str) -> None:
        target = self.directory / f"{key}.json"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".spill-")
        except OSError as exc:
            raise state_write_error("a spilled tool result", target, exc) from exc
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as handle:
                handle.write(text)
            os.link(tmp, target)  # never replaces an existing body
            os.unlink(tmp)
        except BaseException as exc:
            Path(tmp).unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise state_write_error("a spilled tool result", target, exc) from exc
            raise

    def read(self, locator: str, offset: int = 0, limit: int = 50_000) -> dict[str, Any]:
        """Return a slice of a spilled body.

        Args:
            locator: ``spill://KEY`` from a spilled result.
            offset: First character (0-based) of the stored JSON text.
            limit: Number of characters.

        Returns:
            ``{"locator", "offset", "text", "totalChars", "nextOffset"}``; ``nextOffset`` is
            ``None`` at the end.

        Raises:
            ToolRetry: ``unknown_locator`` when the locator is malformed or names nothing stored.
        """
        match = _LOCATOR.fullmatch(locator.strip())
        path = self.directory / f"{match.group(1)}.json" if match else None
        if path is None or not path.is_file():
            raise ToolRetry(
                f"unknown spill locator {locator!r}; use the spill://... locator from a spilled result",
                data={"code": ToolErrorCode.UNKNOWN_LOCATOR},
            )
        text = path.read_text(encoding="utf-8", errors="surrogatepass")
        piece = text[offset : offset + limit]
        end = offset + len(piece)
        return {
            "locator": locator,
            "offset": offset,
            "text": piece,
            "totalChars": len(text),
            "nextOffset": end if end < len(text) else None,
        }

    def tool(self) -> Tool:
        """Return the ``read_spilled`` tool (read mode, direct tier) bound to these hooks."""

        async def read_spilled(
            locator: str,
            offset: Annotated[int, Field(ge=0, strict=True)] = 0,
            limit: Annotated[int, Field(ge=1, le=100_000, strict=True)] = 50_000,
        ) -> dict[str, Any]:
            """Read part of a tool result that was too large for the conversation.

            Args:
                locator: The spill://... locator from the spilled result.
                offset: First character to return (0-based).
                limit: Number of characters to return (at most 100000).
            """
            return await asyncio.to_thread(self.read, locator, offset, limit)

        return Tool.from_function(read_spilled, name=READ_SPILLED_TOOL_NAME, mode=ToolMode.READ)

    def register(self, router: ToolRouter) -> None:
        """Register :meth:`tool` on ``router`` unless a ``read_spilled`` tool is already there."""
        if READ_SPILLED_TOOL_NAME not in router:
            router.register(self.tool())
