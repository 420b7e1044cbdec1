"""Where things live: the checkout, the released data beside it, and the folders a run writes into.

The lowest layer of the package (no imports from it), so models, plots and notebooks can all ask it
without importing each other.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from vlamb_nb.errors import SettingError

TINY_SEED_ENV = "VLAMB_TINY_SEED"


def repo_root() -> Path:
    """The checkout the package was installed from (the folder holding ``notebooks/``), else the cwd.

    Only for reading what ships with the checkout (notebooks, the released data beside it); never a place
    to write, since an editable install points every copy of the repository here.
    """
    here = Path(__file__).resolve().parent.parent
    if (here / "notebooks").is_dir():
        return here
    return Path.cwd()


def _env_dir(var: str, default: Path, paper: str | None) -> Path:
    base = Path(os.environ[var]) if os.environ.get(var) else default
    out = base / paper if paper else base
    out.mkdir(parents=True, exist_ok=True)
    return out


def figures_dir(paper: str | None = None) -> Path:
    """Where figures are written: ``$VLAMB_FIGURES_DIR/<paper>``, else ``./figures/<paper>`` (the cwd)."""
    return _env_dir("VLAMB_FIGURES_DIR", Path.cwd() / "figures", paper)


def run_dir(paper: str | None = None) -> Path:
    """Where a notebook's working files go (stores, labels, samples), so a rerun resumes them:
    ``$VLAMB_RUN_DIR/<paper>``, else ``./runs/<paper>`` (the cwd)."""
    return _env_dir("VLAMB_RUN_DIR", Path.cwd() / "runs", paper)


#: the folder under a notebook's store folder where the offline profile's model path (a few items through the tiny
#: checkpoint) keeps its store: a path shown working, not a model's scores, so ``compare`` leaves it out
MODEL_PATH_DIR = "model-path"

#: the links a runs folder keeps to its two newest runs (``runs/latest``, ``runs/previous``): names no run may take
LATEST, PREVIOUS = "latest", "previous"


def new_folder(root: str | os.PathLike, base: str) -> Path:
    """A new folder ``root/base`` created exclusively, so two runs started in the same second get two folders
    (``<base>``, ``<base>-2``, ...) instead of writing into one."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        folder = root / (base if n == 1 else f"{base}-{n}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder.resolve()
    raise SettingError(f"{root}: 10,000 folders named {base}; name one yourself")


def link_latest(runs: str | os.PathLike, run: str | os.PathLike) -> Path | None:
    """Point ``runs/latest`` at ``run`` (a folder of ``runs``) and the run it pointed at before at
    ``runs/previous``, so the newest two runs have names a command can be copied with. The links are relative
    (the runs folder can be moved) and each is replaced whole; where links cannot be made (a file system without
    them) nothing is linked and None is returned."""
    runs, run = Path(runs), Path(run)
    latest = runs / LATEST
    before = os.readlink(latest) if latest.is_symlink() else None
    try:
        if before is not None and before != run.name and (runs / before).is_dir():
            _replace_link(runs / PREVIOUS, before)
        _replace_link(latest, run.name)
    except OSError:
        return None
    return latest


def _replace_link(link: Path, target: str) -> None:
    tmp = link.with_name(f".{link.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    os.symlink(target, tmp, target_is_directory=True)
    os.replace(tmp, link)


def shared_data_dir() -> Path | None:
    """The released data beside the checkout (``../shared/data``), when present."""
    env = os.environ.get("VLAMB_SHARED_DATA")
    cand = Path(env) if env else repo_root().parent / "shared" / "data"
    return cand if cand.is_dir() else None


def tiny_seed() -> int:
    """Seed of the tiny random checkpoints (``$VLAMB_TINY_SEED``, default 0); a different seed is a different
    checkpoint, which is how CI shows that no notebook depends on what a random model happens to say."""
    raw = os.environ.get(TINY_SEED_ENV, "0") or "0"
    try:
        return int(raw)
    except ValueError:
        raise SettingError(f"{TINY_SEED_ENV} must be an integer, got {raw!r}") from None


def sample_dir(paper: str, n: int | None, seed: int, kind: str = "sample") -> Path:
    """A generated sample's folder under the run folder, named by what makes it (so a rerun reuses it and
    two sizes never share a folder); nothing is left behind in the system's temporary folder."""
    out = run_dir(paper) / f"{kind}-n{n if n is not None else 'all'}-seed{seed}"
    out.mkdir(parents=True, exist_ok=True)
    return out


def slug(text: str) -> str:
    """``text`` as one safe file-name part (model ids hold ``/`` and ``:``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip("-.") or "x"


def store_path(directory: str | os.PathLike, *, benchmark: str, model: Any, setting: str,
               quantization: str | None = None) -> Path:
    """The one naming rule for prediction stores (notebooks, sweeps): ``<directory>/<model>[__<quantization>]/
    <benchmark>__<setting>.jsonl``. ``model`` is a :class:`~vlamb_nb.models.base.ModelInfo` (its id and
    quantization) or a name (with ``quantization``). One run per file: two quantizations never share a store, and
    a run that differs from the one this file holds (another decoding, other items) writes its own file beside
    it (``store.choose_store``), so a rerun resumes exactly its own run."""
    model_id = getattr(model, "model_id", model)
    quant = getattr(model, "quantization", quantization)
    name = slug(model_id) + (f"__{slug(quant)}" if quant else "")
    return Path(directory) / name / f"{slug(benchmark)}__{slug(setting)}.jsonl"
