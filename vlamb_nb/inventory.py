"""What of a paper this package covers, as data: one ``inventory.toml`` per paper folder.

Every table, figure, statistical test, ablation and case study of the paper is one ``[[item]]`` with a status:

- ``rebuilt``: rebuilt from the release or the published counts and checked cell by cell against the paper;
- ``run``: run by the model path with the paper's protocol and set beside the paper's numbers;
- ``not_derivable``: neither the release nor the text lets one rebuild it; ``reason`` says why;
- ``missing``: derivable but not built yet; ``reason`` says what is lacking (listed with the not-derivable items
  on every page, so nothing is silently left out).

``where`` says where a reader finds it (the notebook's section or the function), ``calls`` names the package
functions that produce it (each is checked to exist and to be called in ``notebook``). The paper's
``not_derivable()`` is the inventory's ``not_derivable`` items, and the README's coverage table is generated from
the inventories (``scripts/readme_tables.py``), so no page claims more than the code does. This module reads one
file; it imports no paper.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from vlamb_nb.errors import DataError

FILE = "inventory.toml"
STATUSES = ("rebuilt", "run", "not_derivable", "missing")
KINDS = ("table", "figure", "test", "ablation", "case study", "human study", "statistic", "prompt")
#: what a status is called on the pages and in the README
STATUS_LABEL = {"rebuilt": "rebuilt", "run": "run", "not_derivable": "not derivable", "missing": "missing"}
#: the statuses that need a reason (and are listed by ``not_derivable()``)
UNCOVERED = ("not_derivable", "missing")
_FIELDS = {"item", "kind", "status", "where", "calls", "notebook", "reason", "note"}


@dataclass(frozen=True)
class Item:
    """One item of the paper and how the package covers it."""

    item: str
    kind: str
    status: str
    where: str = ""
    calls: tuple[str, ...] = ()
    notebook: str = ""
    reason: str = ""
    note: str = ""

    @property
    def refs(self) -> frozenset[str]:
        """The paper's ids the item names (``Table 4``, ``Fig. 6``, ``§5``, ``App. J``)."""
        return refs(self.item)


@dataclass(frozen=True)
class Inventory:
    paper: str
    items: tuple[Item, ...] = field(default_factory=tuple)
    source: str = ""

    def not_derivable(self) -> list[dict[str, str]]:
        """The items neither the release nor the text lets one rebuild, each with its reason (an item not
        built yet says so in its reason)."""
        return [{"item": i.item, "reason": i.reason if i.status == "not_derivable" else f"not built yet: {i.reason}"}
                for i in self.items if i.status in UNCOVERED]

    def counts(self) -> dict[str, int]:
        return {s: sum(i.status == s for i in self.items) for s in STATUSES}

    def covering(self, ref: str) -> list[Item]:
        """The items that name ``ref`` (an id as :func:`refs` gives it)."""
        return [i for i in self.items if ref in i.refs]


def read(path: str | os.PathLike) -> Inventory:
    """The inventory in ``path``; a malformed one is one line naming the file, the item and the field."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise DataError(f"unreadable inventory ({e})", source=str(path)) from None
    paper = data.get("paper")
    if not isinstance(paper, str) or not paper:
        raise DataError("needs paper = \"<name>\"", source=str(path), field="paper")
    rows = data.get("item", [])
    if not isinstance(rows, list):
        raise DataError("item must be an array of tables ([[item]])", source=str(path), field="item")
    items = []
    for n, row in enumerate(rows, 1):
        items.append(_item(row, path, n))
    seen: set[str] = set()
    for n, it in enumerate(items, 1):
        if it.item in seen:
            raise DataError(f"item {it.item!r} listed twice", source=str(path), row=n, field="item")
        seen.add(it.item)
    return Inventory(paper=paper, items=tuple(items), source=str(path))


def _item(row: object, path: Path, n: int) -> Item:
    if not isinstance(row, dict):
        raise DataError("not a table", source=str(path), row=n)
    unknown = sorted(set(row) - _FIELDS)
    if unknown:
        raise DataError(f"unknown field(s) {', '.join(unknown)}", source=str(path), row=n, field=unknown[0])
    for key in ("item", "kind", "status"):
        if not isinstance(row.get(key), str) or not row[key].strip():
            raise DataError("missing or empty", source=str(path), row=n, field=key)
    for key in ("where", "notebook", "reason", "note"):
        if not isinstance(row.get(key, ""), str):
            raise DataError("must be text", source=str(path), row=n, field=key)
    calls = row.get("calls", [])
    if not isinstance(calls, list) or not all(isinstance(c, str) and c for c in calls):
        raise DataError("must be a list of dotted names", source=str(path), row=n, field="calls")
    it = Item(item=row["item"].strip(), kind=row["kind"], status=row["status"], where=row.get("where", ""),
              calls=tuple(calls), notebook=row.get("notebook", ""), reason=row.get("reason", "").strip(),
              note=row.get("note", ""))
    if it.status not in STATUSES:
        raise DataError(f"status {it.status!r} is none of {', '.join(STATUSES)}", source=str(path), row=n,
                        field="status")
    if it.kind not in KINDS:
        raise DataError(f"kind {it.kind!r} is none of {', '.join(KINDS)}", source=str(path), row=n, field="kind")
    if it.status in UNCOVERED and not it.reason:
        raise DataError(f"{it.item!r} is {STATUS_LABEL[it.status]} without a reason", source=str(path), row=n,
                        field="reason")
    if it.status not in UNCOVERED and not (it.where or it.calls):
        raise DataError(f"{it.item!r} is {it.status} but says nowhere where", source=str(path), row=n,
                        field="where")
    return it


# -- the ids an item or a heading names ----------------------------------------------------------------------
_ID = r"[A-Z]?\d+[a-z]?"
_REF = re.compile(
    rf"\b(?P<kind>Tables?|Figs?\.?|Figures?)\s+(?P<ids>{_ID}(?:\s*(?:,|and|/|&|–|-|to)\s*{_ID})*)")
_SECTION = re.compile(r"(?:§\s?(?P<sec>\d+(?:\.\d+)*))|(?:\bApp(?:endix|\.)\s+(?P<app>[A-Z]\b(?:\.\d+)*))")


def refs(text: str) -> frozenset[str]:
    """The tables, figures, sections and appendices ``text`` names, normalised: ``Tables 3, G4`` gives
    ``Table 3`` and ``Table G4``, ``Figs. 6–12`` every figure from 6 to 12, ``§5.4`` ``§5.4``, ``App. J``
    ``App. J``."""
    out: set[str] = set()
    for m in _REF.finditer(text):
        kind = "Table" if m["kind"].startswith("Table") else "Fig."
        parts = re.split(r"\s*(,|and|/|&|–|-|to)\s*", m["ids"])
        ids = [p.strip() for p in parts[::2]]
        seps = parts[1::2]
        prev = None
        for sep, cur in zip([None, *seps], ids, strict=True):
            a = re.fullmatch(r"([A-Z]?)(\d+)", prev or "")
            b = re.fullmatch(r"([A-Z]?)(\d+)", cur)
            if sep in ("–", "-", "to") and a and b and a[1] == b[1] and int(a[2]) <= int(b[2]):
                out |= {f"{kind} {a[1]}{k}" for k in range(int(a[2]), int(b[2]) + 1)}
            else:
                out.add(f"{kind} {cur}")
            prev = cur
    for m in _SECTION.finditer(text):
        out.add(f"§{m['sec']}" if m["sec"] else f"App. {m['app']}")
    return frozenset(out)


# -- the README's coverage table -------------------------------------------------------------------------------
def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def coverage_markdown(inventories: list[tuple[str, Inventory]]) -> str:
    """The README's coverage part from ``(title, inventory)`` pairs: one count per paper and status, then each
    paper's items (folded), every not-derivable item with its reason."""
    lines = ["| paper | items | rebuilt | run | not derivable | missing |", "|---|---:|---:|---:|---:|---:|"]
    for title, inv in inventories:
        c = inv.counts()
        lines.append(f"| {title} | {len(inv.items)} | {c['rebuilt']} | {c['run']} | {c['not_derivable']} | "
                     f"{c['missing']} |")
    for title, inv in inventories:
        lines += ["", f"<details><summary>{title}: every item (<code>{Path(inv.source).parent.name}/{FILE}"
                      "</code>)</summary>", "", "| item | kind | status | where, or why not |", "|---|---|---|---|"]
        for it in inv.items:
            where = it.reason if it.status in UNCOVERED else it.where or ", ".join(f"`{c}`" for c in it.calls)
            lines.append(f"| {_cell(it.item)} | {it.kind} | {STATUS_LABEL[it.status]} | {_cell(where)} |")
        lines += ["", "</details>"]
    return "\n".join(lines)


def replace_block(text: str, name: str, body: str) -> str:
    """``text`` with what lies between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->`` replaced by ``body``."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        raise DataError(f"no {begin} ... {end} block", field=name)
    return text[:i + len(begin)] + "\n" + body.rstrip("\n") + "\n" + text[j:]


def block(text: str, name: str) -> str:
    """What lies between the markers of ``name`` (see :func:`replace_block`), without the newlines around it."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        raise DataError(f"no {begin} ... {end} block", field=name)
    return text[i + len(begin):j].strip("\n")
