"""Text files a user writes (specs, hierarchies): read as UTF-8, the way editors save them."""

from __future__ import annotations

import codecs
from pathlib import Path

from sqlclose.errors import InputError


def read_utf8(path: Path, what: str, error: type[InputError]) -> str:
    """The file's text, a leading byte-order mark dropped (editors on Windows write one). Bytes
    that are not UTF-8 raise ``error`` naming ``what`` (e.g. "spec file x.toml"), the line and
    the byte offset, and what to do. OS errors (a missing file, a folder) are the caller's."""
    data = path.read_bytes()
    body = data.removeprefix(codecs.BOM_UTF8)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as e:
        line = body.count(b"\n", 0, e.start) + 1
        offset = e.start + len(data) - len(body)
        raise error(f"{what} is not UTF-8 text (line {line}, byte {offset}); re-save it as UTF-8") from None
