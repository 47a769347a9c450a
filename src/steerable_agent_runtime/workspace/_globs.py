r"""Glob patterns for ``glob`` and ``grep``'s ``glob`` filter: one matcher for both engines.

The language is gitignore-style, as ripgrep's ``--glob`` reads it: ``*`` and ``?`` stay inside one
path segment, ``**`` as a whole segment spans zero or more directories, ``[abc]`` / ``[!abc]`` /
``[^abc]`` are classes, ``{a,b}`` alternatives, and ``\`` makes the next character literal.

Matching is done here, in Python, on the paths an engine lists, so it means the same with
ripgrep and without it, and an explicit glob never overrides ignore files (ripgrep's own
``--glob`` would). Each ``*`` followed by more text becomes an atomic lazy group, as
:func:`fnmatch.translate` does, so ``*a*a*a*b`` cannot backtrack catastrophically. What ripgrep
can do to narrow the walk (list only files whose name could match, through ``--type-add``, which
unlike ``--glob`` leaves ignore files in force) is worked out here too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from ..errors import WorkspaceError
from ._codes import FileErrorCode
from ._regex import MAX_PATTERN_CHARS

__all__ = ["GlobPattern", "compile_glob"]

MAX_ALTERNATIVES: Final = 256
"""Most patterns one glob's ``{a,b}`` groups may expand to."""

_NOT_IN_NAME_GLOBS: Final = frozenset("\\[]{},:")


@dataclass(frozen=True, slots=True)
class GlobPattern:
    r"""A compiled glob.

    Attributes:
        text: The pattern as given (without a leading ``!``).
        negated: A ``grep`` filter that excludes the files it matches (``!*.min.js``).
        by_name: The pattern has no ``/``: it matches a file's name at any depth (``grep`` only;
            ``glob`` patterns always match the whole path below ``path``).
        regex: Full-match regex over ``"/" + relative path`` (or ``"/" + name`` when ``by_name``).
        names: ripgrep ``--type-add`` globs a matching file's name must match, or ``()`` when no
            safe name filter exists (a last segment of ``**``, escapes, ``[^...]``).
        needles: Text every matching ``"/" + path`` contains, one per alternative (the longest
            literal run, ``"/email/"`` for ``**/email/**``), or ``()`` when some alternative has
            none: a substring test that skips the regex for most paths of a big listing.
    """

    text: str
    negated: bool
    by_name: bool
    regex: re.Pattern[str]
    names: tuple[str, ...]
    needles: tuple[str, ...] = ()

    def matches(self, rel: str) -> bool:
        """Does the ``/``-separated path ``rel`` (relative to the search root) pass this glob?"""
        subject = "/" + (rel.rpartition("/")[2] if self.by_name else rel)
        return (self.regex.fullmatch(subject) is not None) != self.negated


def _invalid(pattern: str, why: str) -> WorkspaceError:
    return WorkspaceError(FileErrorCode.INVALID_PATTERN, f"glob pattern {pattern[:100]!r}: {why}")


def _expand_braces(pattern: str, whole: str) -> list[str]:
    """Expand ``{a,b}`` groups (nested too) into plain patterns; a ``{`` with no ``,`` stays literal."""
    depth, start = 0, -1
    commas: list[int] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "{":
            if depth == 0:
                start, commas = i, []
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                if not commas:
                    # no alternatives: a literal brace pair; expand what is inside it and after it
                    head = pattern[: start + 1]
                    return [head + rest for rest in _expand_braces(pattern[start + 1 :], whole)]
                bounds = [start, *commas, i]
                options = [pattern[a + 1 : b] for a, b in zip(bounds, bounds[1:], strict=False)]
                out: list[str] = []
                for option in options:
                    for rest in _expand_braces(option + pattern[i + 1 :], whole):
                        out.append(pattern[:start] + rest)
                        if len(out) > MAX_ALTERNATIVES:
                            raise _invalid(
                                whole, f"its {{a,b}} groups expand past {MAX_ALTERNATIVES} patterns"
                            )
                return out
        elif char == "," and depth == 1:
            commas.append(i)
        i += 1
    return [pattern]


def _class(segment: str, i: int) -> tuple[str, int] | None:
    """Translate the ``[...]`` class starting at ``segment[i]``; ``None`` when it never closes."""
    j = i + 1
    negate = j < len(segment) and segment[j] in "!^"
    if negate:
        j += 1
    if j < len(segment) and segment[j] == "]":  # a leading ] is a member
        j += 1
    end = segment.find("]", j)
    if end == -1:
        return None
    body = segment[i + 1 + negate : end]
    members = "".join("\\" + c if c in "\\^[]" else c for c in body)
    return ("[^/" + members + "]" if negate else "[" + members + "]"), end + 1


def _segment_regex(segment: str) -> str:
    """Translate one path segment (no ``/``) to a regex; ``*`` and ``?`` never match ``/``."""
    chunks: list[list[str]] = [[]]  # the pieces between stars
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            while i < len(segment) and segment[i] == "*":
                i += 1
            chunks.append([])
            continue
        if char == "?":
            chunks[-1].append("[^/]")
        elif char == "[" and (translated := _class(segment, i)) is not None:
            chunks[-1].append(translated[0])
            i = translated[1]
            continue
        elif char == "\\" and i + 1 < len(segment):
            chunks[-1].append(re.escape(segment[i + 1]))
            i += 2
            continue
        else:
            chunks[-1].append(re.escape(char))
        i += 1
    if len(chunks) == 1:
        return "".join(chunks[0])
    # fnmatch's translation: every middle piece as an atomic lazy group, the last one anchored
    middle = "".join(f"(?>[^/]*?{''.join(chunk)})" for chunk in chunks[1:-1])
    return "".join(chunks[0]) + middle + "[^/]*" + "".join(chunks[-1])


def _segments(pattern: str) -> list[str]:
    return [part for part in pattern.split("/") if part not in ("", ".")]


_ANY_FOLDERS: Final = "(?:/[^/]++)*"  # zero or more whole segments; possessive inside: no re-splitting


def _path_regex(segments: list[str]) -> str:
    r"""Translate segments to a regex over ``"/" + path`` that runs in time linear in the path.

    As :func:`fnmatch.translate` does for ``*``, one level up: the runs of segments between two
    ``**`` are atomic lazy groups (the first place such a run matches is as good as any later
    one, since a ``**`` follows it), and only the run after the last ``**`` is anchored at the
    end. Every segment must end at a ``/`` or the end. ``**/**`` is ``**``.
    """
    runs: list[list[str]] = [[]]
    for segment in segments:
        if segment == "**":
            if runs[-1] or len(runs) == 1:
                runs.append([])
            continue
        runs[-1].append("/" + _segment_regex(segment) + r"(?=/|\Z)")
    if len(runs) == 1:
        return "".join(runs[0])
    first, *middle, last = runs
    inner = "".join(f"(?>{_ANY_FOLDERS[:-1]}*?{''.join(run)})" for run in middle)
    return "".join(first) + inner + _ANY_FOLDERS + "".join(last)


def _name_glob(segment: str) -> str | None:
    """The last segment as a ripgrep type glob, when ripgrep would read it exactly as we do."""
    if segment in ("*", "**") or set(segment) & _NOT_IN_NAME_GLOBS:
        return None  # escapes, classes and literal braces read differently there; ',' and ':' split
    return segment


def _needle(segments: list[str]) -> str:
    """The longest literal text a path matching these segments must contain ('' when none)."""
    best = ""
    for k, segment in enumerate(segments):
        if "[" in segment or "\\" in segment or segment == "**":
            continue
        if not set(segment) & set("*?"):  # a whole literal segment, with the slashes around it
            more = any(later != "**" for later in segments[k + 1 :])  # a trailing ** may match nothing
            found = "/" + segment + ("/" if more else "")
        else:
            found = max(re.split(r"[*?]+", segment), key=len)
        best = max(best, found, key=len)
    return best


def compile_glob(pattern: str, *, by_name_allowed: bool, negation_allowed: bool) -> GlobPattern:
    """Compile a glob for ``glob`` (whole paths) or for ``grep``'s filter (names or paths).

    Args:
        pattern: The glob as the model sent it.
        by_name_allowed: A pattern without ``/`` matches names at any depth (``grep``'s ``glob``);
            otherwise every pattern matches the whole path below the search root (``glob``).
        negation_allowed: A leading ``!`` excludes what the rest matches (``grep``'s ``glob``).

    Returns:
        The :class:`GlobPattern`.

    Raises:
        WorkspaceError: ``invalid_pattern`` for a pattern over 1000 characters, an absolute one, one
            with a ``..`` segment, one with a NUL, or one whose ``{a,b}`` groups expand past 256.
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise WorkspaceError(
            FileErrorCode.INVALID_PATTERN, f"glob pattern longer than {MAX_PATTERN_CHARS} characters"
        )
    negated = negation_allowed and pattern.startswith("!")
    body = pattern[1:] if negated else pattern
    if body.startswith("/") or ".." in body.split("/"):
        raise WorkspaceError(
            FileErrorCode.INVALID_PATTERN,
            f"glob pattern {pattern!r} must be relative and must not contain '..'",
        )
    if "\x00" in body:
        raise _invalid(pattern, "it contains a NUL character")
    try:
        body.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise WorkspaceError(
            FileErrorCode.INVALID_PATTERN,
            f"glob pattern has a lone surrogate at index {exc.start}; send the character itself",
        ) from None
    alternatives = _expand_braces(body, pattern)
    by_name = by_name_allowed and all("/" not in alt for alt in alternatives)
    split = [_segments(alt) for alt in alternatives]
    regex = "|".join(_path_regex(segments) for segments in split)
    names: tuple[str, ...] = ()
    if split and all(split):
        globs = [_name_glob(segments[-1]) for segments in split]
        if all(glob is not None for glob in globs):
            names = tuple(sorted({glob for glob in globs if glob is not None}))
    needles = tuple(_needle(segments) for segments in split)
    return GlobPattern(
        needles=needles if all(needles) else (),
        text=body,
        negated=negated,
        by_name=by_name,
        regex=re.compile(rf"(?:{regex})" if regex else r"(?!)"),
        names=names,
    )
