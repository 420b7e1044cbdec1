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
    from vlamb_nb.plots import publish

    publish(RESULTS_MIME, {key: jsonable(value)})


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


def collect_figures(nb: dict[str, Any]) -> list[dict[str, Any]]:
    """Every figure an executed notebook saved (``save_figure``), in order, each with the recorded result it
    illustrates (``table``), looked for within the figure's section (the cells under one ``#``/``##`` heading): a
    result its own cell records, else one of the nearest cell before it that records one, else of the nearest
    after it; None when its section records nothing. Of a cell's results the first table (rows or named parts) is
    taken, else its first value. Deviations are never a figure's table (a report folds them away)."""
    import re

    from vlamb_nb.plots import FIGURE_MIME
    from vlamb_nb.run_view import DEVIATION, section_rank

    recorded: dict[int, list[tuple[str, bool]]] = {}  # cell -> its recorded (key, is a table), in order
    section: dict[int, int] = {}
    figures: list[tuple[int, dict[str, Any]]] = []
    current = 0
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") == "markdown":
            text = "".join(cell.get("source") or "")
            current += bool(re.search(r"^#{1,2}\s", text, flags=re.MULTILINE))
        section[i] = current
        for o in cell.get("outputs", []) or []:
            data = o.get("data") or {}
            for mime in (RESULTS_MIME, FIGURE_MIME):
                if mime not in data:
                    continue
                payload = json.loads(data[mime]) if isinstance(data[mime], str) else data[mime]
                if mime == RESULTS_MIME:
                    recorded.setdefault(i, []).extend((k, isinstance(v, dict | list)) for k, v in payload.items()
                                                      if section_rank(k) != DEVIATION)
                else:
                    figures.append((i, payload))
    out = []
    for i, payload in figures:
        cells = [c for c, keys in recorded.items() if keys and section[c] == section[i]]
        before, after = [c for c in cells if c < i], [c for c in cells if c > i]
        home = i if i in cells else before[-1] if before else after[0] if after else None
        keys = recorded[home] if home is not None else []
        table = next((k for k, is_table in keys if is_table), keys[0][0] if keys else None)
        out.append({**payload, "cell": i, "table": table})
    return out
