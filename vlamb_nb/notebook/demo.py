"""What the offline profile shows of a real model's path: the tiny random checkpoint loaded, prompted and read.

A tiny random checkpoint proves that loading (4-bit where asked), the chat template, the image processor and
generation run on this machine; its text is noise, so what it measures is nothing, and the evaluation sections
run the scripted stand-in instead (:meth:`vlamb_nb.notebook.config.NotebookConfig.answering`). :func:`model_path`
runs it on a few items of one setting and says, computed, what came back.
"""

from __future__ import annotations

from typing import Any

from vlamb_nb.findings import Finding, plural


def model_path(bench: Any, model: Any, items: Any, setting: str, *, store_dir: Any = None, limit: int = 3,
               **options: Any) -> tuple[Any, Finding]:
    """``model`` on the first ``limit`` items of ``setting`` through the real run path (its own store, under
    ``store_dir``'s :data:`~vlamb_nb.paths.MODEL_PATH_DIR`, which ``compare`` leaves out): the answers as they came
    back (raw text, what the parser read, the parse error) and one computed sentence."""
    from pathlib import Path

    from vlamb_nb.paths import MODEL_PATH_DIR

    if store_dir is not None and Path(store_dir).name != MODEL_PATH_DIR:
        store_dir = Path(store_dir) / MODEL_PATH_DIR
    run = bench.run_settings(model, bench.first_items(items, limit), [setting], store_dir=store_dir,
                             progress=False, **options)[setting]
    answers = run[[c for c in ("item_id", "text", "valid", "parse_error", "parse", "error") if c in run.columns]].copy()
    if "text" in answers.columns:
        answers["text"] = [repr(str(t))[1:-1][:60] for t in answers["text"]]
    n = len(run)
    failed = int(run["error"].map(lambda e: isinstance(e, str) and bool(e)).sum()) if "error" in run.columns else 0
    read = int(run["valid"].fillna(False).astype(bool).sum()) if "valid" in run.columns else None
    info = model.info
    what = f"{info.model_id}" + (f" ({info.quantization})" if info.quantization else "")
    text = (f"{what} loaded and answered {plural(n - failed, 'request')} of {n} in setting {setting}"
            + (f"; {failed} failed" if failed else "")
            + (f"; the parser read {read} of {n}" if read is not None else "") + ". ")
    if getattr(getattr(model, "spec", None), "kind", None) == "tiny":
        text += ("A random checkpoint's text is noise, so these answers measure nothing: this shows the model path "
                 "(loading, chat template, image processor, generation, parsing) running; the sections below run "
                 "the scripted stand-in.")
    return answers, Finding(text, n > failed, value=float(read) if read is not None else None, n=n)


def scripted_recovered(bench: Any, runs: dict[str, Any], model: Any) -> Finding | None:
    """For a scripted stand-in: the accuracy each run recovers beside the chance it was scripted with, on the
    declared metric its outcomes are drawn for (the first, or ``bench.scripted_metric``), with that metric's
    interval; None for any other model."""
    from vlamb_nb.findings import join, within
    from vlamb_nb.models.base import Backend

    if getattr(getattr(model, "info", None), "backend", None) is not Backend.SCRIPTED:
        return None
    chances = bench.scripted_accuracies()
    name = getattr(bench, "scripted_metric", None)
    metric = next((m for m in bench.metrics if m.name == name), bench.metrics[0] if bench.metrics else None)
    if metric is None:
        return None
    out = []
    for setting, run in runs.items():
        sets = metric.unit_sets(run, slices=False) if setting in chances else None
        if not sets:
            continue
        u = sets[0]
        lo, hi, how = metric.interval(u)
        out.append(within(metric.value_of(u), lo, hi, 100 * chances[setting], what=f"{metric.name} in {setting}",
                          target_name="the chance scripted", method=how.split(",")[0], n=len(u.values),
                          n_of=metric.unit))
    return join(out) if out else None

