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
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
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
        data = json.loads(path.read_text(encoding="utf-8"))
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
