"""Unicode punctuation folding shared by ``edit_file`` and ``apply_patch`` matching.

Models often retype a file's ASCII punctuation as typographic punctuation (or the reverse):
curly quotes, en/em dashes, non-breaking spaces. Folding maps each such character to its ASCII
look-alike, one character to one character, so an index into the folded text is an index into
the original: a match found on folded text still replaces the file's own bytes.
"""

from __future__ import annotations

from typing import Final

__all__ = ["fold_punctuation"]

_FOLD: Final[dict[int, str]] = {
    **{ord(c): "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"},
    **{ord(c): "'" for c in "\u2018\u2019\u201a\u201b\u2032\uff07"},
    **{ord(c): '"' for c in "\u201c\u201d\u201e\u201f\u2033\uff02"},
    **{ord(c): " " for c in "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"},
}


def fold_punctuation(text: str) -> str:
    """Return ``text`` with typographic dashes, quotes and spaces mapped to ASCII, length-preserving.

    Args:
        text: Any string.

    Returns:
        A string of the same length (``len(fold_punctuation(t)) == len(t)``).
    """
    return text.translate(_FOLD)
