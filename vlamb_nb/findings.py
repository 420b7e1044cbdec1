"""A conclusion computed from the numbers beside it, never typed: what a notebook says its output shows.

A :class:`Finding` is one sentence with what it stands on (the value, its interval and method, n) and whether the
claim it makes holds (``True``), is contradicted (``False``) or cannot be told from this run (``None``: "not
shown here", with what is missing and the command that brings it). The builders below write the sentence from the
numbers, so a notebook's text changes when its numbers do: a difference whose interval holds zero is "no
detectable difference", a claim the numbers contradict is said the other way round. Notebooks show a finding
(:func:`vlamb_nb.notebook.say`) and record it, and both pages print the same sentence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

#: the mark a recorded finding carries, so the pages know it for a sentence, not a table
KIND = "finding"


@dataclass(frozen=True)
class Finding:
    """One computed sentence. ``holds``: the claim is borne out (True), contradicted (False) or not shown by this
    run (None)."""

    text: str
    holds: bool | None = None
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    method: str | None = None
    #: False: what the finding is about is not in this run (its text names what is missing)
    shown: bool = True
    #: several findings in one paragraph, each with its own mark (:func:`join`): no mark of its own
    joined: bool = False

    @property
    def mark(self) -> str:
        """The word a reader sees first: what this sentence is."""
        if not self.shown:
            return "Not shown here"
        return {True: "Shown", False: "Not borne out", None: "Cannot tell from this run"}[self.holds]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": KIND, **asdict(self)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Finding:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})

    def __str__(self) -> str:
        return self.text

    def said(self) -> str:
        """The sentence with what it is in front ("Shown. ..."), as notebooks and pages print it."""
        return self.text if self.joined else f"{self.mark}. {self.text}"

    def _repr_markdown_(self) -> str:
        if self.joined:  # each part marked: "**Shown:** ..."
            return re.sub(r"(^|(?<=\. ))(Shown|Not borne out|Cannot tell from this run|Not shown here):",
                          r"\1**\2:**", self.text)
        return f"**{self.mark}.** {self.text}"


def is_finding(value: Any) -> bool:
    """A recorded finding (its dict form), as the pages meet it in ``results.json``."""
    return isinstance(value, Mapping) and value.get("kind") == KIND and isinstance(value.get("text"), str)


def plural(n: int | float, word: str, many: str | None = None) -> str:
    """``n word`` with the word in its plural when ``n`` is not 1 (``query`` → ``queries``, ``box`` → ``boxes``)."""
    if n == 1:
        return f"{_num(n)} {word}"
    if many is None:
        many = (word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else
                word + "es" if word.endswith(("s", "x", "z", "ch", "sh")) else word + "s")
    return f"{_num(n)} {many}"


def _num(v: Any, decimals: int = 1) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) >= 100):
        return f"{int(v):,}"
    return f"{float(v):.{decimals}f}"


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def interval(low: Any, high: Any, decimals: int = 1) -> str:
    """``[lo, hi]`` rounded for reading, or empty where there is none."""
    return "" if _missing(low) or _missing(high) else f"[{_num(low, decimals)}, {_num(high, decimals)}]"


def value_text(value: Any, low: Any = None, high: Any = None, *, unit: str = "", decimals: int = 1,
               method: str | None = None, n: int | None = None, n_of: str = "item") -> str:
    """``61.0 [52.3, 69.1] (Wilson, 120 items)``: a value with its interval, how it was drawn and on how much."""
    if _missing(value):
        return "no value"
    text = f"{_num(value, decimals)}{unit}"
    ci = interval(low, high, decimals)
    if ci:
        text += f" {ci}"
    extra = [x for x in (method, plural(n, n_of) if n is not None else None) if x]
    return text + (f" ({', '.join(extra)})" if extra else "")


def not_shown(what: str, missing: str, command: str | None = None, would: str | None = None) -> Finding:
    """What a section cannot show in this run, why, the command that brings what is missing and what it would
    show."""
    text = f"{what[:1].upper()}{what[1:]} needs {missing}"
    if command:
        text += f" (`{command}`)"
    text += "."
    if would:
        text += f" With it, this section shows {would}."
    return Finding(text, None, shown=False)


def difference(a: str, b: str, diff: Any, low: Any, high: Any, *, what: str = "accuracy", unit: str = " points",
               p: Any = None, method: str | None = None, n: int | None = None, n_of: str = "item",
               discordant: tuple[int, int] | None = None, claim: str | None = None) -> Finding:
    """``a`` against ``b`` on the same units: higher, lower or no detectable difference, decided by the interval
    of ``diff`` = a − b (zero inside it: none detectable). ``claim``: the direction a paper states (``"higher"``
    or ``"lower"``, of ``a`` against ``b``); the finding then holds when the interval lies on that side, is
    contradicted when it lies on the other, and is not shown when it holds zero."""
    from vlamb_nb.stats.result import format_p

    if _missing(diff):
        return Finding(f"{a} and {b} could not be compared on {what}: no units answered by both.", None)
    side = ("higher" if not _missing(low) and low > 0 else "lower" if not _missing(high) and high < 0 else None)
    size = f"{_num(abs(float(diff)))}{unit}"
    ci = interval(low, high)
    extra = [x for x in (method, plural(n, n_of) if n is not None else None,
                         f"p {format_p(p)}" if not _missing(p) else None,
                         (f"discordant: {discordant[0]} only {a} right, {discordant[1]} only {b} right"
                          if discordant is not None else None)) if x]
    how = f" ({'; '.join(extra)})" if extra else ""
    if side is None:
        text = (f"No detectable difference in {what} between {a} and {b}: {a} − {b} = {_num(float(diff))}{unit} "
                f"{ci}, an interval that holds zero{how}.")
    else:
        text = f"{a} is {side} than {b} in {what} by {size} {ci}{how}."
    holds = None if claim is None or side is None else side == claim
    if claim is not None and holds is not None:
        text += " As the paper states." if holds else " The paper states the opposite."
    elif claim is not None:
        text += f" The paper states {a} is {claim}; this run cannot tell."
    return Finding(text, holds if claim is not None else side is not None, value=_f(diff), ci_low=_f(low),
                   ci_high=_f(high), n=n, method=method)


def count(k: int, n: int, of: str, condition: str, *, claim: str | None = None) -> Finding:
    """``k of n <of> <condition>`` (``"3 of 5 runs score higher on negated expressions"``): holds when most do;
    ``claim`` adds what a paper states, said to hold or not by the majority."""
    if n == 0:
        return Finding(f"No {of} to count: none {condition}.", None)
    most = k * 2 > n
    text = f"{_num(k)} of {plural(n, of)} {condition}" + (" (most)." if most else " (not most).")
    if claim is not None:
        text += f" The paper states {claim}: " + ("borne out here." if most else "not borne out here.")
    return Finding(text, most, value=float(k), n=n)


def within(ours: Any, low: Any, high: Any, target: Any, *, what: str, target_name: str, decimals: int = 1,
           method: str | None = None, n: int | None = None, n_of: str = "item") -> Finding:
    """Whether ``target`` (a number set by design or published) lies inside our interval for ``what``."""
    if _missing(ours) or _missing(low) or _missing(high) or _missing(target):
        return Finding(f"{what}: no interval to hold {target_name} against.", None)
    inside = float(low) <= float(target) <= float(high)
    text = (f"{what} is {value_text(ours, low, high, decimals=decimals, method=method, n=n, n_of=n_of)}; "
            f"{target_name} ({_num(target, decimals)}) lies {'inside' if inside else 'outside'} the interval.")
    return Finding(text, inside, value=_f(ours), ci_low=_f(low), ci_high=_f(high), n=n, method=method)


def join(findings: Sequence[Finding]) -> Finding:
    """Several findings as one paragraph (holds when all that can be told hold)."""
    told = [f.holds for f in findings if f.holds is not None]
    if len(findings) > 1:  # each part keeps its own mark
        return Finding(" ".join(f"{f.mark}: {f.text}" for f in findings), all(told) if told else None,
                       shown=any(f.shown for f in findings), joined=True)
    return findings[0] if findings else Finding("Nothing to say.", None)


def _f(v: Any) -> float | None:
    return None if _missing(v) else float(v)
