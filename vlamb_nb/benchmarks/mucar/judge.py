"""MUCAR's LLM-judge step: the CODIS judge prompt (the paper's GPT-4o judge prompt is not released), running
it, and agreement between the judge and the rule parser. ``vlamb-nb score mucar ... -o judge=MODEL`` reads a
prediction file both ways (:func:`judge_report`)."""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from vlamb_nb.benchmarks.mucar.data import NAME
from vlamb_nb.benchmarks.mucar.prompts import build_prompt
from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.models.base import VLM, DecodingParams

# -- the CODIS-style judge (THUNLP-MT/CODIS data/eval.py, verbatim) ---------------------------------
JUDGE_PROMPT = (
    "Please evaluate the output of models based on the given question and groundtruth and tell me whether the "
    "output is right.\n\n"
    "Please pay attention to the following rules:\n"
    "1. The output contains rationale of the reasoning process and answer which is summarized from the reasoning "
    "process. Please extract the answer from the output and make your judgement only based on answer, NOT "
    "rationale.\n"
    "2. The answer is right if it follows the question in meaning and be consistent with the groundtruth.\n"
    "3. Do not be too strict about the answer. Format different from the groundtruth and minor grammar issues "
    "are allowed.\n"
    "If you think the answer is correct according to the groundtruth, please output \"right\", otherwise output "
    "\"wrong\". You can only print \"right\" or \"wrong\" and nothing else.\n\n"
    "Here is the question: {}\n"
    "Here is the groundtruth: {}\n"
    "Here is the output: {}"
)


def judge_prompt(question: str, groundtruth: str, output: str) -> str:
    return JUDGE_PROMPT.format(question, groundtruth, output)


def parse_judge(response: str | None, rule: str = "codis") -> int | None:
    """CODIS scores ``1 if 'right' in response else 0``; ``rule='strict'`` needs exactly right/wrong."""
    r = (response or "").strip().lower()
    if rule == "codis":
        return 1 if "right" in r else 0
    if rule == "strict":
        w = re.sub(r"[^a-z]", "", r)
        return {"right": 1, "wrong": 0}.get(w)
    raise SettingError(f"unknown judge rule {rule!r}; choose codis or strict")


# -- the LLM judge (CODIS-style right/wrong) -------------------------------------------------------
def judge_spec():
    """The CODIS judge prompt (verbatim) as a :class:`vlamb_nb.scorers.judge.JudgeSpec` with CODIS's rule."""
    from vlamb_nb.scorers.judge import JudgeSpec

    def parse(text: str) -> dict[str, Any]:
        v = parse_judge(text, "codis")
        return {"label": "right" if v else "wrong", "valid": True, "parse_error": None}

    template = judge_prompt("{question}", "{groundtruth}", "{output}")
    return JudgeSpec("mucar-codis", template=template, parse=parse, labels=("right", "wrong"),
                     params=DecodingParams(max_new_tokens=8), benchmark=NAME)


def run_judge(model: VLM, scored, *, store: str | os.PathLike | None = None, batch_size: int = 8,
              progress: bool = True, concurrency: int | None = None):
    """Judge every output with ``model``; adds ``judge_correct`` (1/0) beside the rule parser's ``correct``.

    ``concurrency``: requests in flight for a served judge (default: the model's own; a local judge batches)."""
    from vlamb_nb.scorers import judge

    frame = scored.reset_index(drop=True).copy()
    if "request_id" not in frame:  # rows scored from a prediction file: one query per row, one setting
        frame["request_id"] = frame["uid"].astype(str) + "::" + frame["setting"].astype(str)
    frame["judge_question"] = [build_prompt(r, "full") for r in frame.to_dict(orient="records")]
    frame["groundtruth"] = frame["gold"] + ". " + frame["gold_text"]
    frame["output"] = frame["text"].fillna("").replace("", "(empty)")
    out = judge.run_judge(model, judge_spec(), frame, field_map={"question": "judge_question"}, store=store,
                          batch_size=batch_size, progress=progress, concurrency=concurrency)
    out["judge_correct"] = np.where(out["judge_valid"].astype(bool), (out["judge_label"] == "right").astype(float),
                                    np.nan)
    return out


def agreement(a, b) -> dict[str, Any]:
    """Percent agreement (Table 7's statistic) and Cohen's kappa with its CI (an addition), on items both label."""
    import pandas as pd

    from vlamb_nb.stats import cohen_kappa

    x, y = pd.Series(list(a), dtype=float), pd.Series(list(b), dtype=float)
    both = x.notna() & y.notna()
    x, y = x[both].astype(int).to_numpy(), y[both].astype(int).to_numpy()
    if len(x) == 0:
        raise DataError("no item has both labels; cannot compute agreement")
    k = cohen_kappa(x, y, ci=True)
    return {"n": int(len(x)), "percent_agreement": round(100 * float((x == y).mean()), 2),
            "cohen_kappa": k.estimate, "kappa_ci": [k.ci_low, k.ci_high]}


def judge_report(model: VLM | str, scored, *, store: str | os.PathLike | None = None,
                 n_resamples: int = 2000) -> dict[str, Any]:
    """A scored run read the paper's way, by an LLM judge, beside the rule parser's reading.

    ``model``: a VLM, or a spec for :func:`vlamb_nb.models.load_model`. Returns the judge's Acc_q and
    Acc_p (a verdict the judge's output does not give counts as wrong, and is counted) and its agreement
    with the parser.
    """
    if isinstance(model, str):
        from vlamb_nb.models import load_model

        model = load_model(model)
    judged = run_judge(model, scored, store=store, progress=False)
    return {"model": model.info.model_id, **judge_summary(judged, n_resamples=n_resamples)}


def judge_summary(judged, *, n_resamples: int = 2000) -> dict[str, Any]:
    """Judged rows (:func:`run_judge`) as the judge reads them: its Acc_q and Acc_p (no verdict counts as wrong,
    and is counted) and its agreement with the rule parser."""
    from vlamb_nb.benchmarks.mucar.score import _records, pair_accuracy

    by_judge = judged.assign(correct=judged["judge_correct"].eq(1.0))
    return {"no_verdict": int(judged["judge_correct"].isna().sum()),
            "overall": _records(pair_accuracy(by_judge, None, n_resamples=n_resamples)),
            "agreement_with_parser": agreement(judged["judge_correct"], judged["correct"].astype(float))}


# -- the scripted stand-in as the judge ---------------------------------------------------------------------
#: how often the scripted judge's verdict is the wrong one (Table 7: GPT-4o agreed with people on 95-98% of outputs)
SCRIPTED_SLIP = 0.04
_OUTPUT = "Here is the output: "


def scripted_verdict(request: Any, s: Any) -> str:
    """A scripted judge's verdict on one output (the CODIS judge prompt): "right" when the output, read as a judge
    reads it (an answer out of the format counts: the lenient reading), names the gold option, else "wrong"; with
    chance :data:`SCRIPTED_SLIP` the other verdict (a judge's error)."""
    from vlamb_nb.benchmarks.mucar.parse import parse_query

    output = request.prompt_text.rsplit(_OUTPUT, 1)[-1]
    read = parse_query(output, s.item)
    right = (read.get("letter_lenient") or read.get("letter")) == s.item["gold"]
    return "right" if right != (s.u < SCRIPTED_SLIP) else "wrong"


def scripted_reply(request: Any, s: Any) -> str:
    """The scripted stand-in's reply (:meth:`~vlamb_nb.benchmarks.base.Benchmark.scripted_reply`): a verdict to the
    judge's requests (setting ``judge:...``), an answer (:func:`.parse.scripted_reply`) to every other."""
    from vlamb_nb.benchmarks.mucar.parse import scripted_reply as answer

    return scripted_verdict(request, s) if str(request.setting or "").startswith("judge:") else answer(request, s)
