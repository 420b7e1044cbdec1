"""The report card: where one model stands on every registered paper, next to the models the papers tested.

Each paper notebook records its headline numbers (``NotebookConfig.record_headline``): one :class:`Headline`
per metric and slice — our estimate with its interval, the published models beside it, and our rank among
them with a rank interval, so a reader sees at once how sure the placing is:

- where per-item data exist for the comparators (a paper's released per-row prediction files), ours and theirs
  are resampled *together* (the same images in every resample) and the rank interval is the 2.5–97.5
  percentile of our rank over the resamples; paired tests (McNemar, Holm-adjusted) go with each file;
- where only published values exist, each is drawn from its own sampling distribution (binomial at the
  published test size: the published values' own uncertainty) and ours from our bootstrap, independently.

:func:`build` turns the headlines ``reproduce`` collected into a card; :func:`markdown` and :func:`figure`
render it (the top of ``report.md`` and ``figures/card/report_card.png``). A card made from the offline profile
says so in its title and its figure is a stamped pipeline demo.

The ranking engine (:class:`Headline`, resampling, :func:`place`) lives in :mod:`vlamb_nb.stats.ranking`, so the
papers rank their headlines without importing the card; its names stay importable from here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vlamb_nb.stats.ranking import (
    N_RESAMPLES,
    RANK_LEVEL,
    Comparator,
    Headline,
    from_dict,
    headline_among_published,
    interval,
    place,
    plural,
    published,
    published_draws,
    rank_of,
    resample_weights,
    weighted_mean,
)

__all__ = [
    "COLUMNS", "DEMO_NOTE", "N_RESAMPLES", "RANK_LEVEL", "Card", "Comparator", "Headline", "build", "figure",
    "from_dict", "from_run", "headline_among_published", "interval", "markdown", "one_paper", "place", "plural",
    "published", "published_draws", "rank_of", "resample_weights", "save", "table", "weighted_mean",
]


# -- the card -------------------------------------------------------------------------------------------------
@dataclass
class Card:
    model: str
    profile: str
    headlines: list[Headline]
    papers: dict[str, str]  # paper -> status ("ok", "not run", "failed: ...", "not run: ...")
    subtitle: str = ""  # what produced the card, when it is not one reproduce run (the example)

    @property
    def demo(self) -> bool:
        return self.profile == "offline"

    @property
    def title(self) -> str:
        if self.demo:
            return (f"Report card: {self.model} — PIPELINE DEMO (offline profile: stand-in answers that measure "
                    "nothing)")
        return f"Report card: {self.model} ({self.profile} profile)"

    def frame(self):
        """One row per headline: the card as a table (numbers stay numbers)."""
        import pandas as pd

        rows = []
        for h in self.headlines:
            best = _best(h)
            rows.append({"paper": h.paper, "metric": h.metric, "slice": h.slice, "setting": h.setting,
                         "ours": h.value, "ci_low": h.ci_low, "ci_high": h.ci_high, "n": h.n, "unit": h.unit,
                         "rank": h.rank, "rank_low": h.rank_low, "rank_high": h.rank_high, "of": h.n_ranked,
                         "best published": best.name if best else None,
                         "best value": best.value if best else None, "profile": h.profile,
                         "status": h.status})
        return pd.DataFrame(rows)


def _best(h: Headline) -> Comparator | None:
    cands = [c for c in h.comparators if c.value is not None and math.isfinite(c.value) and not c.bound]
    if not cands:
        return None
    return max(cands, key=lambda c: c.value if h.higher_is_better else -c.value)


def build(results: dict[str, dict[str, Any]], *, papers: Sequence[str] | None = None,
          model: str | None = None) -> Card:
    """A card from ``reproduce``'s per-notebook results (``{notebook: {"ok", "error", "results", ...}}``).

    Every registered paper gets a place: a paper whose notebook did not run, failed or recorded no headline is
    shown as such, never left out.
    """
    from vlamb_nb.benchmarks import registered

    papers_now = registered()  # the registry's and the installed papers'
    names = list(papers) if papers is not None else [p.name for p in papers_now]
    heads: list[Headline] = []
    status: dict[str, str] = {}
    for p in names:
        nbs = [nb for nb in next((x.notebooks for x in papers_now if x.name == p), (p,)) if nb in results]
        main = results.get(p) or (results.get(nbs[0]) if nbs else None)
        if main is None:
            status[p] = "not run"
            continue
        if main.get("skipped"):
            status[p] = f"not run: {main['skipped']}"
            continue
        if not main.get("ok"):
            status[p] = f"failed: {main.get('error') or 'unknown error'}"
            continue
        rows = (main.get("results") or {}).get("headline") or []
        if not rows:
            status[p] = "no headline recorded"
            continue
        status[p] = "ok"
        heads += [data_rule(from_dict(r)) for r in rows]
    profiles = sorted({h.profile for h in heads if h.profile})
    models = sorted({h.model for h in heads if h.model})
    profile = "offline" if "offline" in profiles else (profiles[0] if profiles else "offline")
    return Card(model=model or (", ".join(models) if models else "(no model)"), profile=profile, headlines=heads,
                papers=status)


def one_paper(rows: Sequence[Headline], *, subtitle: str = "") -> Card:
    """A card of one paper's headline rows (the model and profile the rows name); every other registered paper is
    shown as not run. The example card (``vlamb-nb card --example``) is one."""
    from vlamb_nb.benchmarks import list_benchmarks
    from vlamb_nb.errors import DataError

    if not rows:
        raise DataError("a card needs at least one headline row")
    ran = {h.paper for h in rows}
    return Card(model=rows[0].model, profile=rows[0].profile, headlines=list(rows),
                papers={p: ("ok" if p in ran else "not run") for p in list_benchmarks()}, subtitle=subtitle)


#: a scripted stand-in's model id starts with this (vlamb_nb.benchmarks.base.SCRIPTED_NAME)
SCRIPTED_PREFIX = "scripted stand-in"


def data_rule(h: Headline) -> Headline:
    """A row is ranked among the paper's models only for a model on the paper's data: a stand-in (the offline
    profile's tiny checkpoint or scripted stand-in) and a generated sample are never ranked, and
    a rank on part of the release (``limit``, items the release leaves out) or on other files says so. What the
    data lacks — items left out and why, counts accepted with ``--allow-mismatch`` — goes with the row's
    deviations, so the card and ``report.md`` say it."""
    if str(h.model or "").startswith(SCRIPTED_PREFIX) or h.profile == "offline":
        # a stand-in's numbers say how the pipeline reads answers, not how good a model is: never ranked
        h.rank = h.rank_low = h.rank_high = h.n_ranked = None
        h.rank_basis = "not ranked: a stand-in, not a model"
    d = h.data
    if not d:
        return h
    if d.get("kind") == "sample":
        h.rank = h.rank_low = h.rank_high = h.n_ranked = None
        h.rank_basis = "not ranked: a generated sample, not the paper's data"
    elif h.rank is not None and d.get("n_run") is not None and d.get("n_items") and d["n_run"] < d["n_items"]:
        h.rank_basis = f"on a subset: {d['n_run']:,} of {d['n_items']:,} items"
        if left := _left_out(d):
            h.rank_basis += f", {left:,} left out of the release"
    elif h.rank is not None and d.get("kind") == "source":
        h.rank_basis = "on given files, not the fetched release"
    for note in data_notes(d):
        if note not in h.deviations:
            h.deviations = [*h.deviations, note]
    return h


def _left_out(d: dict[str, Any]) -> int:
    return sum(int(x.get("items") or 0) + int(x.get("also") or 0) for x in d.get("left_out") or [])


def data_notes(d: dict[str, Any]) -> list[str]:
    """What a row's data lacks, one line each: counts accepted at fetch time, and items left out with the reason."""
    from vlamb_nb.datahome import LeftOut

    return ([f"data: {x}" for x in d.get("deviations") or []]
            + [f"data: {LeftOut.from_dict(x).text()}" for x in d.get("left_out") or [] if isinstance(x, dict)])


def data_text(h: Headline) -> str:
    """What a card row stands on: ``release@revision · n of N``, or what else it is."""
    d = h.data
    if not d:
        return "unknown"
    if d.get("kind") == "sample":
        return "generated sample (not ranked)"
    rev = f"@{str(d['revision'])[:7]}" if d.get("revision") else ""
    what = f"{d.get('release', '')}{rev}" if d.get("kind") == "release" else (d.get("label") or d.get("release", ""))
    n, total = d.get("n_run"), d.get("n_items")
    if n is not None and total:
        what += f" · {n:,} of {total:,}"
    if left := _left_out(d):
        what += f" ({left:,} left out)"
    return what


def _fmt(v: Any, d: int = 1) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return f"{v:.{d}f}"


def _rank_text(h: Headline) -> str:
    """``rank [low–high] of n``; a rank without its interval says why, never ``nan``."""
    if h.rank is None:
        return "–"
    bounds = (h.rank_low, h.rank_high)
    if any(b is None or (isinstance(b, float) and not math.isfinite(b)) for b in bounds):
        return f"{h.rank} of {h.n_ranked} (no interval: no resamples of this row)"
    return f"{h.rank} [{h.rank_low}–{h.rank_high}] of {h.n_ranked}"


#: what a card of the offline profile says first, in every rendering (report.md, report.html)
DEMO_NOTE = ("These numbers come from the offline profile's stand-ins (the scripted stand-in, not a model: answers "
             "written from the gold at a stated chance): they show that every paper runs end to end, parses, scores "
             "and tests, and measure no model. Name a model (`vlamb-nb reproduce -p model=...`) for a real card.")
#: the card table's columns, in every rendering
COLUMNS = ("paper", "setting", "metric", "slice", "ours [95% CI]", "n", "rank [95% interval] of", "best published",
           "data", "profile", "deviations")
#: where a paper that did not run, failed or recorded no headline says so (its row's other cells are "–")
STATE_COLUMN = "ours [95% CI]"
#: how ranks and their intervals are read, under the card table
RANK_NOTE = ("Rank 1 is best and a tie shares the better rank; a rank interval is the middle 95% of our rank over "
             "resamples (per-item data: ours and the released runs resampled together; published values: their "
             "binomial at the published test size). Where a paper gives no number, ours stands alone.")
#: the columns of the paired tests against the released per-row predictions
TEST_COLUMNS = ("paper", "setting", "slice", "released run", "theirs", "ours − theirs (pp)", "p", "p (Holm)")


def table(card: Card) -> tuple[list[dict[str, str]], list[str], list[dict[str, str]]]:
    """The card as display text, for every rendering: one row per headline (:data:`COLUMNS`; a paper that did
    not run, failed or recorded no headline is one row saying its ``state`` in :data:`STATE_COLUMN`), the numbered deviations behind the
    rows (a row's ``deviations`` cell names them by number), and the paired tests (:data:`TEST_COLUMNS`)."""
    notes: list[str] = []

    def note_ids(devs: list[str]) -> str:
        ids = []
        for d in devs:
            if d not in notes:
                notes.append(d)
            ids.append(str(notes.index(d) + 1))
        return ", ".join(ids) if ids else "–"

    rows: list[dict[str, str]] = []
    by_paper: dict[str, list[Headline]] = {}
    for h in card.headlines:
        by_paper.setdefault(h.paper, []).append(h)
    for paper, state in card.papers.items():
        if state != "ok":
            rows.append({**dict.fromkeys(COLUMNS, "–"), "paper": paper, STATE_COLUMN: state, "state": state})
            continue
        for h in by_paper.get(paper, []):
            ours = f"{_fmt(h.value)} [{_fmt(h.ci_low)}, {_fmt(h.ci_high)}]" if h.value is not None else h.status
            rank = _rank_text(h)
            if h.rank_basis.startswith(("not ranked", "on a subset", "on given")):
                rank += f" ({h.rank_basis})"
            best = _best(h)
            n = f"{h.n} {h.unit if h.n == 1 else plural(h.unit)}" if h.n else "–"
            rows.append(dict(zip(COLUMNS, (
                paper, str(h.setting) or "–", str(h.metric), str(h.slice), ours, n, rank,
                f"{best.name} {_fmt(best.value)}" if best else "–", data_text(h), str(h.profile),
                note_ids(h.deviations)), strict=True)))
    tests = [dict(zip(TEST_COLUMNS, (h.paper, str(h.setting), str(h.slice), str(c.name), _fmt(c.value), _fmt(c.diff),
                                     _p(c.p), _p(c.p_holm)), strict=True))
             for h in card.headlines for c in h.comparators if c.p is not None]
    return rows, notes, tests


def markdown(card: Card) -> str:
    """The card as the top of ``report.md``: one row per headline, its rank among the published models, the
    profile and deviations behind every row (deviations as numbered notes below the table)."""
    lines = [f"# {card.title}", ""]
    if card.subtitle:
        lines += [f"_{card.subtitle}_", ""]
    if card.demo:
        lines += [f"> **Pipeline demo.** {DEMO_NOTE}", ""]
    rows, notes, tests = table(card)
    lines += ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:  # a paper's state stands out in its row
        lines.append("| " + " | ".join(f"**{_md(r[c])}**" if "state" in r and c == STATE_COLUMN else _md(r[c])
                                       for c in COLUMNS) + " |")
    lines += ["", RANK_NOTE, ""]
    if tests:
        lines += ["**Paired tests against the released per-row predictions** (ours − theirs on the same rows, "
                  "McNemar, Holm-adjusted within each setting and slice)", "",
                  "| " + " | ".join(TEST_COLUMNS) + " |", "|" + "---|" * len(TEST_COLUMNS)]
        lines += ["| " + " | ".join(_md(t[c]) for c in TEST_COLUMNS) + " |" for t in tests]
        lines.append("")
    if notes:
        lines += ["**Deviations behind the rows**", ""] + [f"{i}. {_md(d)}" for i, d in enumerate(notes, 1)] + [""]
    return "\n".join(lines)


def _p(p: Any) -> str:
    from vlamb_nb.stats.result import format_p

    return format_p(p)


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


#: one marker per released run within a panel (they are named in the panel's legend)
MARKERS = ("s", "^", "v", "P", "X", "*", "h", "p", "<", ">")


def figure(card: Card):
    """One panel per paper: each headline metric on its own line, ours (blue diamond, 95% CI) among the released
    runs (dark grey, one marker each, named in the legend, the same rows as ours) and the published models (light
    grey dots; ▶/◀ a printed bound); each line's label gives our rank and its interval."""
    from vlamb_nb.plots import NEUTRAL, SEMANTIC, new_figure

    papers = list(card.papers)
    rows_per = {p: [h for h in card.headlines if h.paper == p] for p in papers}
    heights = [max(0.6, len(rows_per[p])) if card.papers[p] == "ok" else 0.6 for p in papers]
    fig, axes = new_figure(8.5, 1.0 + 0.45 * sum(heights) + 0.45 * len(papers), nrows=len(papers), squeeze=False,
                           gridspec_kw={"height_ratios": heights})
    for ax, p in zip(axes[:, 0], papers, strict=True):
        rows = rows_per[p]
        state = card.papers[p]
        ax.set_title(p, loc="left", fontsize=10, fontweight="bold")
        if state != "ok" or not rows:
            ax.text(0.5, 0.5, state if state != "ok" else "no headline", ha="center", va="center",
                    transform=ax.transAxes, color=NEUTRAL, fontsize=8, wrap=True)
            ax.set_yticks([])
            ax.set_xticks([])
            ax.grid(False)
            for spine in ax.spines.values():
                spine.set_visible(False)
            continue
        named = list(dict.fromkeys(c.name for h in rows for c in h.comparators if c.basis == "per-item"))
        marker = {n: MARKERS[i % len(MARKERS)] for i, n in enumerate(named)}
        labels, seen = [], set()
        for i, h in enumerate(rows):
            y = len(rows) - 1 - i
            for c in h.comparators:
                if c.value is None or not math.isfinite(c.value):
                    continue
                per_item = c.basis == "per-item"
                color = "#4D4D4D" if per_item else "#B0B0B0"
                m = marker[c.name] if per_item else (">" if c.bound == ">" else "<" if c.bound == "<" else "o")
                if c.ci_low is not None and c.ci_high is not None and not c.bound:
                    ax.plot([c.ci_low, c.ci_high], [y, y], color=color, lw=0.7, alpha=0.5, zorder=1)
                label = c.name if per_item else "published models"
                ax.plot([c.value], [y], marker=m, color=color, ms=5 if per_item else 4, ls="", zorder=2,
                        label=None if label in seen else label)
                seen.add(label)
            if h.value is not None and math.isfinite(h.value):
                if h.ci_low is not None and h.ci_high is not None and math.isfinite(h.ci_low):
                    ax.plot([h.ci_low, h.ci_high], [y, y], color=SEMANTIC["ours"], lw=2.2, zorder=3)
                ax.plot([h.value], [y], marker="D", color=SEMANTIC["ours"], ms=6, ls="", zorder=4,
                        label=None if "ours" in seen else f"ours ({card.model})")
                seen.add("ours")
            rank = (f"rank {h.rank} [{h.rank_low}–{h.rank_high}] of {h.n_ranked}" if h.rank is not None
                    else "no published value")
            if h.rank_basis.startswith("not ranked"):  # its reason: a stand-in, or a generated sample
                rank = "not ranked: " + ("a stand-in" if "stand-in" in h.rank_basis else "generated sample")
            elif h.rank_basis.startswith(("on a subset", "on given")):
                rank += f" ({h.rank_basis})"
            direction = " (lower is better)" if not h.higher_is_better else ""
            setting = f" ({h.setting})" if h.setting and len({x.setting for x in rows}) > 1 else ""
            labels.append(f"{h.metric} · {h.slice}{setting}{direction}\n{rank}")
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels(labels[::-1], fontsize=7)
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_xlim(0, 100)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=6, frameon=False)
    axes[-1, 0].set_xlabel("%  (ours with its 95% CI; released runs on the same rows; published models at their n)")
    fig.suptitle(card.title + (f"\n{card.subtitle}" if card.subtitle else ""), fontsize=9, x=0.01, ha="left")
    fig.tight_layout()
    return fig


def save(card: Card, *, directory: Any = None, name: str = "report_card") -> None:
    """Save the card's figure under ``<figures>/card/`` (``demo/``, stamped, for the offline profile)."""
    from vlamb_nb.plots import save_figure

    save_figure(figure(card), "card", name, directory=directory, demo=card.demo)


def from_run(run_dir: Any, *, model: str | None = None) -> Card:
    """The card of a finished ``reproduce`` run, rebuilt from its ``results.json``."""
    from pathlib import Path

    from vlamb_nb.errors import DataError
    from vlamb_nb.jsonl import read_json

    path = Path(run_dir) / "results.json"
    if not path.is_file():
        raise DataError("no results.json: not a reproduce run folder", source=str(run_dir))
    results = read_json(path, expect=dict, what="a reproduce run's notebooks")  # empty, cut short, not JSON: a line
    for notebook, entry in results.items():
        _check_entry(entry, str(path), str(notebook))
    return build(results, model=model)


_NUM = (int, float)
#: what a results.json entry's fields and a headline row's fields may hold (where present; ``None`` allowed unless
#: the field is in the required set): a damaged file is refused naming the entry and field, never a traceback later
_ENTRY = {"ok": (bool,), "skipped": (str, type(None)), "error": (str, type(None)), "results": (dict, type(None))}
_ROW = {"paper": (str,), "metric": (str,), "slice": (str,), "value": (*_NUM, type(None)),
        **{k: (*_NUM, type(None)) for k in ("ci_low", "ci_high")},
        **{k: (int, type(None)) for k in ("n", "rank", "rank_low", "rank_high", "n_ranked")},
        **{k: (str,) for k in ("unit", "ci_unit", "setting", "rank_basis", "note", "model", "profile", "status")},
        "higher_is_better": (bool,), "comparators": (list,), "deviations": (list,), "data": (dict, type(None))}
_COMPARATOR = {"name": (str,), "value": (*_NUM, type(None)), "n": (int, type(None)),
               **{k: (str,) for k in ("basis", "source", "bound")},
               **{k: (*_NUM, type(None)) for k in ("ci_low", "ci_high", "diff", "p", "p_holm")}}


def _check(d: Any, spec: dict[str, tuple[type, ...]], required: tuple[str, ...], source: str, where: str) -> None:
    from vlamb_nb.errors import DataError

    if not isinstance(d, dict):
        raise DataError(f"{where} is {type(d).__name__}, not an object", source=source)
    for k in required:
        if k not in d:
            raise DataError(f"{where} has no {k!r}", source=source, field=k)
    for k, types in spec.items():
        if k in d and (not isinstance(d[k], types) or (isinstance(d[k], bool) and bool not in types)):
            raise DataError(f"{where}: {k!r} is {type(d[k]).__name__} ({str(d[k])[:40]!r}), which it cannot be",
                            source=source, field=k)


def _check_entry(entry: Any, source: str, notebook: str) -> None:
    """One notebook's entry of ``results.json`` as :func:`build` reads it: its status and its headline rows."""
    from vlamb_nb.errors import DataError

    where = f"the {notebook!r} entry"
    _check(entry, _ENTRY, ("ok",), source, where)
    rows = (entry.get("results") or {}).get("headline")
    if rows is None:
        return
    if not isinstance(rows, list):
        raise DataError(f"{where}: its headline is {type(rows).__name__}, not a list of rows", source=source,
                        field="headline")
    for i, row in enumerate(rows, start=1):
        _check(row, _ROW, ("paper", "metric", "slice", "value"), source, f"{where}, headline row {i}")
        for j, c in enumerate(row.get("comparators") or [], start=1):
            _check(c, _COMPARATOR, ("name", "value"), source, f"{where}, headline row {i}, comparator {j}")
        if not all(isinstance(x, str) for x in row.get("deviations") or []):
            raise DataError(f"{where}, headline row {i}: its deviations are not all text", source=source,
                            field="deviations")
