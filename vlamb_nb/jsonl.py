"""Reading text, JSON, JSON Lines and CSV files with errors that name the file, the line and the byte.

Every loader reads its files through :func:`read_text` (or the readers built on it), so a UTF-8 byte-order
mark is accepted everywhere and a byte that is not UTF-8 is a :class:`DataError` naming the file, the line
(1-based, as editors show) and the byte offset, never a raw ``UnicodeDecodeError``.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vlamb_nb.errors import DataError

BOM = b"\xef\xbb\xbf"


def not_utf8(data: bytes, err: UnicodeDecodeError, *, base: int = 0) -> tuple[int, str]:
    """(1-based line, description) of the first byte of ``data`` that is not UTF-8; ``err.start`` counts from
    ``base`` (3 when a byte-order mark was stripped before decoding)."""
    at = base + err.start
    line = data.count(b"\n", 0, at) + 1
    column = at - (data.rfind(b"\n", 0, at) + 1) + 1
    return line, f"not UTF-8 text: byte 0x{data[at]:02x} at byte offset {at} of the file (byte {column} of the line)"


def decode(data: bytes, source: str) -> str:
    """Bytes of a text file as text: UTF-8, a leading byte-order mark dropped (it is not data)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line, what = not_utf8(data, e, base=len(BOM) if data.startswith(BOM) else 0)
        raise DataError(what, source=source, line=line) from None


def read_text(path: str | os.PathLike) -> str:
    """A whole text file (see :func:`decode`); a missing or unreadable file is a DataError naming it."""
    path = Path(path)
    if not path.is_file():
        raise DataError("file not found", source=str(path))
    try:
        data = path.read_bytes()
    except OSError as e:
        raise DataError(f"cannot read ({e.strerror})", source=str(path)) from None
    return decode(data, str(path))


def iter_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for every non-blank line; a line that is not a JSON object is a DataError."""
    path = Path(path)
    for line_no, line in enumerate(read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"not valid JSON ({e.msg})", source=str(path), row=line_no) from None
        if not isinstance(rec, dict):
            raise DataError("a line must be a JSON object", source=str(path), row=line_no)
        yield line_no, rec


def read_json(path: str | os.PathLike, *, expect: type | None = None, what: str = "") -> Any:
    """A whole JSON file; unreadable, non-UTF-8, invalid JSON or the wrong top-level type is a DataError
    naming the file (and the line), so a loader never shows a raw traceback."""
    path = Path(path)
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise DataError(f"not valid JSON ({e.msg}, column {e.colno})", source=str(path), line=e.lineno) from None
    if expect is not None and not isinstance(data, expect):
        kind = {list: "a JSON list", dict: "a JSON object"}.get(expect, expect.__name__)
        raise DataError(f"expected {kind}{' of ' + what if what else ''}, got {type(data).__name__}",
                        source=str(path))
    return data


def read_csv(path: str | os.PathLike, *, allow_empty: bool = False, **kwargs: Any):
    """A CSV file as a DataFrame (all columns as text unless ``dtype`` is given); a missing or empty file, a
    header without rows (unless ``allow_empty``), non-UTF-8 text or a malformed row is a DataError naming the
    file, never pandas' own traceback."""
    import pandas as pd

    path = Path(path)
    text = read_text(path)
    kwargs.setdefault("dtype", str)
    kwargs.setdefault("keep_default_na", False)
    try:
        df = pd.read_csv(io.StringIO(text), **kwargs)
    except pd.errors.EmptyDataError:
        raise DataError("the CSV file is empty (no header row)", source=str(path)) from None
    except pd.errors.ParserError as e:
        raise DataError(f"not a readable CSV ({str(e).strip()})", source=str(path)) from None
    if df.empty and not allow_empty:
        raise DataError("the CSV file has a header but no rows", source=str(path))
    return df
