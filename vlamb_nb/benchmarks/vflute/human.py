"""V-FLUTE §5-5.2: human evaluation of generated explanations, Table 6 (adequacy, preference) and Fig. 7 (errors).

The paper's judgements are not released, so this is the tooling to collect new ones and aggregate
them the paper's way. Labelling reuses :class:`vlamb_nb.interactive.annotate.Annotator` (the
append-only, resumable CSV of RACQUET-BIAS); one file per annotator and task:

- *adequacy* (one row per item × model, ``setting="adequacy"``): ``Adequate`` or, when it is not, the
  one error type of the paper's taxonomy (§5): Hallucination, Unsound reasoning, Incomplete reasoning,
  Verbosity. One click records both of the paper's questions (adequate? if not, which error?).
- *preference* (one row per item, ``setting="preference"``): the preferred model, or ``None of the
  above`` (the option of the paper's interfaces, App. K).

Aggregation follows §5.1: an explanation is adequate (preferred) only if all annotators say so and
inadequate only if all say it is not; items the annotators split on leave the denominator. Table 6's
printed shares fit this rule: 25/74, 20/67, 38/75 adequate and 12/52, 4/52, 23/52 preferred (notes
§6, inferred). With one annotator file the rule reduces to that annotator's labels.

Not modelled: the paper's gate (annotators first had to pick the gold label; here the gold label and
the reference explanation are shown), and the paper does not say whether model names were hidden
(here the view names the model).
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vlamb_nb.errors import DataError, ImageError

ADEQUATE = "Adequate"
ERROR_TYPES = ("Hallucination", "Unsound reasoning", "Incomplete reasoning", "Verbosity")  # §5 taxonomy
ADEQUACY_LABELS = (ADEQUATE, *ERROR_TYPES)
NO_PREFERENCE = "None of the above"
N_ITEMS = 95  # §5: "sample 95 random instances from the test set"


def _image_ref(row: Mapping[str, Any]) -> Any:
    """The item's image for the annotator view; an unresolvable one is kept so the view says why."""
    from vlamb_nb.benchmarks.vflute.data import item_image

    try:
        return item_image(row)
    except ImageError:
        root, img = row.get("image_root"), row.get("image")
        return str(Path(root) / img) if isinstance(root, str) and isinstance(img, str) else img


def _context(row: Mapping[str, Any]) -> str:
    """What the annotator sees before the explanations (after the paper's gate): claim, gold, reference."""
    return (f'Claim: "{row["claim"]}" | gold label: {row["label"]} | '
            f"reference explanation: {row['explanation']}")


def _answer(row: Mapping[str, Any]) -> str:
    lab = row.get("label_text")
    lab = lab if isinstance(lab, str) and lab else "unparsed"
    return f"[{lab}] {row.get('explanation_pred') or ''}"


def annotation_frame(runs: Mapping[str, Any], *, n: int | None = N_ITEMS, seed: int = 0,
                     ids: Sequence[str] | None = None):
    """Rows to judge for adequacy: ``n`` random items common to all ``runs`` × each run's explanation.

    ``runs``: model name -> scored predictions (``bench.evaluate`` / ``bench.score`` output). The
    paper judged 95 random test items for three models; ``ids`` fixes the items instead. Rows of one
    item are adjacent, as the paper showed an item's explanations together. Columns are what
    :class:`~vlamb_nb.interactive.annotate.Annotator` shows and keys on (``id, model, setting,
    question, response, image``) plus the gold and predicted labels.
    """
    import pandas as pd

    if not runs:
        raise DataError("no runs to annotate")
    by_model = {str(m): s.drop_duplicates("id").set_index(s.drop_duplicates("id")["id"].astype(str))
                for m, s in runs.items()}
    common = sorted(set.intersection(*(set(s.index) for s in by_model.values())))
    first = next(iter(by_model.values()))
    for m, s in by_model.items():
        clash = [i for i in common if s.at[i, "claim"] != first.at[i, "claim"]]
        if clash:
            raise DataError(f"run {m!r} has another claim for {clash[0]!r}: the runs were scored on different data")
    if ids is not None:
        missing = sorted(set(map(str, ids)) - set(common))
        if missing:
            raise DataError(f"{len(missing)} requested id(s) are not in every run, e.g. {missing[0]!r}", field="id")
        chosen = list(dict.fromkeys(map(str, ids)))
    else:
        if not common:
            raise DataError(f"the runs {list(by_model)} share no items to annotate")
        k = len(common) if n is None else min(int(n), len(common))
        chosen = sorted(random.Random(seed).sample(common, k), key=common.index)
    rows = []
    for iid in chosen:
        for model, s in by_model.items():
            r = {"id": iid, **s.loc[iid].to_dict()}
            rows.append({"id": iid, "model": model, "setting": "adequacy", "dataset": r.get("dataset"),
                         "question": _context(r), "response": _answer(r), "image": _image_ref(r),
                         "label": r["label"], "label_pred": r.get("label_text"),
                         "correct": bool(r.get("correct", False))})
    return pd.DataFrame(rows)


def preference_frame(frame):
    """One row per item of an :func:`annotation_frame`: all models' explanations side by side."""
    import pandas as pd

    rows = []
    for iid, g in frame.groupby("id", sort=False):
        first = g.iloc[0]
        rows.append({"id": iid, "model": "", "setting": "preference", "dataset": first["dataset"],
                     "question": first["question"], "image": first["image"],
                     "response": "  ||  ".join(f"{m}: {a}" for m, a in zip(g["model"], g["response"], strict=True))})
    return pd.DataFrame(rows)


def preference_labels(models: Sequence[str]) -> tuple[str, ...]:
    """The preference options: each model, then the interfaces' ``None of the above``."""
    return (*map(str, models), NO_PREFERENCE)


def annotators(frame, adequacy_path: str | os.PathLike, preference_path: str | os.PathLike | None = None, *,
               annotator: str = ""):
    """The adequacy/error-type :class:`Annotator` and (with ``preference_path``) the preference one."""
    from vlamb_nb.interactive.annotate import Annotator

    out = {"adequacy": Annotator(frame, adequacy_path, labels=ADEQUACY_LABELS, annotator=annotator)}
    if preference_path is not None:
        models = list(dict.fromkeys(frame["model"]))
        out["preference"] = Annotator(preference_frame(frame), preference_path, labels=preference_labels(models),
                                      annotator=annotator)
    return out


# -- aggregation -------------------------------------------------------------------------------------
def _paths(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Path]:
    if isinstance(paths, str | os.PathLike):
        return [Path(paths)]
    out = [Path(p) for p in paths]
    if not out:
        raise DataError("no label files given")
    return out


def read_annotations(paths: str | os.PathLike | Sequence[str | os.PathLike], labels: Sequence[str] | None):
    """Label files (one per annotator, the :class:`Annotator` format) as one frame ``annotator, id, model, label``.

    A missing or empty file contributes nothing (no labels yet); labels outside ``labels`` (when given) are an
    error.
    """
    import pandas as pd

    from vlamb_nb.interactive.annotate import read_labels

    frames = []
    for i, p in enumerate(_paths(paths)):
        df = read_labels(p, labels=labels)
        frames.append(df.assign(annotator=f"{i + 1}:{p.name}")[["annotator", "id", "model", "label"]])
    return pd.concat(frames, ignore_index=True)


def _require_labels(ann, files: Sequence[Path]):
    if ann.empty:
        raise DataError("no adequacy labels yet", source=", ".join(map(str, files)))
    return ann


def has_labels(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> bool:
    """Whether any of the label files holds a label (the notebook aggregates only then)."""
    return any(p.is_file() and p.stat().st_size > 0 and len(read_annotations(p, None)) for p in _paths(paths))


def _by_unit(ann, unit: Sequence[str], n_annotators: int):
    """Each unit's labels across annotators; units not yet judged by every annotator are set apart."""
    ann = ann.drop_duplicates(["annotator", *unit])  # one label per annotator and unit
    g = ann.groupby(list(unit), sort=False)["label"].agg(list).reset_index()
    full = g["label"].str.len() == n_annotators
    return g[full].reset_index(drop=True), int((~full).sum())


def _share(k: int, n: int, alpha: float) -> dict[str, Any]:
    from vlamb_nb import stats

    if n == 0:
        return {"k": 0, "n": 0, "percent": float("nan"), "ci_low": float("nan"), "ci_high": float("nan")}
    r = stats.wilson(int(k), int(n), alpha)
    return {"k": int(k), "n": int(n), "percent": 100 * r.estimate, "ci_low": 100 * r.ci_low,
            "ci_high": 100 * r.ci_high}


def _models(found: Sequence[str], models: Sequence[str] | None) -> list[str]:
    return list(models) if models is not None else list(dict.fromkeys(found))


def table6(adequacy: str | os.PathLike | Sequence[str | os.PathLike],
           preference: str | os.PathLike | Sequence[str | os.PathLike] | None = None, *,
           models: Sequence[str] | None = None, alpha: float = 0.05) -> dict[str, Any]:
    """Table 6 from label files: adequacy and preference rates per model, with counts and Wilson intervals.

    ``adequacy`` / ``preference``: one labels file per annotator (same order in both). Returns
    ``"Table 6"`` (rows ``Adequate %``, ``Preference %``; one column per model, as printed),
    ``"counts"`` (measure, model, k, n, percent, Wilson CI ×100), ``"pending"`` (units not yet judged
    by every annotator, left out), ``"split"`` (units the annotators disagree on, left out as in §5.1)
    and, with two or more annotators, ``"kappa"``: Cohen's κ of adequate vs not over the explanations
    the first two judged (the paper: average κ 0.47, averaging unstated).
    """
    import pandas as pd

    from vlamb_nb import stats

    ade_files = _paths(adequacy)
    ann = _require_labels(read_annotations(ade_files, ADEQUACY_LABELS), ade_files)
    models = _models(ann["model"], models)
    units, pending = _by_unit(ann, ("id", "model"), len(ade_files))
    verdict = units["label"].map(lambda ls: "adequate" if all(x == ADEQUATE for x in ls)
                                 else "inadequate" if all(x != ADEQUATE for x in ls) else "split")
    rows = []
    for m in models:
        v = verdict[units["model"] == m]
        k, n = int((v == "adequate").sum()), int((v != "split").sum())
        rows.append({"measure": "Adequate %", "model": m, **_share(k, n, alpha)})
    out: dict[str, Any] = {"pending": {"adequacy": pending}}
    if preference is not None:
        pref_files = _paths(preference)
        pref = read_annotations(pref_files, None)
        allowed = preference_labels(models or [x for x in dict.fromkeys(pref["label"]) if x != NO_PREFERENCE])
        bad = pref[~pref["label"].isin(allowed)]
        if len(bad):
            raise DataError(f"preference label {bad['label'].iloc[0]!r} is not one of {list(allowed)}",
                            source=bad["annotator"].iloc[0], field="label")
        models = models or [m for m in allowed if m != NO_PREFERENCE]
        items, pending_p = _by_unit(pref, ("id",), len(pref_files))
        agreed = items["label"].map(lambda ls: ls[0] if len(set(ls)) == 1 else None)
        n = int(agreed.notna().sum())
        out["split"] = {"preference": int(agreed.isna().sum())}
        for m in (*models, NO_PREFERENCE):
            rows.append({"measure": "Preference %", "model": m, **_share(int((agreed == m).sum()), n, alpha)})
        out["pending"]["preference"] = pending_p
    counts = pd.DataFrame(rows)
    out["counts"] = counts
    shown = counts[counts["model"].isin(models)]
    out["Table 6"] = shown.pivot(index="measure", columns="model", values="percent").reindex(
        index=[m for m in ("Adequate %", "Preference %") if m in set(shown["measure"])], columns=models).round(2)
    out["split"] = {"adequacy": int((verdict == "split").sum()), **out.get("split", {})}
    if len(ade_files) >= 2:
        first_two = [f"{i + 1}:{p.name}" for i, p in enumerate(ade_files[:2])]
        wide = ann.assign(adequate=(ann["label"] == ADEQUATE).astype(int)).pivot_table(
            index=["id", "model"], columns="annotator", values="adequate", aggfunc="first")
        wide = wide.reindex(columns=first_two).dropna()
        a1, a2 = first_two
        out["kappa"] = None
        if len(wide):
            out["kappa"] = stats.cohen_kappa(wide[a1].astype(int), wide[a2].astype(int), ci=False).to_dict()
    return out


def table6_comparison(result: dict[str, Any], paper_columns: Mapping[str, str] | None = None):
    """Our Table 6 beside the paper's; ``paper_columns`` maps our model names to Table 6's columns
    ("LLaVA-7B eViL+VF", "LLaVA-34B SG", "GPT-4 (5 shot)"); unmapped models compare only when named like a paper
    column. Adds κ vs §5.1's 0.47."""
    import pandas as pd

    from vlamb_nb import reference

    names = dict(paper_columns or {})
    c = result["counts"]
    c = c[c["model"] != NO_PREFERENCE]
    ours = pd.DataFrame({"table": "Table 6", "row": c["measure"], "column": [names.get(m, m) for m in c["model"]],
                         "value": c["percent"].round(2), "ci_low": c["ci_low"], "ci_high": c["ci_high"]})
    out = reference.compare(ours, "vflute", table="Table 6")
    out.insert(3, "model", list(c["model"]))
    out.insert(5, "k/n", [f"{k}/{n}" for k, n in zip(c["k"], c["n"], strict=True)])
    if result.get("kappa"):
        kap = pd.DataFrame([{"table": "Section 5.1", "row": "Human evaluation", "column": "Cohen kappa",
                             "value": result["kappa"]["estimate"]}])
        out = pd.concat([out, reference.compare(kap, "vflute", table="Section 5.1")], ignore_index=True)
    return out


def error_taxonomy(adequacy: str | os.PathLike | Sequence[str | os.PathLike], *,
                   models: Sequence[str] | None = None, alpha: float = 0.05) -> dict[str, Any]:
    """Fig. 7 as a table: the share of each error type among a model's agreed-inadequate explanations.

    §5.2 counts explanations all annotators judged inadequate and asks "out of all errors for this
    model, what percentage is each type"; the error types the annotators chose there are pooled (two
    annotators give two error labels per explanation; a choice not stated in the paper). The Wilson
    intervals treat the pooled labels as independent, so with several annotators they are somewhat
    narrow. The paper prints no numbers for Fig. 7 (notes §9), so there is nothing to compare with;
    its qualitative findings are: verbosity is rare, GPT-4's leading error is hallucination, and
    unsound reasoning leads for both LLaVA models, with more incomplete reasoning for 34B-SG.
    Returns ``"Fig. 7"`` (models × error types, %) and ``"counts"`` (model, error, k, n, percent, CI).
    """
    import pandas as pd

    files = _paths(adequacy)
    ann = _require_labels(read_annotations(files, ADEQUACY_LABELS), files)
    models = _models(ann["model"], models)
    units, _ = _by_unit(ann, ("id", "model"), len(files))
    bad = units[units["label"].map(lambda ls: all(x != ADEQUATE for x in ls))]
    rows = []
    for m in models:
        pooled = [x for ls in bad.loc[bad["model"] == m, "label"] for x in ls]
        rows += [{"model": m, "error": e, "explanations": int((bad["model"] == m).sum()),
                  **_share(pooled.count(e), len(pooled), alpha)} for e in ERROR_TYPES]
    counts = pd.DataFrame(rows)
    wide = counts.pivot(index="model", columns="error", values="percent").reindex(index=models,
                                                                                columns=list(ERROR_TYPES))
    return {"Fig. 7": wide.round(2), "counts": counts}
