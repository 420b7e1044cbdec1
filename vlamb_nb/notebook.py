"""Small helpers the notebooks call: where figures go, and recording key results as data.

Results are displayed under a custom MIME type; ``vlamb-nb reproduce`` copies them into the
executed notebook's metadata (``metadata.vlamb.results``) so reports and tests read numbers,
never scraped text.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

RESULTS_MIME = "application/vnd.vlamb.results+json"


def repo_root() -> Path:
    """The checkout root (the folder holding ``notebooks/``), else the working directory."""
    here = Path(__file__).resolve().parent.parent
    if (here / "notebooks").is_dir():
        return here
    return Path.cwd()


def figures_dir(paper: str | None = None) -> Path:
    """Where figures are written: ``$VLAMB_FIGURES_DIR`` or ``<repo>/figures`` (one folder per paper)."""
    base = Path(os.environ.get("VLAMB_FIGURES_DIR") or repo_root() / "figures")
    out = base / paper if paper else base
    out.mkdir(parents=True, exist_ok=True)
    return out


def shared_data_dir() -> Path | None:
    """The released data beside the checkout (``../shared/data``), when present."""
    env = os.environ.get("VLAMB_SHARED_DATA")
    cand = Path(env) if env else repo_root().parent / "shared" / "data"
    return cand if cand.is_dir() else None


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))


def record(key: str, value: Any) -> Any:
    """Publish a key result from a notebook cell (shown as JSON, collected by ``reproduce``)."""
    payload = {key: _jsonable(value)}
    try:
        from IPython.display import display

        display({RESULTS_MIME: payload, "text/plain": f"[recorded {key}]"}, raw=True)
    except ImportError:  # plain Python: nothing to display to
        pass
    return value


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
