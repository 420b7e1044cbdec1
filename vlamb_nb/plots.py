"""One figure style for the package; every figure function returns a matplotlib Figure.

``save_figure`` writes png + pdf with deterministic file names and no timestamps, so a
regenerated figure only changes when its data does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

STYLE: dict[str, Any] = {
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "svg.hashsalt": "vlamb_nb",
}

PALETTE = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C",
           "#CCB974", "#64B5CD"]


def apply_style() -> None:
    import matplotlib as mpl

    mpl.rcParams.update(STYLE)
    mpl.rcParams["axes.prop_cycle"] = mpl.cycler(color=PALETTE)


def new_figure(width: float = 6.0, height: float = 3.5, **kwargs: Any):
    """A styled figure and axes (``plt.subplots`` arguments pass through)."""
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline", "pdf"):
        pass  # leave interactive backends alone
    import matplotlib.pyplot as plt

    apply_style()
    return plt.subplots(figsize=(width, height), **kwargs)


def save_figure(fig, paper: str, name: str, *, directory: str | Path | None = None,
                formats: tuple[str, ...] = ("png", "pdf")) -> list[Path]:
    """Write ``<figures>/<paper>/<name>.{png,pdf}`` without timestamps; return the paths."""
    from vlamb_nb.notebook import figures_dir

    out_dir = Path(directory) / paper if directory is not None else figures_dir(paper)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        p = out_dir / f"{name}.{fmt}"
        meta = {"CreationDate": None, "ModDate": None} if fmt == "pdf" else {"Software": None}
        fig.savefig(p, format=fmt, metadata=meta, bbox_inches="tight")
        paths.append(p)
    return paths
