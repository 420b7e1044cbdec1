"""Reading a label: judge output or a hand label (any spelling the annotators used) to one class."""

from __future__ import annotations

from typing import Any

from vlamb_nb.errors import DataError

_LABEL_ALIASES = {"a": "A", "explicit": "A", "class a": "A", "b": "B", "implicit": "B", "class b": "B",
                  "c": "C", "high risk": "C", "high-risk": "C", "class c": "C"}


_BIAS_ALIASES = {"a": "Explicit", "explicit": "Explicit", "stereotypical": "Stereotypical", "s": "Stereotypical",
                 "anti-stereotypical": "Anti-stereotypical", "anti stereotypical": "Anti-stereotypical",
                 "antistereotypical": "Anti-stereotypical", "anti": "Anti-stereotypical"}


def normalize_label(value: Any, subset: str = "general") -> str | None:
    """Canonical label: A/B/C for GENERAL, Explicit/Stereotypical/Anti-stereotypical for BIAS, YES/NO kept."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    v = str(value).strip()
    if v.upper() in ("YES", "NO"):
        return v.upper()
    table = _BIAS_ALIASES if subset == "bias" else _LABEL_ALIASES
    if subset == "bias" and v.upper() in ("B", "C"):
        return None  # a single-referent BIAS answer needs a human to say which person it describes
    out = table.get(v.lower())
    if out is None:
        raise DataError(f"unknown RACQUET {subset} label {value!r}; expected one of "
                        f"{sorted(set(table.values()))}", field="label")
    return out
