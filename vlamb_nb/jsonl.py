"""Reading JSON Lines files with errors that name the file and the line."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vlamb_nb.errors import DataError


def iter_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for every non-blank line; a line that is not a JSON object is a DataError."""
    path = Path(path)
    if not path.is_file():
        raise DataError("file not found", source=str(path))
    with open(path, "rb") as fh:
        for line_no, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8-sig" if line_no == 1 else "utf-8")  # a BOM is not data
            except UnicodeDecodeError as e:
                raise DataError(f"not UTF-8 text (byte {e.start} of the line)", source=str(path), row=line_no) from None
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
    if not path.is_file():
        raise DataError("file not found", source=str(path))
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError as e:
        raise DataError(f"not UTF-8 text (byte {e.start})", source=str(path)) from None
    except json.JSONDecodeError as e:
        raise DataError(f"not valid JSON ({e.msg}, column {e.colno})", source=str(path), row=e.lineno) from None
    except OSError as e:
        raise DataError(f"cannot read ({e.strerror})", source=str(path)) from None
    if expect is not None and not isinstance(data, expect):
        kind = {list: "a JSON list", dict: "a JSON object"}.get(expect, expect.__name__)
        raise DataError(f"expected {kind}{' of ' + what if what else ''}, got {type(data).__name__}",
                        source=str(path))
    return data


def read_csv(path: str | os.PathLike, **kwargs: Any):
    """A CSV file as a DataFrame (all columns as text unless ``dtype`` is given); a missing or empty file,
    non-UTF-8 text or a malformed row is a DataError naming the file, never pandas' own traceback."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise DataError("file not found", source=str(path))
    kwargs.setdefault("dtype", str)
    kwargs.setdefault("keep_default_na", False)
    try:
        return pd.read_csv(path, encoding="utf-8-sig", **kwargs)
    except pd.errors.EmptyDataError:
        raise DataError("the CSV file is empty (no header row)", source=str(path)) from None
    except UnicodeDecodeError as e:
        raise DataError(f"not UTF-8 text (byte {e.start})", source=str(path)) from None
    except pd.errors.ParserError as e:
        raise DataError(f"not a readable CSV ({str(e).strip()})", source=str(path)) from None
