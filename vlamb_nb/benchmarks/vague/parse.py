"""VAGUE answer reading: the option letter (MCQ, CoT ``answer2``), the free-form sentence, and the
option log-likelihood reading (a labelled alternative to parsing generated text)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from vlamb_nb.benchmarks.vague.data import CATEGORIES, LETTERS
from vlamb_nb.models.base import VLM, Generation, Request

# -- parsing -----------------------------------------------------------------------------------------
_REFUSAL = re.compile(r"\b(i\s+(?:do\s*n[o']?t|cannot|can\s*not|can't|am\s+(?:not\s+sure|unable))|"
                      r"unable\s+to|not\s+possible\s+to|sorry|as\s+an\s+ai|cannot\s+(?:determine|answer)|"
                      r"none\s+of\s+the|no\s+(?:correct\s+)?answer)", re.I)


_COT_MARK = re.compile(r"answer\s*(?:2|\u2082)|\(\s*intention\s*\)|\bintention\s*\)?\s*:", re.I)


_WHOLE = re.compile(r"^\W*\(?\s*([A-D])\s*\)?\W*$")


_LEAD = re.compile(r"^\W{0,3}\(?([A-D])(?:\s*[:).]|\s*$|\s+-)")


_PHRASE = re.compile(r"(?:answer|option|choice)\s*(?:is|would\s+be|:)?\s*[:\-]?\s*\(?\*{0,2}([A-D])\b(?![a-z'])",
                     re.I)


_MARKED = re.compile(r"\(([A-D])\)|\b([A-D])\s*[:)]")


# a bare capital letter, unless it is the article "A" starting a phrase ("A man ...", but not "A or B")
_BARE = re.compile(r"(?<![A-Za-z'])([A-D])(?![A-Za-z'])(?!\s+(?!(?:or|and)\b)[a-z])")


def _letter_in(segment: str, options: dict[str, str] | None, ordering: Sequence[str] | None) -> tuple[str | None, str]:
    s = segment.strip().replace("*", "")
    if not s:
        return None, "empty"
    if m := _WHOLE.match(s):
        return m.group(1), "letter"
    if m := _LEAD.match(s):
        return m.group(1), "leading"
    found = {m.group(1).upper() for m in _PHRASE.finditer(s)}
    if len(found) == 1:
        return found.pop(), "phrase"
    if len(found) > 1:
        return None, "ambiguous"
    marked = {a or b for a, b in _MARKED.findall(s)}
    if len(marked) == 1:
        return marked.pop(), "marked"
    if len(marked) > 1:
        return None, "ambiguous"
    bare = set(_BARE.findall(s))
    if len(bare) == 1:
        return bare.pop(), "bare"
    if len(bare) > 1:
        return None, "ambiguous"
    if options and ordering:  # the model repeated exactly one option's text
        low = s.lower()
        hits = [ordering[i] for i, c in enumerate(CATEGORIES) if options[c].strip().rstrip(".").lower() in low]
        if len(hits) == 1:
            return hits[0], "option_text"
    return None, "unparsed"


def parse_letter(text: str, *, cot: bool = False, options: dict[str, str] | None = None,
                 ordering: Sequence[str] | None = None) -> dict[str, Any]:
    """Option letter from a reply: ``C``, ``C: ...``, ``(C)``, ``C)``, "the answer is C", or (CoT) the part
    after ``answer2 (intention)``. Refusals and anything else are invalid (counted wrong)."""
    text = text or ""
    segment, where = text, "full"
    if cot:
        marks = list(_COT_MARK.finditer(text))
        if marks:
            segment, where = text[marks[-1].end():], "answer2"
    letter, how = _letter_in(segment, options, ordering)
    if letter is None and cot and where == "answer2":
        lines = [ln for ln in text.strip().splitlines() if ln.strip()]
        if lines:
            letter, how = _letter_in(lines[-1], options, ordering)
    if letter is None and how in ("unparsed", "empty") and _REFUSAL.search(text):
        how = "refusal"
    if letter is None:
        return {"letter": None, "valid": False, "parse": how}
    return {"letter": letter, "valid": True, "parse": f"{how}" + ("/answer2" if where == "answer2" else "")}


_WANTS = re.compile(r"the\s+speaker\s+wants\b", re.I)


def parse_free_form(text: str, *, cot: bool = False) -> dict[str, Any]:
    """The "The speaker wants ..." sentence (CoT: from the answer2 part); empty output is invalid."""
    t = (text or "").strip()
    if cot:
        marks = list(_COT_MARK.finditer(t))
        if marks:
            t = t[marks[-1].end():].strip()
            t = re.sub(r"^\s*\([^)]*\)\s*:?", "", t).strip() if t.startswith("(") else t
    m = _WANTS.search(t)
    if m:
        tail = t[m.start():]
        end = re.search(r"(?<=[.!?])\s|\n", tail)
        t = tail[: end.start()].strip() if end else tail.strip()
    t = t.strip().strip('"').strip()
    return {"answer": t, "valid": bool(t), "parse": "speaker_wants" if m else ("text" if t else "empty")}


# -- model reading by option log-likelihood ------------------------------------------------------------
class OptionLikelihoodReader:
    """Wraps a model so ``generate`` answers with the most likely option letter (``score_options``).

    An alternative reading of MCQ, labelled as such: the paper parsed generated text.
    """

    def __init__(self, model: VLM) -> None:
        self.model = model
        self.info = replace(model.info)  # the same identity, every field (a served model's endpoint too)

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        out = []
        for r in requests:
            try:
                scores = list(self.model.score_options(r, r.options or list(LETTERS)))
                best = max(range(len(scores)), key=scores.__getitem__)
                out.append(Generation(request_id=r.id, text=(r.options or list(LETTERS))[best],
                                      option_logprobs=scores, finish_reason="loglik"))
            except Exception as e:  # noqa: BLE001 - recorded per item
                out.append(Generation(request_id=r.id, error=f"{type(e).__name__}: {e}", finish_reason="error"))
        return out

    def score_options(self, request: Request, options: Sequence[str]) -> list[float]:
        return self.model.score_options(request, options)


def captions_from_run(generations) -> dict[str, str]:
    """Item id → caption text from the caption turn (a failed caption becomes an empty description)."""
    out = {}
    for _, g in generations.iterrows():
        if g.get("turn") == "caption":
            out[str(g["item_id"])] = "" if g.get("error") else str(g.get("text") or "")
    return out


def parse_answer(text: str, item: Any) -> dict[str, Any]:
    """Free-form answer, or the option letter (official rule) with its category and the lenient reading beside it."""
    from vlamb_nb.benchmarks.base import lenient_letter
    from vlamb_nb.benchmarks.vague.prompts import ALL_SETTINGS, setting_spec, shifted

    spec = setting_spec(item["setting"]) if "setting" in item and item["setting"] in ALL_SETTINGS else None
    if spec is not None and spec.free_form:
        return parse_free_form(text, cot=spec.cot)
    ordering = item.get("ordering")
    if isinstance(ordering, list | tuple) and spec is not None and spec.shift:  # the letters this run showed
        ordering = shifted(list(ordering), spec.shift)
    item = {**dict(item), "ordering": list(ordering) if isinstance(ordering, list | tuple) else ordering}
    out = parse_letter(text, cot=bool(spec and spec.cot), options=item.get("options"),
                       ordering=item.get("ordering"))
    cat = None
    if out["letter"] is not None and isinstance(item.get("ordering"), list):
        cat = CATEGORIES[list(item["ordering"]).index(out["letter"])]
    out["category"] = cat
    # what a prompt-sensitivity comparison reads: the position chosen (0 = the first letter shown) and the option
    out["position"] = LETTERS.index(out["letter"]) if out["letter"] in LETTERS else None
    out["choice"] = cat
    out["gold_position"] = LETTERS.index(ordering[0]) if isinstance(ordering, list | tuple) else None
    # the documented lenient reading beside the official one (reported as accuracy_lenient)
    if out["valid"]:
        out["letter_lenient"], out["parse_lenient"], cat_l = out["letter"], "strict", cat
    else:
        lenient, rule = lenient_letter(text)
        cat_l = (CATEGORIES[list(item["ordering"]).index(lenient)]
                 if lenient is not None and isinstance(item.get("ordering"), list) else None)
        out["letter_lenient"], out["parse_lenient"] = lenient, rule
    out["category_lenient"] = cat_l
    return out


# -- the scripted stand-in's replies (the inverse of the reading above) --------------------------------------
#: the scripted chance of a right answer per setting, in the paper's order (LM < SM < VLM; CoT helps a little)
SCRIPTED_ACCURACY = {**{s: p for s, p in (("lm", 0.45), ("sm", 0.55), ("sm_ext", 0.6), ("vlm", 0.7),
                                          ("sm_cot", 0.6), ("vlm_cot", 0.75))},
                     **{f"{s}_ff": p for s, p in (("lm", 0.45), ("sm", 0.55), ("sm_ext", 0.6), ("vlm", 0.7),
                                                  ("sm_cot", 0.6), ("vlm_cot", 0.75))}}
#: its errors: the three distractor kinds of Fig. 4, and a refusal the official rule counts wrong
SCRIPTED_ERRORS = ("FS", "SU", "NE", "refusal")


def scripted_reply(request: Request, s: Any) -> str:
    """A scripted stand-in's reply (:meth:`Benchmark.scripted_reply`): a caption for the SM caption turn; else the
    letter (MCQ), the "The speaker wants ..." sentence (free-form) or, with CoT, reasoning then ``answer2``, of the
    right option or of the distractor ``s.outcome`` (FS, SU, NE); a refusal for ``refusal``."""
    from vlamb_nb.benchmarks.vague.prompts import CAPTION_PROMPT, SETTINGS, setting_spec

    if not request.options and CAPTION_PROMPT in request.prompt_text:
        return str(s.item.get("caption") or "A scene with several people.")
    spec = setting_spec(s.setting) if s.setting in SETTINGS else None
    if s.outcome == "refusal":
        return "I cannot tell which one the speaker means."
    category = "correct" if s.right else s.outcome
    ordering = list(s.item.get("ordering") or LETTERS)
    options = s.item.get("options") or {}
    if spec is not None and spec.free_form:
        answer = str(options.get(category) or "")
    else:
        answer = ordering[CATEGORIES.index(category)]
    if spec is not None and spec.cot:
        return f"answer1 (reasoning): Let's think step by step. The scene shows who is addressed.\n" \
               f"answer2 (intention): {answer}"
    return answer

