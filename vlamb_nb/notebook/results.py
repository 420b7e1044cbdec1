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


#: what a reader sees of an output: text, a table, a figure, a rendered sentence (a recorded result is not seen)
_VISIBLE = ("text/plain", "text/markdown", "text/html", "image/png", "image/svg+xml")
def reading_problems(nb: dict[str, Any]) -> list[str]:
    """What a reader of an executed notebook would be misled by, one line each: a section (the cells under one
    heading) whose code shows nothing, a progress widget saved in the state it started in (``0%``), a traceback,
    and a recorded comparison that counts a stand-in's number as a match with the paper's."""
    import re

    from vlamb_nb.plots import FIGURE_MIME

    out: list[str] = []
    heading, code_cells, shown = "(before the first heading)", 0, False

    def close() -> None:
        if code_cells and not shown:
            out.append(f"section {heading!r}: {code_cells} code cell(s), no output")

    for cell in nb.get("cells", []):
        src = "".join(cell.get("source") or "")
        if cell.get("cell_type") == "markdown":
            m = re.search(r"^(#{1,4})\s+(.+)$", src, flags=re.MULTILINE)
            if m:
                close()
                heading, code_cells, shown = m.group(2).strip(), 0, False
            continue
        if "parameters" in (cell.get("metadata") or {}).get("tags", []) or "injected-parameters" in \
                (cell.get("metadata") or {}).get("tags", []):
            continue
        code_cells += 1
        for o in cell.get("outputs", []) or []:
            kind = o.get("output_type")
            if kind == "error":
                out.append(f"section {heading!r}: {o.get('ename')}: {o.get('evalue')}")
            text = "".join(o.get("text") or "") if kind == "stream" else ""
            data = o.get("data") or {}
            if "Traceback (most recent call last)" in text:
                out.append(f"section {heading!r}: a traceback in its output")
            if "application/vnd.jupyter.widget-view+json" in data:
                plain = "".join(data.get("text/plain") or "")
                if re.search(r"\b0%\|", plain):
                    out.append(f"section {heading!r}: a progress widget saved at 0% ({plain.strip()[:60]})")
                continue
            # a saved figure is shown: inline where the kernel draws (a headless backend draws none) and on the page
            if text.strip() or any(str(data.get(k) or "").strip() for k in _VISIBLE) or FIGURE_MIME in data:
                shown = True
            if RESULTS_MIME in data:
                payload = data[RESULTS_MIME]
                payload = json.loads(payload) if isinstance(payload, str) else payload
                for key, value in payload.items():
                    rows = value if isinstance(value, list) else []
                    bad = [r for r in rows if isinstance(r, dict) and r.get("match") is True
                           and _stand_in(r.get("model"))]
                    if bad:
                        out.append(f"{key}: {len(bad)} row(s) of {bad[0]['model']} counted as matching the paper")
    close()
    return out


def _stand_in(model: Any) -> bool:
    """A model name that is a stand-in (a tiny checkpoint or a scripted stand-in): its numbers match no paper's."""
    from vlamb_nb.models.spec import ModelSpec

    name = str(model or "").strip()
    return bool(name) and ModelSpec.parse(name).kind in ("tiny", "scripted")

