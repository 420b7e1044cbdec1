"""What every paper's score stands on: how many items it covers, how many failed, and whether it stands on
nothing. Shared by all five papers' ``score_file`` and the CLI; a metric one paper uses lives in its ``score.py``.
"""

from __future__ import annotations

from typing import Any


def coverage(items: Any, answered: Any, failed: Any = (), errors: Any = ()) -> dict[str, Any]:
    """How many items a score covers: ``items`` in the source (ids; None when scored without one), ``answered``
    (ids with an answer), ``failed`` (ids whose every request failed) and ``missing`` (no record at all).

    Every ``score_file`` reports it, so a score over 3 of 31 items, or over nothing but failures, says so;
    ``errors`` (the failed requests' messages) gives the most frequent one, the reason to show.
    """
    from collections import Counter

    got = {str(i) for i in answered}
    bad = {str(i) for i in failed} - got
    known = None if items is None else {str(i) for i in items}
    out: dict[str, Any] = {"items": None if known is None else len(known), "answered": len(got), "failed": len(bad),
                           "missing": None if known is None else len(known - got - bad)}
    counts = Counter(str(e).strip().splitlines()[0] for e in errors if isinstance(e, str) and e.strip())
    if counts:
        out["most_frequent_error"] = counts.most_common(1)[0][0][:240]
    return out


def nothing_answered(result: dict[str, Any]) -> str:
    """The one-line reason a score stands on nothing (no item answered), or "" when it stands on something."""
    cov = result.get("coverage") if isinstance(result, dict) else None
    if not isinstance(cov, dict) or cov.get("answered"):
        return ""
    if cov.get("failed"):
        why = f" ({cov['most_frequent_error']})" if cov.get("most_frequent_error") else ""
        return f"every request failed: {cov['failed']} item(s), none answered{why}"
    return "no item has an answer" + (f" (the source has {cov['items']})" if cov.get("items") else "")
