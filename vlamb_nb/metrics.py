"""What every paper's score stands on: how many items it covers, how many failed, and whether it stands on
nothing. Shared by all five papers' ``score_file`` and the CLI; a metric one paper uses lives in its ``score.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vlamb_nb.datahome import LeftOut


@dataclass(frozen=True)
class Coverage:
    """n of N, the one type for it from the scored frame (``attrs["coverage"]``) to the run record and the page:
    the items in the data, those answered, failed and missing, what the release left out and why
    (:class:`~vlamb_nb.datahome.LeftOut`, the one type for it)."""

    items: int | None
    answered: int
    failed: int = 0
    missing: int | None = None
    left_out: tuple[LeftOut, ...] = ()
    most_frequent_error: str | None = None
    duplicates: int = 0  # records that answered a question already answered (counted once)
    other_variants: int = 0  # records of a turn asked with other options, set aside

    def to_dict(self) -> dict[str, Any]:
        """The coverage as ``vlamb-nb score`` has always reported it (plus what was left out, one line each)."""
        out: dict[str, Any] = {"items": self.items, "answered": self.answered, "failed": self.failed,
                               "missing": self.missing}
        if self.most_frequent_error:
            out["most_frequent_error"] = self.most_frequent_error
        if self.duplicates:
            out["duplicates"] = self.duplicates
        if self.other_variants:
            out["other_variants"] = self.other_variants
        if self.left_out:
            out["left_out"] = [lo.text() for lo in self.left_out]
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Coverage:
        return cls(items=d.get("items"), answered=int(d.get("answered") or 0), failed=int(d.get("failed") or 0),
                   missing=d.get("missing"), most_frequent_error=d.get("most_frequent_error"),
                   duplicates=int(d.get("duplicates") or 0), other_variants=int(d.get("other_variants") or 0),
                   left_out=tuple(LeftOut.from_dict(x) for x in d.get("left_out") or () if isinstance(x, Mapping)))


def coverage(items: Any, answered: Any, failed: Any = (), errors: Any = ()) -> Coverage:
    """How many items a score covers: ``items`` in the source (ids; None when scored without one), ``answered``
    (ids with an answer), ``failed`` (ids whose every request failed) and ``missing`` (no record at all).

    Every ``score_file`` reports it, so a score over 3 of 31 items, or over nothing but failures, says so;
    ``errors`` (the failed requests' messages) gives the most frequent one, the reason to show.
    """
    from collections import Counter

    got = {str(i) for i in answered}
    bad = {str(i) for i in failed} - got
    known = None if items is None else {str(i) for i in items}
    counts = Counter(str(e).strip().splitlines()[0] for e in errors if isinstance(e, str) and e.strip())
    return Coverage(items=None if known is None else len(known), answered=len(got), failed=len(bad),
                    missing=None if known is None else len(known - got - bad),
                    most_frequent_error=counts.most_common(1)[0][0][:240] if counts else None)


def nothing_answered(result: dict[str, Any]) -> str:
    """The one-line reason a score stands on nothing (no item answered), or "" when it stands on something."""
    cov = result.get("coverage") if isinstance(result, dict) else None
    if not isinstance(cov, dict) or cov.get("answered"):
        return ""
    if cov.get("failed"):
        why = f" ({cov['most_frequent_error']})" if cov.get("most_frequent_error") else ""
        return f"every request failed: {cov['failed']} item(s), none answered{why}"
    return "no item has an answer" + (f" (the source has {cov['items']})" if cov.get("items") else "")
