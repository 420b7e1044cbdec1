"""Every progress bar of the package, made in one place, so one setting switches them all off.

A notebook executed in batch (``vlamb-nb reproduce``) saves a progress widget as the state it started in ("0%"),
a state that never was the result; ``reproduce`` sets ``TQDM_DISABLE=1`` in its kernels, and an explicit
``disable=False`` would override tqdm's own reading of it, so the package reads it here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

OFF_ENV = "TQDM_DISABLE"


def wanted(enabled: bool = True) -> bool:
    """Whether a bar is shown: asked for, and not switched off for the whole process."""
    return bool(enabled) and os.environ.get(OFF_ENV, "").strip().lower() not in ("1", "true", "yes")


def bar(iterable: Iterable[Any] | None = None, *, total: int | None = None, desc: str = "", unit: str = "it",
        enabled: bool = True, initial: int = 0) -> Any:
    """A tqdm bar (a widget in a notebook, text in a terminal) unless switched off."""
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, initial=initial, desc=desc, unit=unit, disable=not wanted(enabled))
