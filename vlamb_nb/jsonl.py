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
