"""MUCAR answer parsing: the option letter (``Answer: X`` first, then fallbacks) and yes/no for 'is C ambiguous'."""

from __future__ import annotations

import re
from typing import Any

from vlamb_nb.benchmarks.base import lenient_letter
from vlamb_nb.benchmarks.mucar.data import LETTERS, _norm, split_option

# -- the answer parser -----------------------------------------------------------------------------
REFUSAL = re.compile(
    r"(I'?m sorry|I am sorry|I cannot|I can't|I can not|I'm unable|I am unable|unable to (?:determine|answer|help)"
    r"|cannot (?:determine|be determined)|can't assist|抱歉|对不起|无法(?:回答|确定|判断|提供)|不能回答"
    r"|Maaf|tidak dapat (?:menjawab|menentukan|membantu))", re.IGNORECASE)


_ANSWER = re.compile(r"(?i:answer|答案|回答|jawapan)\s*(?i:is)?\s*[:：]?\s*[\[(（【]?\s*([A-E])\s*(?:[\])）】.．,，:：;；。]|\s|$)")


_MARKUP = re.compile(r"[*_`]+")


_HEDGE = re.compile(r"[A-E]\s*[\])）】.．]?\s*(?:(?i:or|and|atau|dan)|/|或|和)\s*[\[(（【]?\s*[A-E]\b")


_LONE = re.compile(r"^\s*[\[(（【]?\s*([A-Ea-e])\s*[\])）】.．]?\s*$")


_LEADING = re.compile(r"^\s*[\[(（【]?\s*([A-E])\s*[\])）】.．:：、]")


def parse_answer(text: str | None, options: list[str]) -> dict[str, Any]:
    """Letter from ``Answer: X`` (last one wins, so chain-of-thought ends count), then fallbacks.

    Fallbacks, in order: a lone letter, a leading ``A.`` / ``(A)``, a unique option-text match.
    A refusal or anything else is ``valid=False`` with ``parse_method`` saying why; a letter
    beyond the item's options is invalid too (``out_of_range``).
    """

    letters = LETTERS[: len(options)]
    out: dict[str, Any] = {"letter": None, "valid": False, "parse_method": "none", "refusal": False}
    t = (text or "").strip()
    if not t:
        out["parse_method"] = "empty"
        return out
    t = _MARKUP.sub("", t)  # "**Answer: B**": markdown emphasis is not part of the answer
    found, method = None, None
    hits = list(_ANSWER.finditer(t))
    if hits:
        found, method = hits[-1].group(1).upper(), "answer_tag"
        if _HEDGE.match(t, hits[-1].start(1)):  # "Answer: A or B" names no single option
            out["parse_method"] = "ambiguous"
            return out
    elif m := _LONE.match(t):
        found, method = m.group(1).upper(), "lone_letter"
    elif m := _LEADING.match(t):
        found, method = m.group(1), "leading_letter"
    else:
        norm_t = _norm(t)
        texts = [_norm(split_option(o)[1]) for o in options]
        hit = [letters[i] for i, x in enumerate(texts) if x and x in norm_t]
        hit = [h for h in hit if texts.count(texts[letters.index(h)]) == 1]
        # "chicken feed" contains "chicken": keep only the longest matching option text
        hit = [h for h in hit if not any(texts[letters.index(h)] in texts[letters.index(o)] and h != o
                                         for o in hit)]
        if len(hit) == 1:
            found, method = hit[0], "option_text"
    if found is None:
        out["refusal"] = bool(REFUSAL.search(t))
        out["parse_method"] = "refusal" if out["refusal"] else "unparsed"
        return out
    if found not in letters:
        out.update(parse_method="out_of_range", letter=found)
        return out
    out.update(letter=found, valid=True, parse_method=method)
    return out


_YES = re.compile(r"^\W*(yes|是|有歧义|ya)\b", re.IGNORECASE)


_NO = re.compile(r"^\W*(no|否|不是|没有歧义|tidak|bukan)\b", re.IGNORECASE)


def parse_yes_no(text: str | None) -> dict[str, Any]:
    """The 'Is C ambiguous?' reply: ``yes`` / ``no`` (first word), else invalid."""
    t = (text or "").strip()
    if _YES.match(t):
        return {"yes_no": "yes", "valid": True}
    if _NO.match(t):
        return {"yes_no": "no", "valid": True}
    return {"yes_no": None, "valid": False, "refusal": bool(REFUSAL.search(t))}


def parse_query(text: str, item: Any) -> dict[str, Any]:
    """A yes/no reading for 'is C ambiguous', else the letter under the strict rule and the lenient one beside it."""
    from vlamb_nb.benchmarks.mucar.prompts import released_letter, shown_options

    if item.get("setting") == "c_ambiguous":
        return parse_yes_no(text)
    setting, options = str(item.get("setting") or ""), list(item["options"])
    out = parse_answer(text, shown_options(options, setting))
    # the documented lenient reading beside the strict one: the paper read answers with a GPT-4o judge,
    # so a strict rule biases scores down; an explicit answer line that the strict rule overrides
    # ("Answer: B\nNote: the answer A ...") is read as written
    letters = "".join(LETTERS[: len(options)])
    lenient, rule = lenient_letter(text, letters)
    if rule == "answer_line" or not out["valid"]:
        out["letter_lenient"], out["parse_lenient"] = lenient, rule
    else:
        out["letter_lenient"], out["parse_lenient"] = out["letter"], "strict"
    # a prompt-sensitivity comparison reads the place chosen (0: the first option shown) and the released option
    shown = out["letter"] if out["valid"] else None
    out["position"] = letters.index(shown) if shown and shown in letters else None
    out["letter"] = released_letter(out["letter"], options, setting)
    out["letter_lenient"] = released_letter(out["letter_lenient"], options, setting)
    out["choice"] = out["letter"] if out["valid"] else None
    gold = item.get("gold")
    shown_gold = released_letter(gold, options, setting) if isinstance(gold, str) and gold and gold in letters \
        else None  # the mapping is its own inverse
    out["gold_position"] = letters.index(shown_gold) if shown_gold is not None else None
    return out
