"""MUCAR answer parsing: the option letter (``Answer: X`` first, then fallbacks) and yes/no for 'is C ambiguous'."""

from __future__ import annotations

import re
import zlib
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


# -- the scripted stand-in's replies (the inverse of the reading above) -----------------------------------------
#: the scripted chance of a right pair per setting, in the paper's order: full input best; without the context
#: (Table 3) or the image (Fig. 4) almost nothing is right, without the question less is lost (Fig. 4); a Chinese
#: prompt a little above a Malay one (Table 12); the agent above Vanilla, CoT and CODIS prompting below it (Table 4)
SCRIPTED_ACCURACY = {"full": 0.6, "c_i": 0.35, "q_i": 0.1, "c_q": 0.05, "full_zh": 0.55, "full_ms": 0.5,
                     "full_cot": 0.5, "full_codis": 0.5, "full_agent": 0.85, "full_agent_unified": 0.85,
                     "c_ambiguous": 0.7}
#: how a wrong pair goes wrong (the paper's cases, Figs. 6-12, and its failure pattern): one answer for every image
#: (image-insensitive: some queries right, the pair never), the other reading on every image, or one query of the
#: pair refused (Fig. 12), answered out of the format (a judge reads it, the strict rule does not) or hedged
SCRIPTED_ERRORS = ("image_insensitive", "other_reading", "refusal", "out_of_format", "hedged")
#: the refusal MiniCPM-o 2.6 gives in Fig. 12
SCRIPTED_REFUSAL = "I'm sorry, but I can't provide assistance with that request."


def _other(letter: str, n: int) -> str:
    """A wrong option of ``n``: the one after ``letter``."""
    letters = LETTERS[: max(int(n), 2)]
    return letters[(letters.index(letter) + 1) % len(letters)] if letter in letters else letters[0]


def scripted_choice(s: Any) -> tuple[str, str]:
    """What a scripted stand-in says to one query (:class:`~vlamb_nb.benchmarks.base.Scripted`): ``(form, letter)``,
    form ``answer`` or the error that spoils this query. A wrong pair always holds a wrong query: the
    image-insensitive pair answers one letter for every image, wrong for its first query; a refusal, an answer out
    of the format or a hedge falls on one query of the pair (fixed by the pair's name), the others answered right."""
    item = s.item
    gold, n = str(item["gold"]), int(item.get("n_options") or len(item["options"]))
    if s.right:
        return "answer", gold
    if s.outcome == "other_reading":
        return "answer", _other(gold, n)
    peers = sorted(s.peers or (item,), key=lambda p: int(p.get("record_id", 0)))
    if s.outcome == "image_insensitive":
        first = peers[0]
        same = next((str(p["gold"]) for p in peers[1:] if p["gold"] != first["gold"]), None)
        return "answer", same or _other(str(first["gold"]), int(first.get("n_options") or 2))
    spoilt = peers[zlib.crc32(str(item.get("group", "")).encode("utf-8")) % len(peers)]
    return (s.outcome, gold) if spoilt["uid"] == item["uid"] else ("answer", gold)


def scripted_reply(request: Any, s: Any) -> str:
    """A scripted stand-in's reply to one query, in the form :func:`parse_query` reads: ``Answer: X`` (Table 10's
    format), reasoning first for CoT and the agent's answer step, the agent's analysis and evidence as prose;
    ``Yes.`` / ``No.`` for 'Is C ambiguous'; the refusal, the answer out of the format ("I would go with option
    X.": no ``Answer:`` line) or the hedge ("Answer: Y or X") of an error."""
    from vlamb_nb.benchmarks.mucar.prompts import SETTINGS

    item = s.item
    form, letter = scripted_choice(s)
    if s.setting == "c_ambiguous":
        return {"answer": "Yes." if s.right else "No.", "refusal": SCRIPTED_REFUSAL,
                "out_of_format": "It depends on who says it."}.get(form, "No.")
    options = list(item["options"])
    meant = split_option(options[LETTERS.index(letter)])[1] if letter in LETTERS[: len(options)] else letter
    step = (request.meta or {}).get("step")
    if step == "detect":
        return (f"The question allows {len(options)} readings ({'; '.join(split_option(o)[1] for o in options)}); "
                "which one is meant depends on the image and the context.")
    if step == "evidence":
        return f"The image and the context point to the reading '{meant}'."
    spec = SETTINGS.get(s.setting)
    # no option's text in the reasoning: the parser's last fallback would read it as the answer
    reasoning = ("Reasoning: read together, the image and the context leave one reading of the question.\n"
                 if spec is not None and spec.strategy in ("cot", "agent", "agent_unified") else "")
    if form == "refusal":
        return SCRIPTED_REFUSAL
    if form == "out_of_format":
        return f"{reasoning}Looking at the image, I would go with option {letter}."
    if form == "hedged":
        return f"{reasoning}Answer: {_other(letter, len(options))} or {letter}"
    return f"{reasoning}Answer: {letter}"
