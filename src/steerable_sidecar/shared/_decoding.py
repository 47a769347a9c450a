"""HTTP content codings (RFC 9110, 8.4.1) decoded with bounded output per call.

Shared by ``web_fetch``, the HTTP search backends and the model provider's capped reads
(:func:`~steerable_sidecar.shared._http.read_capped`): a compressed body inflates no further than the
room its reader gives each call, so a gzip bomb costs no more than the byte cap. httpx's own
decoders inflate a whole received chunk in one call (64 KB of gzip can become 64 MB at once).
"""

from __future__ import annotations

import zlib
from typing import Final

__all__ = ["Inflater", "content_coding"]

# Output of one inflate step, in bytes: bounds what one compressed chunk can expand to at once.
_INFLATE_STEP: Final = 65536

# The Content-Encoding values Inflater decodes (RFC 9110, 8.4.1), lowercased, to the coding it is
# built with; a list of codings ("gzip, gzip") or any other coding is not among them.
_CODINGS: Final = {
    "": "identity",
    "identity": "identity",
    "gzip": "gzip",
    "x-gzip": "gzip",
    "deflate": "deflate",
}


def content_coding(header: str) -> str | None:
    """The :class:`Inflater` coding for a ``Content-Encoding`` value (``""`` when absent), else ``None``."""
    return _CODINGS.get(header.strip().lower())


class Inflater:
    """Content decoding (RFC 9110, 8.4.1) with bounded output per call.

    ``gzip`` (and ``x-gzip``, several members) and ``deflate`` (zlib-wrapped as the RFC says, or the
    raw deflate some servers send); ``identity`` passes through.
    """

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._wbits = 31 if coding == "gzip" else 15
        self._inflate = zlib.decompressobj(self._wbits) if coding != "identity" else None
        self._started = False

    def decode(self, data: bytes, room: int) -> bytes:
        """Decode the next raw chunk, returning at most ``room`` bytes (the rest of the chunk is dropped)."""
        if self._inflate is None:
            return data[:room]
        out = bytearray()
        while data and len(out) < room:
            try:
                piece = self._inflate.decompress(data, min(room - len(out), _INFLATE_STEP))
            except zlib.error:
                if self._coding == "deflate" and not self._started:
                    self._wbits = -15  # raw deflate without the zlib wrapper
                    self._inflate = zlib.decompressobj(self._wbits)
                    self._started = True
                    continue
                raise
            self._started = True
            out += piece
            if self._inflate.eof:
                data = self._inflate.unused_data
                if not data or self._coding != "gzip":
                    break
                self._inflate = zlib.decompressobj(self._wbits)  # the next gzip member
            else:
                data = self._inflate.unconsumed_tail
                if not piece and not data:
                    break
        return bytes(out)
