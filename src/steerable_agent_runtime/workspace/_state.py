"""The session's read-before-write state and its reconstruction from a durable record.

Spec: File tools: read-before-write state. The state lives in the tool-owning process, never in
the transcript, so context compaction cannot fold it away; after a restart it is re-seeded from
the tool results in the durable record.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["FileView", "ReadFileState", "read_file_state_from_messages"]


@dataclass(frozen=True, slots=True)
class FileView:
    """What the session last saw of one file.

    Attributes:
        version: SHA-256 hex of the full content at that time.
        partial: The model saw only part of it (clipped or ranged read).
    """

    version: str
    partial: bool = False


class ReadFileState:
    """Session-scoped ``readFileState``: display path -> :class:`FileView`.

    ``read_file`` records a view; every successful write, edit and patch refreshes it to the
    post-write version (a full view). Keys are the ``data.path`` strings the tools return.
    """

    def __init__(self, seed: Mapping[str, str] | None = None) -> None:
        self._views: dict[str, FileView] = {}
        if seed:
            self.seed(seed)

    def record(self, path: str, version: str, *, partial: bool = False) -> None:
        """Remember that the session saw ``path`` at ``version``."""
        self._views[path] = FileView(version, partial)

    def forget(self, path: str) -> None:
        """Drop ``path`` (after a delete or a move away)."""
        self._views.pop(path, None)

    def get(self, path: str) -> FileView | None:
        """Return the last view of ``path``, or ``None`` when the session never saw it."""
        return self._views.get(path)

    def seed(self, versions: Mapping[str, str]) -> None:
        """Add full views from a ``{path: version}`` mapping (a resume), keeping newer entries' order.

        Args:
            versions: Typically :func:`read_file_state_from_messages` output or a
                ``read_state.seed`` payload. Non-string entries are skipped.
        """
        for path, version in versions.items():
            if isinstance(path, str) and isinstance(version, str) and version:
                self._views[path] = FileView(version)

    def to_dict(self) -> dict[str, str]:
        """Return the ``{path: version}`` mapping of full views (what a resume would seed)."""
        return {path: view.version for path, view in self._views.items() if not view.partial}

    def __contains__(self, path: object) -> bool:
        return path in self._views

    def __iter__(self) -> Iterator[str]:
        return iter(self._views)

    def __len__(self) -> int:
        return len(self._views)


def _result_payloads(message: Any) -> Iterator[Mapping[str, Any]]:
    if not isinstance(message, Mapping):
        return
    content: Any = message.get("content", message.get("result"))
    if isinstance(content, list):  # content parts: [{"type": "text", "text": "..."}]
        for part in content:
            if isinstance(part, Mapping):
                yield from _decoded(part.get("text", part))
    else:
        yield from _decoded(content)


def _decoded(content: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(content, str):
        try:
            content = json.loads(content)
        except (json.JSONDecodeError, RecursionError):
            return  # a spilled or folded body: skipped, never guessed
    if isinstance(content, Mapping):
        yield content


def read_file_state_from_messages(messages: Iterable[Any]) -> dict[str, str]:
    """Rebuild the ``{path: version}`` read state from a durable record of messages.

    Each tool message's content is a ``ToolResult`` (a JSON string, a dict, or text content
    parts). Successful results contribute ``data.path``/``data.version`` and, for
    ``apply_patch``, every ``data.versions`` entry; later messages win. A partial view
    (``data.partial: true``) is not seedable, so it removes the path: after a resume the model
    reads again before a blind overwrite. A ``data.deleted`` path is removed too. Unparseable
    entries are skipped: a missing entry means one fewer CAS check, never a wrong write.
    Spec: File tools (resume re-seeds state from the durable record).

    Args:
        messages: Chat messages in order (any mapping with ``content`` or ``result``).

    Returns:
        The mapping to pass to :meth:`ReadFileState.seed` or ``read_state.seed``.
    """
    state: dict[str, str] = {}
    for message in messages:
        role = message.get("role") if isinstance(message, Mapping) else None
        if role not in (None, "tool"):
            continue
        for result in _result_payloads(message):
            data = result.get("data")
            if result.get("success") is not True or not isinstance(data, Mapping):
                continue
            _seed_from(state, data)
    return state


def _seed_from(state: dict[str, str], data: Mapping[str, Any]) -> None:
    """Apply one successful result's ``data`` to ``state``: its path, its versions, its deletes.

    A re-seeded path moves to the end, so the mapping stays in the order the record last saw them.
    """
    path, version = data.get("path"), data.get("version")
    if isinstance(path, str) and isinstance(version, str):
        state.pop(path, None)
        if data.get("partial") is not True:
            state[path] = version
    versions = data.get("versions")
    if isinstance(versions, Mapping):
        for key, value in versions.items():
            if isinstance(key, str) and isinstance(value, str):
                state.pop(key, None)
                state[key] = value
    deleted = data.get("deleted")
    if isinstance(deleted, list):
        for key in deleted:
            if isinstance(key, str):
                state.pop(key, None)
