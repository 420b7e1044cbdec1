"""The paper's LLM judge over RACQUET responses: A/B/C classes (App. C) or the CoT YES/NO mention (App. G.3).

The prompts and their decoding are in :mod:`.prompts` (``judge_spec``); what the judge's labels give (shares,
agreement with human labels) is in :mod:`.score`.
"""

from __future__ import annotations

from vlamb_nb.benchmarks.racquet.data import label_scheme
from vlamb_nb.benchmarks.racquet.prompts import SETTINGS, judge_spec, question_text

#: ``judge_parse_error`` of a row the judge leaves to a human (RACQUET-BIAS): unlabelled, never dropped
NOT_JUDGED = "not judged: RACQUET-BIAS is labelled by hand"


def judge(model, predictions, *, kind: str = "abc", store=None, batch_size: int = 8,
          progress: bool = True, max_new_tokens: int | None = None, subsets: tuple[str, ...] = ("general",),
          concurrency: int | None = None):
    """Run the paper's judge over responses: ``abc`` (App. C) or ``cot`` (YES/NO, App. G.3).

    The judge sees the question as the model saw it (with any suffix) and the response,
    never the image. Unparsed outputs stay as rows with ``judge_valid=False``. Every row
    comes back: only rows whose labels are those of ``subsets`` (GENERAL and control
    responses by default, see :func:`~vlamb_nb.benchmarks.racquet.data.label_scheme`) go to
    the judge; RACQUET-BIAS rows are labelled by hand in the paper
    (:mod:`vlamb_nb.interactive.annotate`) and return unlabelled, marked ``NOT_JUDGED``.
    A judge's CLASS A on BIAS (``subsets=("general", "bias")``) still means Explicit.
    ``concurrency``: requests in flight for a served judge (default: the model's own).
    """
    import pandas as pd

    from vlamb_nb.scorers import judge as J

    spec = judge_spec(kind, max_new_tokens=max_new_tokens)
    df = predictions.reset_index(drop=True).copy()
    if "response" not in df.columns:
        df["response"] = df["text"].fillna("").astype(str).str.strip()
    if "question_asked" not in df.columns:
        df["question_asked"] = [question_text(q, s) if s in SETTINGS else q
                                for q, s in zip(df["question"], df.get("setting", ["direct"] * len(df)),
                                                strict=True)]
    hand = df.iloc[:0]
    if "subset" in df.columns:
        settings = df["setting"] if "setting" in df.columns else [None] * len(df)
        to_judge = [label_scheme(s, st) in subsets for s, st in zip(df["subset"], settings, strict=True)]
        hand = df[[not t for t in to_judge]].copy()
        df = df[to_judge].reset_index(drop=True)
    ok = df["response"].map(lambda v: isinstance(v, str) and bool(v.strip())).astype(bool)
    if "error" in df.columns:  # a failed generation has no response to judge
        ok &= ~df["error"].map(lambda v: isinstance(v, str) and bool(v))
    judged = J.run_judge(model, spec, df[ok], id_column="request_id",
                         field_map={"question": "question_asked", "response": "response"}, store=store,
                         batch_size=batch_size, progress=progress, concurrency=concurrency)
    empty = df[~ok].copy()
    if len(empty):  # no response to judge (empty, or generation failed): counted as unparsed, never dropped
        for c, v in (("judge_model", model.info.model_id), ("judge_text", ""), ("judge_error", None),
                     ("judge_label", None), ("judge_valid", False)):
            empty[c] = v
        errors = empty["error"].tolist() if "error" in empty else [None] * len(empty)
        empty["judge_parse_error"] = ["no response: generation failed" if isinstance(e, str) and e
                                      else "no response: empty" for e in errors]
    if len(hand):  # kept in the frame, unlabelled until a human labels them
        for c, v in (("judge_model", model.info.model_id), ("judge_text", ""), ("judge_error", None),
                     ("judge_label", None), ("judge_valid", False), ("judge_parse_error", NOT_JUDGED)):
            hand[c] = v
    parts = [p for p in (judged, empty, hand) if len(p)]
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else (parts[0] if parts else judged)
