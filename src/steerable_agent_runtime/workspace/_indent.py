"""Re-indent a replacement after a match that ignored leading whitespace (FILE-14).

At the ``whitespace`` and ``unicode-punctuation`` levels the model's old lines may be indented
differently from the file's lines they matched. :func:`reindent` works out how the model's
indentation maps onto the file's and moves the replacement lines the same way:

* identical indentation: nothing to do;
* a prefix shift: every file line is the model's line with one common prefix added at its front
  (or removed from it), which is then added to (or removed from) every replacement line;
* a unit mapping, when the characters differ (tabs in the file, spaces from the model; 4 spaces
  against 2): one model step becomes one file step, and every old line must agree. The steps come
  from the model's own nesting when its old lines have two depths (2 and 4 spaces against the
  file's 4 and 8), else from each side's indentation (a tab, or the gcd of the space widths; the
  file's nearby lines tell 8 spaces as two steps of 4). Replacement lines are written in the file's
  characters (tabs stay tabs).

Anything else raises :class:`IndentationMismatch` naming the lines that disagree. Blank lines
take no part in the mapping and are written as the model wrote them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import gcd
from typing import Final, Literal

from ._fold import fold_punctuation

__all__ = ["IndentationMismatch", "Labels", "Reindented", "reindent"]

_FIX: Final = "copy the file's indentation exactly (tabs as tabs) and retry"

_Kind = Literal["", "tab", "space"]


class IndentationMismatch(Exception):
    """The model's indentation cannot be mapped onto the file's; the message names the lines.

    Args:
        detail: What differs, naming lines of the file and of the model's text, with the fix.
        file_line: The 1-based line of the file that the message names first.
    """

    def __init__(self, detail: str, *, file_line: int) -> None:
        super().__init__(detail)
        self.file_line = file_line


@dataclass(frozen=True, slots=True)
class Labels:
    """How the model's texts are named in messages; ``{n}`` is the 1-based line within the text.

    Example: ``Labels(old="edits[0].oldText line {n}", new="edits[0].newText line {n}")``.
    """

    old: str
    new: str


@dataclass(frozen=True, slots=True)
class Reindented:
    """The replacement lines in the file's indentation; ``changed`` when any line was moved."""

    lines: tuple[str, ...]
    changed: bool


def _lead(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _indented(lead: str) -> str:
    """Describe a line's indentation: ``"not indented"``, ``"indented with 4 spaces"``, ..."""
    if not lead:
        return "not indented"
    if lead == "\t" * len(lead):
        return "indented with a tab" if len(lead) == 1 else f"indented with {len(lead)} tabs"
    if lead == " " * len(lead):
        return "indented with 1 space" if len(lead) == 1 else f"indented with {len(lead)} spaces"
    return f"indented with mixed whitespace {lead!r}"


@dataclass(frozen=True, slots=True)
class _Pair:
    """One non-blank old line: its index in the model's text and both indentations."""

    index: int
    model: str
    file: str


def reindent(
    old: Sequence[str],
    found: Sequence[str],
    new: Sequence[str],
    *,
    first_line: int,
    labels: Labels,
    around: Sequence[str] = (),
) -> Reindented:
    """Return ``new`` moved from the indentation of ``old`` to that of ``found`` (FILE-14).

    Args:
        old: The model's old lines, as it wrote them.
        found: The file's lines that ``old`` matched, one per old line.
        new: The model's replacement lines.
        first_line: The 1-based line of the file where ``found`` starts (for messages).
        labels: How to name the model's lines in messages.
        around: File lines near the match, used to tell the file's indentation step when the
            matched lines alone leave it open (8 spaces could be one step or two).

    Returns:
        The re-indented lines; ``changed`` is False when they are ``new`` unchanged.

    Raises:
        IndentationMismatch: No prefix shift or unit mapping explains the old lines, or a new line
            cannot be moved (it lacks the prefix to remove, or would end up left of column 0).
    """
    pairs = [
        _Pair(k, _lead(o), _lead(f)) for k, (o, f) in enumerate(zip(old, found, strict=True)) if o.strip()
    ]
    if all(pair.model == pair.file for pair in pairs):
        return Reindented(tuple(new), changed=False)
    context = _Context(pairs, first_line, labels)
    lines = context.shift(new)
    if lines is None:
        lines = context.map_units(new, around)
    return Reindented(tuple(lines), changed=lines != list(new))


def _style(lead: str) -> tuple[_Kind, int] | None:
    """Return ``(kind, width)`` of one indentation, or None when it mixes tabs and spaces."""
    lead = fold_punctuation(lead)  # a no-break or other typographic space counts as a space
    if not lead:
        return "", 0
    if lead == "\t" * len(lead):
        return "tab", len(lead)
    if lead == " " * len(lead):
        return "space", len(lead)
    return None


def _step(lines: Sequence[str]) -> int | None:
    """Return the most common indentation step between neighbouring space-indented lines."""
    widths = [len(_lead(line)) for line in lines if line.strip() and _lead(line) == " " * len(_lead(line))]
    steps = Counter(abs(b - a) for a, b in zip(widths, widths[1:], strict=False) if a != b)
    if not steps:
        return None
    return min(steps, key=lambda step: (-steps[step], step))


class _Context:
    """The matched lines, for working out the mapping and naming lines in messages."""

    def __init__(self, pairs: list[_Pair], first_line: int, labels: Labels) -> None:
        self.pairs = pairs
        self.first_line = first_line
        self.labels = labels

    def old_name(self, pair: _Pair) -> str:
        return self.labels.old.format(n=pair.index + 1)

    def describe(self, pair: _Pair) -> str:
        return (
            f"line {self.first_line + pair.index} of the file is {_indented(pair.file)} where "
            f"{self.old_name(pair)} is {_indented(pair.model)}"
        )

    def error(self, detail: str, pair: _Pair) -> IndentationMismatch:
        return IndentationMismatch(f"{detail}; {_FIX}", file_line=self.first_line + pair.index)

    def shift(self, new: Sequence[str]) -> list[str] | None:
        """Apply a common prefix shift, or return None when no single prefix explains the old lines."""
        model, file = self.pairs[0].model, self.pairs[0].file
        if file.endswith(model):
            prefix = file[: len(file) - len(model)]
            if all(pair.file == prefix + pair.model for pair in self.pairs):
                return [prefix + line if line.strip() else line for line in new]
        if model.endswith(file):
            prefix = model[: len(model) - len(file)]
            if all(pair.model == prefix + pair.file for pair in self.pairs):
                return [self.unshift(n, line, prefix) for n, line in enumerate(new, 1)]
        return None

    def unshift(self, n: int, line: str, prefix: str) -> str:
        if not line.strip():
            return line
        if not line.startswith(prefix):
            raise self.error(
                f"{self.labels.new.format(n=n)} is {_indented(_lead(line))}, but matching the file removes "
                f"{_indented(prefix).removeprefix('indented with ')} from the front of every line "
                f"({self.describe(self.pairs[0])})",
                self.pairs[0],
            )
        return line[len(prefix) :]

    def map_units(self, new: Sequence[str], around: Sequence[str]) -> list[str]:
        """Map widths linearly, ``file = base + rate * (model - model base)``, in the file's characters.

        The rate comes from the model's own nesting when its old lines have two different depths (two
        model steps against the file's two), else from the two indentation steps (4 spaces for a tab).
        """
        model_old = [self.styled(self.old_name(pair), pair.model) for pair in self.pairs]
        model_new = [
            (n, self.styled(self.labels.new.format(n=n), _lead(line)))
            for n, line in enumerate(new, 1)
            if line.strip()
        ]
        file_old = [
            self.styled(f"line {self.first_line + pair.index} of the file", pair.file) for pair in self.pairs
        ]
        model_kind, model_unit = self.unit(model_old + [style for _, style in model_new])
        file_kind, file_unit = self.unit(file_old)
        if not file_kind:
            file_kind, file_unit = _style_of(around) or (model_kind, model_unit)
        elif file_kind == "space":
            step = _step(around)
            if step and file_unit % step == 0:
                file_unit = step  # 8 matched spaces may be two steps of 4
        low = min(range(len(model_old)), key=lambda i: model_old[i].width)
        high = max(range(len(model_old)), key=lambda i: model_old[i].width)
        if model_old[high].width > model_old[low].width:
            rate = Fraction(
                file_old[high].width - file_old[low].width, model_old[high].width - model_old[low].width
            )
        else:
            rate = Fraction(file_unit, model_unit) if model_unit else Fraction(1)

        def place(width: int) -> Fraction:
            return file_old[low].width + rate * (width - model_old[low].width)

        for i, (model, file) in enumerate(zip(model_old, file_old, strict=True)):
            if rate <= 0 or place(model.width) != file.width:
                first, other = self.pairs[low], self.pairs[i if i != low else high]
                raise self.error(
                    f"{self.describe(first)}, but {self.describe(other)}: the indentation differs "
                    "by different amounts",
                    other,
                )
        lines = list(new)
        for n, style in model_new:
            width = place(style.width)
            if width < 0 or width.denominator != 1:
                where = (
                    "left of the file's margin"
                    if width < 0
                    else "between two of the file's indentation steps"
                )
                raise self.error(
                    f"{style.name} is {_indented(style.lead)}, which would put it {where} "
                    f"({self.describe(self.pairs[low])})",
                    self.pairs[low],
                )
            indent = ("\t" if file_kind == "tab" else " ") * int(width)
            lines[n - 1] = indent + new[n - 1].lstrip()
        return lines

    def styled(self, name: str, lead: str) -> _Styled:
        style = _style(lead)
        if style is None:
            raise self.error(
                f"{name} is {_indented(lead)}, and a mix of tabs and spaces cannot be mapped", self.pairs[0]
            )
        return _Styled(name, lead, *style)

    def unit(self, styles: list[_Styled]) -> tuple[_Kind, int]:
        """Return the kind shared by ``styles`` and its step (1 for tabs, the gcd of space widths)."""
        tabs = [style for style in styles if style.kind == "tab"]
        spaces = [style for style in styles if style.kind == "space"]
        if tabs and spaces:
            raise self.error(
                f"{tabs[0].name} is {_indented(tabs[0].lead)} but {spaces[0].name} is "
                f"{_indented(spaces[0].lead)}, and tabs and spaces cannot both be mapped",
                self.pairs[0],
            )
        if tabs:
            return "tab", 1
        if spaces:
            return "space", gcd(*(style.width for style in spaces))
        return "", 0


@dataclass(frozen=True, slots=True)
class _Styled:
    """One line's indentation: how to name the line, the indentation, its kind and width."""

    name: str
    lead: str
    kind: _Kind
    width: int


def _style_of(lines: Sequence[str]) -> tuple[_Kind, int] | None:
    """Return the indentation kind most lines use and its step, or None when none is indented."""
    kinds = Counter(style[0] for style in map(_style, map(_lead, lines)) if style is not None and style[0])
    if not kinds:
        return None
    if kinds["tab"] > kinds["space"]:
        return "tab", 1
    widths = [len(_lead(line)) for line in lines if _lead(line) == " " * len(_lead(line))]
    return "space", _step(lines) or gcd(*widths)
