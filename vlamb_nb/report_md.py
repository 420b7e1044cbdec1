"""``report.md`` of a reproduce run: the report card, then each notebook's recorded results under their section
titles, each figure linked (by a path relative to the run folder) after the table it belongs to. It renders the
run's one view (:mod:`vlamb_nb.run_view`), the one ``report.html`` renders too, so both pages say the same."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def run_markdown(view: Any, card: Any, run_dir: Path, *, outputs: dict[str, str],
                 card_figure_error: str | None = None) -> str:
    """The report's markdown from the run's view and card; ``outputs``: each notebook's executed file name."""
    from vlamb_nb import report_card, run_view

    lines = [report_card.markdown(card), ""]
    if view.card_figures:
        lines += [_md_figures(view.card_figures, run_dir)]
    if card_figure_error:
        lines += [f"**The card's figure could not be drawn:** `{card_figure_error}`", ""]
    lines += ["# Reproduction report", "",
              f"Run `{run_dir.name}`: {view.n_ok} of {len(view.notebooks)} notebook(s) succeeded"
              + (f", {n} not run" if (n := sum(nv.status == "not run" for nv in view.notebooks)) else "") + ".",
              "", "The same report with every figure beside its table, in one file: `report.html`.", "",
              "| notebook | status | seconds | parameters |", "|---|---|---|---|"]
    for nv in view.notebooks:
        status = "**failed**" if nv.status == "failed" else nv.status
        lines.append(f"| {nv.name} | {status} | {nv.seconds:.1f} | {_fmt(nv.parameters)} |")
    lines.append("")
    missing = [(nv.name, item) for nv in view.notebooks for item in nv.not_derivable]
    if missing:  # one list of what the released data cannot give, with the reason, before the details
        lines += ["## Not derivable from the released data", "", _md_table(
            [{"notebook": nb, **(it if isinstance(it, dict) else {"item": it})} for nb, it in missing], limit=200)]
    for nv in view.notebooks:
        lines += [f"## {nv.name}", "", f"Executed notebook: `{outputs.get(nv.name, nv.name + '.ipynb')}`", ""]
        if nv.skipped:
            lines += [f"**{nv.skipped}**", ""]
        else:
            for w in nv.warnings:
                lines += [f"**Warning:** {w}", ""]
            if nv.status == "failed":
                where = f" in cell In [{nv.failed_cell}]" if nv.failed_cell is not None else ""
                lines += [f"**Failed{where}:** `{nv.error}`", ""]
                if nv.failed_source:
                    lines += ["```python", nv.failed_source.strip(), "```", ""]
            if nv.headline_figures:  # the headline is in the card above
                lines.append(_md_figures(nv.headline_figures, run_dir))
            if rows := nv.score_rows():
                lines += ["**Scores of the run's stores** (each store's run record, every declared metric)", "",
                          _md_table(rows, limit=200, columns=run_view.SCORE_COLUMNS)]
            if not nv.blocks and not nv.deviations:
                lines += ["_No recorded results._", ""]
            audit = False
            for b in [*nv.blocks, *nv.deviations]:
                if b.rank == run_view.DEVIATION and b is nv.deviations[0]:  # folded last on the page
                    lines += ["### Deviations", ""]
                elif run_view.AUDIT <= b.rank < run_view.DEVIATION and not audit:  # where the page opens its audit
                    audit = True
                    lines += ["### Audit", ""]
                lines.append(render_value(b.key, b.value))
                if b.figures:
                    lines.append(_md_figures(b.figures, run_dir))
        if nv.rest:
            lines += [f"**More figures of {nv.name}** (no recorded table claims them)", "",
                      _md_figures(nv.rest, run_dir)]
    if rows := [r for sc in view.other_scores for r in sc.rows()]:
        lines += ["## Scores of stores in no notebook's folder", "",
                  _md_table(rows, limit=200, columns=run_view.SCORE_COLUMNS)]
    if view.other_figures:
        lines += ["## Other figures of this run", "", _md_figures(view.other_figures, run_dir)]
    return "\n".join(lines)


def _md_table(rows: list[dict[str, Any]], limit: int = 60, columns: Sequence[str] | None = None) -> str:
    from vlamb_nb.report_html import PREFERRED_COLUMNS

    if not rows:
        return "_(none)_\n"
    keys = list(dict.fromkeys(k for r in rows for k in r))
    cols = list(columns) if columns is not None else \
        [k for k in PREFERRED_COLUMNS if k in keys] + [k for k in keys if k not in PREFERRED_COLUMNS]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows[:limit]:
        out.append("| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |")
    if len(rows) > limit:
        out.append(f"\n_… {len(rows) - limit} more rows in the notebook metadata._")
    return "\n".join(out) + "\n"


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (dict, list)):
        v = json.dumps(v, ensure_ascii=False)
    return str(v).replace("|", "\\|").replace("\n", " ")


def render_value(key: str, value: Any) -> str:
    """One recorded result in markdown under its section title (:func:`vlamb_nb.run_view.section_title`, the
    page's title for it too)."""
    from vlamb_nb.findings import Finding, is_finding
    from vlamb_nb.run_view import section_title

    title = section_title(key)
    if is_finding(value):  # a conclusion computed from the numbers beside it: its sentence, as the notebook says it
        f = Finding.from_dict(value)
        return f"**{title}**: {f.said().replace(chr(10), ' ')}\n"
    if isinstance(value, list) and value and all(isinstance(r, dict) for r in value):
        return f"**{title}**\n\n" + _md_table(value)
    if isinstance(value, list):
        return f"**{title}**\n\n" + "".join(f"- {_fmt(v)}\n" for v in value) if value else f"**{title}**: none\n"
    if isinstance(value, dict):
        inner = [f"**{title}**\n"]
        for k, v in value.items():
            if isinstance(v, list) and v and all(isinstance(r, dict) for r in v):
                inner.append(f"\n_{k}_\n\n" + _md_table(v))
            else:
                inner.append(f"- {k}: {_fmt(v)}")
        return "\n".join(inner) + "\n"
    return f"**{title}**: {_fmt(value)}\n"


def _md_figures(figs: list[Any], run_dir: Path) -> str:
    """Figures as markdown images (a PDF-only figure as a link), by paths relative to the run folder."""
    out = []
    for f in figs:
        if f.png is not None:
            pdf = f" ([PDF]({f.href('pdf', run_dir)}))" if f.pdf is not None else ""
            out.append(f"![{f.name}]({f.href('png', run_dir)}){pdf}\n")
        else:
            out.append(f"[{f.name}.pdf]({f.href('pdf', run_dir)})\n")
    return "\n".join(out)
