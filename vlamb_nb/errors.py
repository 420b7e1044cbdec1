"""Exception types that carry enough context (file, row, field) to fix the input."""

from __future__ import annotations

import os
import re


class VlambError(Exception):
    """Base class: every error the package raises on purpose derives from it."""


class DataError(VlambError, ValueError):
    """A malformed record or file; the message names the file, the row or line and the field.

    Both count from 1, as editors show: ``row`` is a record (the first object of a JSON list is row 1, a JSON
    Lines record goes by its line); ``line`` is a line of text, where a file cannot be read as records.
    """

    def __init__(self, message: str, *, source: str | None = None, row: int | str | None = None,
                 field: str | None = None, line: int | None = None) -> None:
        where = []
        if source is not None:
            where.append(str(source))
        if row is not None:
            where.append(f"row {row}")
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field {field!r}")
        prefix = (", ".join(where) + ": ") if where else ""
        super().__init__(prefix + message)
        self.source, self.row, self.field, self.line = source, row, field, line


class ImageError(VlambError, ValueError):
    """An image that is missing, corrupt, or outside the dataset root."""


class SettingError(VlambError, ValueError):
    """An unknown setting, prompt wording, model family or option."""


class StoreError(VlambError, RuntimeError):
    """The prediction store is locked by another writer or damaged beyond the last line."""


class InUseError(VlambError, RuntimeError):
    """A folder another live process is writing (a run folder of a reproduce under way)."""


class NotAvailableError(VlambError, RuntimeError):
    """A feature whose dependency (package, file, network access) is missing here."""


class NotFetchedError(NotAvailableError):
    """A paper's release is not in the data home: the one line says which command fetches it."""


class FetchError(VlambError, RuntimeError):
    """A download that could not be completed or verified (unreachable, refused, gated, wrong checksum)."""


def reason(e: BaseException) -> str:
    """Why something could not be shown, as a reader reads it: a package error's own words (a setting's need up to
    its advice; a data error with its file, row and field), a file that cannot be read by its name, anything else
    as an unexpected error. Never an exception's class name or a traceback."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    text = re.sub(r"[:;,(]?\s*\b[A-Z]\w*(Error|Exception)\b.*$", "", text).strip()  # a wrapped library error
    if isinstance(e, SettingError):
        return text.split(": ", 1)[0] or "a setting it needs is missing"
    if isinstance(e, VlambError):
        return text or "the data could not be read"
    if isinstance(e, OSError) and (e.filename or e.strerror):
        name = f" ({os.path.basename(str(e.filename))})" if e.filename else ""
        return f"a file could not be read{name}: {e.strerror or 'unreadable'}"
    if isinstance(e, OSError):
        return "not a file or image that can be decoded"
    return "an unexpected error while reading it"
