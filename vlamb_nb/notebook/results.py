"""Results a notebook publishes: :func:`record` puts a key result under a custom MIME type, and
``reproduce`` copies it into the executed notebook's metadata (``metadata.vlamb.results``), so reports and tests
read numbers, never scraped text. Values are made JSON-safe (NaN and infinities become ``null``)."""

from __future__ import annotations

import json
import math
import os
from typing import Any

RESULTS_MIME = "application/vnd.vlamb.results+json"


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: numpy/pandas scalars and frames converted, NaN/inf/NA → None."""
    if value is None or isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if hasattr(value, "to_dict") and hasattr(value, "columns"):  # a DataFrame: records
        return [jsonable(r) for r in value.to_dict(orient="records")]
    if hasattr(value, "to_dict") and hasattr(value, "index"):  # a Series
        return jsonable(value.to_dict())
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return jsonable(value.tolist())
    if hasattr(value, "to_dict"):  # dataclass-like results (stats.Result, Finding)
        return jsonable(value.to_dict())
    try:
        import pandas as pd

        if value is pd.NA or value is pd.NaT:
            return None
    except ImportError:  # pragma: no cover - pandas is a core dependency
        pass
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def record(key: str, value: Any) -> None:
    """Publish a key result from a notebook cell (collected by ``reproduce``); shows nothing in the notebook
    and returns nothing, so a cell ending in ``record(...)`` prints no value."""
    payload = {key: jsonable(value)}
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # plain Python: nothing to display to
        return
    if get_ipython() is None:
        return
    display({RESULTS_MIME: payload, "text/plain": ""}, raw=True)


def collect_results(nb: dict[str, Any]) -> dict[str, Any]:
    """Gather every recorded result from an executed notebook (JSON dict)."""
    out: dict[str, Any] = {}
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []) or []:
            data = o.get("data") or {}
            if RESULTS_MIME in data:
                payload = data[RESULTS_MIME]
                if isinstance(payload, str):
                    payload = json.loads(payload)
                out.update(payload)
    return out
