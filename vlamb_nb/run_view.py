"""The one view of a reproduce run that both of its pages render, so ``report.md`` and ``report.html`` cannot
disagree on what a paper's section holds or in which order.

:func:`build` reads the run once: each notebook's outcome and recorded results (``results.json``), its figures
placed beside the table they belong to, and the scores of every prediction store the notebook wrote, read from
the stores' run records (:class:`vlamb_nb.record.RunRecord`, every declared metric of the paper's ``METRICS``
with its interval and n of N). A metric added to a paper's ``METRICS`` is in each record its scoring writes, and
so in both pages with no other edit. The renderers (:func:`vlamb_nb.reproduce.write_report` for markdown,
:func:`vlamb_nb.report_html.run_page` for HTML) only lay the view out.

Each notebook's results go in one order, by the words of a key (:func:`section_rank`): the comparisons with
the paper, then the other results, then the audit, then the deviations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: a result's place in its notebook's section, by :func:`section_rank`
COMPARISON, RESULT, AUDIT, DEVIATION = range(4)
#: the columns of a notebook's scores table (one row per store and declared metric, the whole set)
SCORE_COLUMNS = ("store", "model", "setting", "metric", "value", "95% CI", "n", "coverage")


#: the words of a result's key that place it (a key is read as words split at ``_``, ``-`` and spaces)
AUDIT_WORDS = frozenset({"audit", "check", "checks", "findings", "mismatches"})  # a computed ``…_finding``: a result


def section_rank(key: str) -> int:
    """Where a result goes in its notebook's section, by the words of its key (the naming rule the notebooks
    follow): ``…deviations`` last (folded on the page); a comparison with the paper (``paper_vs_ours``,
    ``table4_vs_paper``, ``table1_comparison``; not ``correct_vs_wrong``) first; then the other results; then
    the audit (``audit``, ``…_checks``, ``audit_findings``)."""
    words = [w for w in re.split(r"[_\-\s]+", key.lower()) if w]
    if words and words[-1] == "deviations":
        return DEVIATION
    if "comparison" in words or {"vs", "paper"} <= set(words):
        return COMPARISON
    if AUDIT_WORDS.intersection(words):
        return AUDIT
    return RESULT


#: titles a key's words do not make readable on their own (the rest: :func:`section_title`'s word rule)
TITLES = {
    "paper_vs_ours": "The paper vs ours", "paper_vs_recomputed": "The paper vs recomputed",
    "ours_table4": "Table 4 (ours)", "judge_human_kappa": "Judge–human agreement (kappa)",
    "published_accuracy_wilson_all": "Published accuracy with Wilson intervals (all)",
    "slice_accuracy_ci": "Accuracy by slice with CI", "finetune_deviations": "Fine-tuning deviations",
    "figure_runs": "Runs behind the figures", "n_train": "Training items (count)",
    "n_unparsed": "Unparsed answers (count)", "fig6_categories_coco_rows": "Figure 6 categories (COCO rows)",
    "not_derivable": "What the release and the paper cannot rebuild", "one_patch_check": "One-patch check",
    "run": "The run",
}
#: words written as a reader knows them (papers, acronyms, abbreviations)
TITLE_WORDS = {
    "ci": "CI", "iou": "IoU", "id": "ID", "f1": "F1", "vqa": "VQA", "llm": "LLM", "vlm": "VLM", "ocr": "OCR",
    "coco": "COCO", "cot": "CoT", "refadv": "Ref-Adv", "vflute": "V-FLUTE", "mucar": "MUCAR", "vague": "VAGUE",
    "racquet": "RACQUET", "qlora": "QLoRA", "bh": "BH", "wilson": "Wilson", "stats": "statistics",
    "eval": "evaluation", "acc": "accuracy",
}


def section_title(key: str) -> str:
    """A recorded result's key as its section title on both pages (``table_b1_ours`` -> "Table B1 (ours)",
    ``n_unparsed`` -> "Unparsed answers (count)", ``table4_vs_paper`` -> "Table 4 vs the paper"): one title per
    key, from :data:`TITLES` or the key's words (tables and figures by number, papers and acronyms as written,
    ``n_`` as a count, ``ours`` in brackets at the end); never the raw key."""
    if key in TITLES:
        return TITLES[key]
    words = [w for w in re.split(r"[_\-\s]+", str(key)) if w]
    out: list[str] = []
    i = 0
    while i < len(words):
        w, lw = words[i], words[i].lower()
        nxt = words[i + 1].lower() if i + 1 < len(words) else ""
        if m := re.fullmatch(r"(table|fig|figure)(\d+[a-z]?)", lw):
            out.append(("Table " if m.group(1) == "table" else "Figure ") + m.group(2).upper())
        elif lw in ("table", "fig", "figure") and re.fullmatch(r"[a-z]?\d+[a-z]?", nxt):
            out.append(("Table " if lw == "table" else "Figure ") + nxt.upper())
            i += 1
        elif lw == "s" and out and out[-1] == "Ref-Adv":
            out[-1] = "Ref-Adv-s"
        elif lw == "ours":
            out.append("(ours)" if i == len(words) - 1 else "our" if i == 0 else "ours")
        elif lw == "vs":
            out.append("vs the" if nxt == "paper" else "vs")
        else:
            out.append(TITLE_WORDS.get(lw, w))
        i += 1
    if len(words) > 1 and words[0].lower() == "n" and out:  # a count: "n_items" -> "Items (count)"
        out = out[1:] + ["(count)"]
    text = " ".join(out) or str(key)
    return text[:1].upper() + text[1:]


@dataclass
class Block:
    """One recorded result of a notebook, with the figures its cell saved for it."""

    key: str
    value: Any
    rank: int
    figures: list[Any] = field(default_factory=list)


@dataclass
class StoreScores:
    """What one prediction store's run record says: every declared metric on the whole set, and n of N."""

    store: str  # the store's path relative to the run folder
    benchmark: str
    model: str
    setting: str
    stage: str
    coverage: Any  # vlamb_nb.record.Coverage
    metrics: list[Any]  # vlamb_nb.record.MetricValue, the whole set only
    deviations: list[str] = field(default_factory=list)
    error: str | None = None  # why its record could not be read (said on the page, never a lost report)
    #: what the record could not be checked against (no store beside it), or scored against other items
    checks: list[str] = field(default_factory=list)

    def coverage_text(self) -> str:
        c = self.coverage
        if c is None:
            return ""
        n = f"{c.answered} of {c.items} answered" if c.items is not None else f"{c.answered} answered"
        return n + (f", {c.failed} failed" if c.failed else "") + (f", {c.missing} missing" if c.missing else "") \
            + "".join(f"; {why}" for why in self.checks)

    def rows(self) -> list[dict[str, Any]]:
        """Its rows of the scores table (:data:`SCORE_COLUMNS`); a store with no metric value says why."""
        base = {"store": self.store, "model": self.model, "setting": self.setting, "coverage": self.coverage_text()}
        if self.error:
            return [{**base, "metric": "(record unreadable)", "value": self.error}]
        if not self.metrics:
            why = "answers only (not scored)" if self.stage != "scored" else "no metric value"
            return [{**base, "metric": "–", "value": why}]
        out = []
        for m in self.metrics:  # a record is a file: a value that is no number is shown as text, never formatted
            ci = f"[{m.ci_low:.1f}, {m.ci_high:.1f}]" if _number(m.ci_low) and _number(m.ci_high) else ""
            out.append({**base, "metric": str(m.metric), "value": m.value if _number(m.value) else str(m.value),
                        "95% CI": ci, "n": m.n if isinstance(m.n, int) else str(m.n)})
        return out


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


@dataclass
class NotebookView:
    """One notebook's section of the run's pages."""

    name: str
    status: str  # "ok", "failed", "not run"
    seconds: float = 0.0
    parameters: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None
    error: str | None = None
    failed_cell: int | None = None
    failed_source: str | None = None
    warnings: list[str] = field(default_factory=list)
    headline_figures: list[Any] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)  # comparisons, results, audit: in that order
    deviations: list[Block] = field(default_factory=list)
    scores: list[StoreScores] = field(default_factory=list)
    rest: list[Any] = field(default_factory=list)  # figures of the notebook no recorded table claims
    outside: list[str] = field(default_factory=list)  # figures saved outside the run's figures folder
    not_derivable: list[Any] = field(default_factory=list)

    def score_rows(self) -> list[dict[str, Any]]:
        return [r for s in self.scores for r in s.rows()]


@dataclass
class RunView:
    """A reproduce run as its pages show it."""

    run_id: str
    notebooks: list[NotebookView]
    card_figures: list[Any] = field(default_factory=list)
    other_figures: list[Any] = field(default_factory=list)
    other_scores: list[StoreScores] = field(default_factory=list)  # stores in no notebook's folder

    @property
    def n_ok(self) -> int:
        return sum(n.status == "ok" for n in self.notebooks)


def build(results: dict[str, dict[str, Any]], run_dir: str | Path, placement: Any) -> RunView:
    """The view of the run in ``run_dir`` from its ``results.json`` content and its figures, each in its place
    (``placement``: :func:`vlamb_nb.report_html.place_figures` of the run's figures folder; each figure is taken
    once, so a placement builds one view)."""
    run_dir = Path(run_dir)
    scores = store_scores(run_dir)
    notebooks = []
    for name, r in results.items():
        res = r.get("results") or {}
        if "not_derivable" not in res and (declared := _declared_not_derivable(name)):
            res = {**res, "not_derivable": declared}  # the paper's declared list, whether or not its notebook ran
        keys = sorted((k for k in res if k != "headline"), key=lambda k: (section_rank(k), list(res).index(k)))
        blocks = [Block(k, res[k], section_rank(k), placement.take(name, k)) for k in keys]
        notebooks.append(NotebookView(
            name=name, status="not run" if r.get("skipped") else "ok" if r.get("ok") else "failed",
            seconds=float(r.get("seconds") or 0.0), parameters=dict(r["parameters"]) if isinstance(r.get("parameters"), dict) else {},
            skipped=r.get("skipped"), error=r.get("error"), failed_cell=r.get("failed_cell"),
            failed_source=r.get("failed_source"), warnings=list(r.get("warnings") or []),
            headline_figures=placement.take(name, "headline"),
            blocks=[b for b in blocks if b.rank < DEVIATION], deviations=[b for b in blocks if b.rank == DEVIATION],
            scores=scores.pop(name, []), outside=list(placement.outside.get(name, [])),
            not_derivable=list(res.get("not_derivable") or [])))
    for n in notebooks:  # after every table took its own figures
        n.rest = placement.rest(n.name)
    return RunView(run_id=run_dir.name, notebooks=notebooks, card_figures=placement.card,
                   other_figures=placement.other, other_scores=[s for v in scores.values() for s in v])


def _declared_not_derivable(name: str) -> list[dict[str, str]]:
    """What the registered paper ``name`` declares it cannot rebuild (nothing for a notebook of no paper, or a
    paper that cannot be loaded: its own line says why elsewhere); a list that cannot be read is one entry
    saying so, never silently none."""
    from vlamb_nb.benchmarks import BrokenPaper, get_benchmark, registered
    from vlamb_nb.errors import DataError

    try:
        if name not in {p.name for p in registered()}:
            return []
        return get_benchmark(name).not_derivable()
    except DataError as e:
        return [{"item": "what the paper cannot rebuild", "reason": f"its list could not be read: {e}"}]
    except (BrokenPaper, ImportError):
        return []


def store_scores(run_dir: str | Path) -> dict[str, list[StoreScores]]:
    """Every run record under ``run_dir``, by the top folder it lies in (a notebook writes its stores under
    ``<run>/<notebook>/``); a record that cannot be read is listed with why."""
    from vlamb_nb.errors import DataError
    from vlamb_nb.record import SUFFIX, RunRecord

    run_dir = Path(run_dir)
    root = run_dir.resolve()
    out: dict[str, list[StoreScores]] = {}
    for path in sorted(run_dir.glob(f"*/**/*{SUFFIX}")):
        rel = path.relative_to(run_dir)
        if rel.parts[0] in ("figures", "tables") or not path.resolve().is_relative_to(root):
            continue  # a link (of a file or a folder) out of the run folder is never read
        stem = path.name[: -len(SUFFIX)]
        numbered = re.fullmatch(r"(.+)\.run-(\d+)", stem)  # one run of a store holding several (record_path)
        store = rel.with_name((numbered.group(1) if numbered else stem) + ".jsonl").as_posix() \
            + (f" (run {numbered.group(2)})" if numbered else "")
        try:
            rec = RunRecord.read(path)
        except DataError as e:
            s = StoreScores(store=store, benchmark="", model="", setting="", stage="", coverage=None, metrics=[],
                            error=str(e))
        else:
            s = StoreScores(store=store, benchmark=rec.benchmark, model=rec.model.model_id, setting=rec.setting,
                            stage=rec.stage, coverage=rec.coverage, metrics=[m for m in rec.metrics if m.whole],
                            deviations=[str(d) for d in rec.deviations],
                            checks=[why for why in (rec.unchecked, rec.data.scored_elsewhere) if why])
        out.setdefault(rel.parts[0], []).append(s)
    return out
