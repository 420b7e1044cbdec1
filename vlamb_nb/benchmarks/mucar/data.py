"""MUCAR data: the ``data-all.json`` loader (three record schemas), grouping, quirks, images, a sample.

The release mixes three layouts in one JSON array (see the notes, §11.2):

- **A** (categories 1-6): ``sentence`` holds the context, ``question_id`` groups the images;
- **B** (dual ambiguity): the context is embedded in ``question``; ``pair_id`` is a string;
- **C** (dual ambiguity, CODIS style): separate ``context`` plus a CODIS image-ambiguity ``category``.

:func:`load_items` normalises all three into one row per query, so everything downstream
(prompts, scoring, tables) sees one shape. Pairs are ``question_id`` groups in every schema: the
paper's 501 pairs (see ``GROUPINGS`` for the alternatives and why they are not the default).
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from vlamb_nb.errors import DataError, ImageError, SettingError
from vlamb_nb.jsonl import read_json
from vlamb_nb.release_spec import RAW, HubFiles, ItemFiles, KnownDefect, Release, UrlFile

NAME = "mucar"
DATA_FILE = "data-all.json"
HUB_IMAGES = "kevindragon221/MUCAR"

CATEGORIES = {1: "Polysemy", 2: "Homonymy", 3: "Grammar", 4: "Semantics", 5: "Specialized", 6: "Cultural",
              7: "Dual-ambiguity"}
CATEGORY_ORDER = list(CATEGORIES.values())
LANGUAGES = {1: "English", 2: "Chinese", 3: "Malay"}
LANGUAGE_ORDER = ["Chinese", "English", "Malay"]  # Table 5's column order
LETTERS = "ABCDE"

ITEM_COLUMNS = ["uid", "record_id", "group", "category", "category_code", "language", "language_code", "context",
                "question", "options", "n_options", "gold", "gold_text", "gold_method", "image_id",
                "image_ambiguity", "scenario", "schema", "question_id", "pair_id", "old_id", "change_language",
                "context_embedded"]
#: record fields that would name a query's scenario (Fig. 3, right panel). The paper never defines its
#: "scenarios" and the release carries none of these fields, so the panel is not derivable from it; the
#: loader still reads one if a later release adds it.
SCENARIO_FIELDS = ("scenario", "scenarios", "scene", "domain", "topic")

# -- grouping rules ------------------------------------------------------------------------------
#: ``question_id`` (the default) is the paper's pairing: it gives the 501 pairs of §3.3, 439 in the
#: first six categories and 62 dual-ambiguity, and 62 is the Dual Acc_p denominator of Table 2's
#: InternVL / Qwen rows. In the dual block it joins each schema-B query (and its translations) with
#: the schema-C pair that reuses its ``question_id`` (groups of 9), and keeps untranslated queries alone.
#: The other rules are *not* the paper's, kept to compare against:
#:
#: - ``question_id_schema``: schema B and C apart under one ``question_id`` (97 dual groups, the
#:   denominator of Table 2's GPT-4V / GPT-4o / Deepseek rows);
#: - ``pair_language``: dual by (``pair_id``, language), 194 dual and 633 groups in all (this
#:   package's default before; Dual Acc_p then has more, smaller groups and comes out far higher);
#: - ``pair_id`` (70 dual groups) and ``pair_language_schema``.
#:
#: Schema A (categories 1-6) is grouped by ``question_id`` under every rule.
GROUPINGS = ("question_id", "question_id_schema", "pair_language", "pair_id", "pair_language_schema")
DEFAULT_GROUPING = "question_id"
NON_DUAL_CATEGORIES = CATEGORY_ORDER[:6]


def resolve_grouping(rule: str) -> str:
    """The rule's canonical name (``"default"`` is the paper's ``question_id``); unknown rules raise."""
    rule = DEFAULT_GROUPING if rule == "default" else rule
    if rule not in GROUPINGS:
        raise SettingError(f"unknown MUCAR grouping {rule!r}; choose one of {', '.join(GROUPINGS)} (or default)")
    return rule


def pair_key(question_id: Any, pair_id: Any, language: Any, schema: str, rule: str = DEFAULT_GROUPING) -> str:
    """The group of one query from its raw keys, so the loader and :func:`regroup` agree."""
    rule = resolve_grouping(rule)
    if rule == "question_id":
        return f"q{question_id}"
    if rule == "question_id_schema" or schema == "A":
        return f"q{question_id}" + (f"/{schema}" if schema != "A" else "")
    if rule == "pair_language":
        return f"p{pair_id}/l{language}"
    if rule == "pair_id":
        return f"p{pair_id}"
    return f"p{pair_id}/l{language}/{schema}"


def group_key(rec: dict[str, Any], schema: str, rule: str = DEFAULT_GROUPING) -> str:
    """The pair (group) a released record belongs to; all queries of a group must be right for Acc_p."""
    return pair_key(rec.get("question_id"), rec.get("pair_id"), rec["tags"]["language"], schema, rule)


def regroup(items, rule: str):
    """``items["group"]`` under another rule (a Series), without reloading: to compare pair counts."""
    return items.apply(lambda r: pair_key(r["question_id"], r["pair_id"], r["language_code"], r["schema"], rule),
                       axis=1)


# -- schema detection and gold letters -----------------------------------------------------------
def record_schema(rec: dict[str, Any]) -> str:
    if "sentence" in rec:
        return "A"
    if "context" in rec:
        return "C"
    if "pair_id" in rec:
        return "B"
    raise DataError("record has none of 'sentence', 'context', 'pair_id' (not schema A, B or C)")


_OPTION_PREFIX = re.compile(r"^\s*\(?([A-E])\s*[.．、:)）]\s*")


def split_option(option: str) -> tuple[str | None, str]:
    """``"A.text"`` / ``"A. text"`` -> ("A", "text"); an option without a letter prefix -> (None, text)."""
    m = _OPTION_PREFIX.match(option)
    if not m:
        return None, option.strip()
    return m.group(1), option[m.end():].strip()


def _norm(text: str) -> str:
    return re.sub(r"[\s。.!！?？,，;；:：\"'“”‘’]+", "", text).casefold()


def resolve_gold(answer: str, options: list[str]) -> tuple[str, str]:
    """Gold letter and how it was found: exact option, letter prefix, or option-text match.

    Letters win over text because the release has typos in gold strings (``"A.是。"`` vs option
    ``"A.是"``) and a few golds whose text is not the option's (``"B.Yes."``); both keep the letter.
    """
    letters = [split_option(o)[0] or LETTERS[i] for i, o in enumerate(options)]
    if answer in options:
        return letters[options.index(answer)], "exact"
    letter, text = split_option(answer)
    if letter is not None and letter in letters:
        return letter, "letter"
    hits = [letters[i] for i, o in enumerate(options) if _norm(split_option(o)[1]) == _norm(text)]
    if len(hits) == 1:
        return hits[0], "text"
    raise ValueError(f"answer {answer!r} matches no option of {options}")


# -- the loader ----------------------------------------------------------------------------------
def resolve_source(source: str | os.PathLike | None) -> Path:
    """``data-all.json`` from a file path, a folder holding it, or (None) the release beside the checkout."""
    if source is None:
        from vlamb_nb.paths import shared_data_dir

        base = shared_data_dir()
        if base is None or not (base / "mucar" / DATA_FILE).is_file():
            raise DataError("no MUCAR source given and no released data found; pass the path of "
                            f"{DATA_FILE} (github.com/THUNLP-MT/MUCAR) or a folder holding it")
        return base / "mucar" / DATA_FILE
    p = Path(source)
    if p.is_dir():
        p = p / DATA_FILE
    if not p.is_file():
        raise DataError(f"MUCAR data file not found: {p}")
    return p


def read_records(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The release's records (a JSON list); bad text or JSON is a DataError naming the file and line."""
    return read_json(path, expect=list, what="records")


def _field(rec: dict[str, Any], name: str, typ: type | tuple[type, ...], src: str, row: int) -> Any:
    if name not in rec:
        raise DataError("missing field", source=src, row=row, field=name)
    v = rec[name]
    if not isinstance(v, typ):
        want = " or ".join(t.__name__ for t in typ) if isinstance(typ, tuple) else typ.__name__
        raise DataError(f"expected {want}, got {type(v).__name__}", source=src, row=row, field=name)
    return v


def normalise_record(rec: Any, *, src: str, row: int, grouping: str = DEFAULT_GROUPING) -> dict[str, Any]:
    """One released record (any schema) as one normalised row; malformed records raise ``DataError``."""
    if not isinstance(rec, dict):
        raise DataError("record is not an object", source=src, row=row)
    try:
        schema = record_schema(rec)
    except DataError as e:
        raise DataError(str(e), source=src, row=row) from None
    rid = _field(rec, "id", int, src, row)
    tags = _field(rec, "tags", dict, src, row)
    cat = tags.get("category")
    lang = tags.get("language")
    if cat not in CATEGORIES:
        raise DataError(f"unknown category code {cat!r}", source=src, row=row, field="tags.category")
    if lang not in LANGUAGES:
        raise DataError(f"unknown language code {lang!r}", source=src, row=row, field="tags.language")
    question = _field(rec, "question", str, src, row)
    options = _field(rec, "options", list, src, row)
    if not (1 <= len(options) <= len(LETTERS)) or not all(isinstance(o, str) for o in options):
        raise DataError(f"expected 1-5 option strings, got {options!r}", source=src, row=row, field="options")
    answer = _field(rec, "answer", str, src, row)
    try:
        gold, method = resolve_gold(answer, options)
    except ValueError as e:
        raise DataError(str(e), source=src, row=row, field="answer") from None
    gold_text = split_option(options[LETTERS.index(gold)] if gold in LETTERS[: len(options)] else answer)[1]
    context = {"A": rec.get("sentence"), "C": rec.get("context"), "B": None}[schema]
    if schema == "B":
        _field(rec, "pair_id", str, src, row)
    elif schema == "C":
        _field(rec, "context", str, src, row)
        _field(rec, "pair_id", str, src, row)
    else:
        _field(rec, "sentence", str, src, row)
    image_id = _field(rec, "image_id", str, src, row)
    if "question_id" not in rec:
        raise DataError("missing field", source=src, row=row, field="question_id")
    return {
        "uid": f"mucar-{rid}", "record_id": rid, "group": group_key(rec, schema, grouping),
        "category": CATEGORIES[cat], "category_code": cat, "language": LANGUAGES[lang], "language_code": lang,
        "context": context, "question": question, "options": list(options), "n_options": len(options),
        "gold": gold, "gold_text": gold_text, "gold_method": method, "image_id": image_id,
        "image_ambiguity": rec.get("category") if schema == "C" else None,
        "scenario": next((str(rec[f]) for f in SCENARIO_FIELDS if isinstance(rec.get(f), str) and rec[f].strip()),
                         None),
        "schema": schema,
        "question_id": rec.get("question_id"), "pair_id": rec.get("pair_id"), "old_id": rec.get("old_id"),
        "change_language": tags.get("change_language"), "context_embedded": schema == "B",
    }


def load_items(source: str | os.PathLike | None = None, *, grouping: str = DEFAULT_GROUPING,
               images: str | os.PathLike | None = None):
    """The release as a DataFrame, one row per query (columns ``ITEM_COLUMNS``).

    ``images`` (a folder, or the hub id ``kevindragon221/MUCAR`` for a local hub snapshot) is kept
    in ``items.attrs["images"]`` for the request builder; a ``images/`` folder next to the JSON is
    picked up automatically (the layout :func:`make_sample` writes).
    """
    import pandas as pd

    grouping = resolve_grouping(grouping)
    path = resolve_source(source)
    rows = [normalise_record(r, src=str(path.name), row=i, grouping=grouping)
            for i, r in enumerate(read_records(path), start=1)]
    items = pd.DataFrame(rows, columns=ITEM_COLUMNS)
    dup = items["uid"].duplicated()
    if dup.any():
        i = int(dup.idxmax())
        raise DataError(f"duplicate id {items['record_id'].iloc[i]}", source=path.name, row=i + 1, field="id")
    if images is None and (path.parent / "images").is_dir():
        images = path.parent / "images"
    items.attrs["source"] = str(path)
    items.attrs["images"] = str(images) if images is not None else None
    items.attrs["grouping"] = grouping
    return items


# -- statistics and quirks -----------------------------------------------------------------------
def category_language_counts(items):
    """Table 5's layout (category × language with totals) recomputed from the items."""
    import pandas as pd

    tab = pd.crosstab(pd.Categorical(items["category"], CATEGORY_ORDER),
                      pd.Categorical(items["language"], LANGUAGE_ORDER), dropna=False)
    tab.index.name, tab.columns.name = "Category", None
    tab.columns = list(tab.columns)
    tab["Total"] = tab.sum(axis=1)
    tab.loc["Overall"] = tab.sum(axis=0)
    return tab.astype(int)


def scenario_counts(items):
    """Queries per scenario (Fig. 3, right) from a scenario field, and what stands in where there is none.

    Returns ``(counts, info)``: ``counts`` has columns ``scenario, queries`` and is empty when no record
    carries a :data:`SCENARIO_FIELDS` field (the release: 0 of 1278 do). ``info`` says whether the panel is
    ``derivable`` and, if not, names the closest released label, the CODIS image-ambiguity type of the
    schema-C dual-ambiguity queries (``stand_in``, 210 queries in the release): related to the paper's
    "scenarios" by nothing the paper states, so it is drawn only as a labelled stand-in.
    """
    import pandas as pd

    def count(col: str, name: str):
        vc = items[col].dropna().value_counts()
        return pd.DataFrame({name: vc.index.astype(str), "queries": vc.to_numpy(dtype=int)})

    labelled = int(items["scenario"].notna().sum()) if "scenario" in items else 0
    counts = count("scenario", "scenario") if labelled else pd.DataFrame({"scenario": [], "queries": []})
    stand_in = count("image_ambiguity", "image_ambiguity")
    info = {"derivable": labelled > 0, "labelled_queries": labelled, "queries": int(len(items)),
            "fields_looked_for": list(SCENARIO_FIELDS),
            "stand_in": "image_ambiguity (schema-C category)" if not labelled and len(stand_in) else None,
            "stand_in_queries": int(stand_in["queries"].sum()) if not labelled else 0,
            "stand_in_counts": dict(zip(stand_in["image_ambiguity"], stand_in["queries"].tolist(), strict=True))
            if not labelled else {},
            "reason": "" if labelled else "the release has no scenario field (looked for "
                      + ", ".join(SCENARIO_FIELDS) + ") and the paper does not define its scenarios"}
    return counts, info


def group_sizes(items):
    return items.groupby("group", sort=False).size()


def data_stats(items) -> dict[str, Any]:
    """Counts for ``vlamb-nb data stats mucar``: queries, pairs (groups), per category / language / schema.

    ``pairs`` / ``pairs_non_dual`` / ``pairs_dual`` are the numbers to hold against the paper's
    501 = 439 + 62 (§3.3); a group counts under its first query's category, as in scoring.
    """
    sizes = group_sizes(items)
    first = items.sort_values("record_id", kind="stable").drop_duplicates("group")
    dual = first["category"] == "Dual-ambiguity"
    return {
        "queries": int(len(items)),
        "groups": int(len(sizes)),
        "pairs": int(len(sizes)),
        "pairs_non_dual": int((~dual).sum()),
        "pairs_dual": int(dual.sum()),
        "grouping": items.attrs.get("grouping", DEFAULT_GROUPING),
        "group_sizes": {int(k): int(v) for k, v in sizes.value_counts().sort_index().items()},
        "per_category": {c: int((items["category"] == c).sum()) for c in CATEGORY_ORDER},
        "groups_per_category": {c: int((first["category"] == c).sum()) for c in CATEGORY_ORDER},
        "per_language": {lang: int((items["language"] == lang).sum()) for lang in LANGUAGE_ORDER},
        "per_schema": {s: int((items["schema"] == s).sum()) for s in "ABC"},
        "options_per_query": {int(k): int(v) for k, v in items["n_options"].value_counts().sort_index().items()},
        "gold_methods": {str(k): int(v) for k, v in items["gold_method"].value_counts().items()},
        "image_ambiguity": {str(k): int(v) for k, v in items["image_ambiguity"].dropna().value_counts().items()},
    }


def quirks(items):
    """Data quirks a reader must know before trusting Acc_p (one row per finding, ``kind`` names it)."""
    import pandas as pd

    rows: list[dict[str, Any]] = []

    def add(kind: str, group: str, ids: Iterable[int], detail: str) -> None:
        rows.append({"kind": kind, "group": group, "record_ids": [int(i) for i in ids], "detail": detail})

    for g, df in items.groupby("group", sort=False):
        ids = df["record_id"].tolist()
        if len(df) == 1:
            add("singleton_group", g, ids, "a group of one query: Acc_p equals Acc_q for it")
        if df["category"].nunique() > 1:
            add("mixed_category_group", g, ids, "categories " + ", ".join(df["category"].unique())
                + "; the group counts under its first query's category")
        if df["language"].nunique() > 1:
            add("mixed_language_group", g, ids, "languages " + ", ".join(df["language"].unique()))
        if len(df) > 1 and df["gold"].nunique() == 1:
            add("identical_gold_in_group", g, ids, f"every query's gold is {df['gold'].iloc[0]}")
    for _, r in items.iterrows():
        texts = [_norm(split_option(o)[1]) for o in r["options"]]
        if len(set(texts)) < len(texts):
            add("duplicate_options", r["group"], [r["record_id"]], " | ".join(r["options"]))
        if r["gold_method"] != "exact":
            add("gold_not_an_option", r["group"], [r["record_id"]],
                f"answer string differs from every option; gold {r['gold']} found by {r['gold_method']}")
        gold_t = _norm(r["gold_text"])
        q = r["question"].rstrip()
        if len(gold_t) >= 2 and _norm(q[-max(len(r["gold_text"]) + 2, 1):]).endswith(gold_t) \
                and not q.endswith(("?", "？")):
            add("answer_in_question", r["group"], [r["record_id"]], f"question ends with the gold {r['gold_text']!r}")
    return pd.DataFrame(rows, columns=["kind", "group", "record_ids", "detail"])


def quirk_counts(q) -> dict[str, int]:
    return {str(k): int(v) for k, v in q["kind"].value_counts().items()}


# -- images --------------------------------------------------------------------------------------
class ImageResolver:
    """Finds the image of an ``image_id`` in a local folder, or in a local snapshot of the hub release.

    Folder: ``<root>/<image_id>.<ext>`` (common extensions tried; ``image_id`` may contain
    ``malay/``), also under ``images/`` and ``data/``. Parquet files (the hub's ``{"bytes","path"}``
    image struct) are indexed by an ``image_id`` column or the stem of the image ``path``.
    """

    SUBDIRS = ("", "images", "image", "data", "MUCAR")

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise ImageError(f"MUCAR image folder not found: {self.root}")
        self._parquet: dict[str, dict[str, Any]] | None = None

    @classmethod
    def from_spec(cls, spec: str | os.PathLike, *, local_files_only: bool = True) -> ImageResolver:
        """A folder path, or ``kevindragon221/MUCAR`` (a hub snapshot; offline unless asked otherwise)."""
        if Path(spec).is_dir():
            return cls(spec)
        if isinstance(spec, str) and re.fullmatch(r"[\w.-]+/[\w.-]+", spec):
            try:
                from huggingface_hub import snapshot_download
            except ImportError:  # pragma: no cover - huggingface_hub ships with transformers
                raise ImageError("huggingface_hub is needed to read the hub image release") from None
            try:
                path = snapshot_download(spec, repo_type="dataset", local_files_only=local_files_only)
            except Exception as e:  # noqa: BLE001 - any hub failure becomes one clear error
                raise ImageError(f"MUCAR images {spec!r} are not available locally ({type(e).__name__}); "
                                 "download them once with local_files_only=False, or pass a folder") from None
            return cls(path)
        raise ImageError(f"MUCAR images: {spec!s} is neither a folder nor a hub dataset id")

    def _index_parquet(self) -> dict[str, dict[str, Any]]:
        if self._parquet is None:
            self._parquet = {}
            files = sorted(self.root.rglob("*.parquet"))
            if files:
                import pyarrow.parquet as pq

                for f in files:
                    tab = pq.read_table(f).to_pylist()
                    for row in tab:
                        img = next((v for v in row.values() if isinstance(v, dict) and "bytes" in v), None)
                        if img is None:
                            continue
                        key = row.get("image_id") or (Path(img.get("path") or "").with_suffix("").as_posix())
                        if key:
                            self._parquet[str(key)] = img
        return self._parquet

    def candidates(self, image_id: str) -> Iterator[Path]:
        """The paths an image id may have, in order, one at a time (the first that exists ends the search, so an
        image is found without resolving every other name it might have had)."""
        from vlamb_nb.images import IMAGE_EXTENSIONS, safe_join

        for sub in self.SUBDIRS:
            base = self.root / sub if sub else self.root
            for ext in IMAGE_EXTENSIONS:
                for e in (ext, ext.upper()):
                    yield safe_join(self.root, (base / f"{image_id}{e}").relative_to(self.root))

    def resolve(self, image_id: str) -> Any:
        """A path (or a ``{"bytes","path"}`` dict from parquet); ``ImageError`` lists what was tried."""
        tried = []
        for p in self.candidates(image_id):
            if p.is_file():
                return p
            tried.append(p.relative_to(self.root.resolve()).as_posix())
        idx = self._index_parquet()
        for key in (image_id, Path(image_id).name):
            if key in idx:
                return idx[key]
        shown = ", ".join(tried[:8]) + (f", ... ({len(tried)} paths)" if len(tried) > 8 else "")
        raise ImageError(f"no MUCAR image {image_id!r} under {self.root}; tried {shown}"
                         + ("; and the parquet index" if idx else ""))

    def load(self, image_id: str):
        from vlamb_nb.images import load_image

        return load_image(self.resolve(image_id))


# -- a generated sample in the release's exact format ---------------------------------------------
_WORDS = ["bank", "bat", "crane", "spring", "bark", "pitch", "seal", "match", "light", "rock", "fan", "ring"]


def _empty_eval() -> dict[str, Any]:
    return {"models": {"GPT_4o": {"output": "", "human_eval": "", "GPT4o_eval": ""}}}


def _draw(path: Path, label: str, seed: int) -> None:
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    img = Image.new("RGB", (96, 72), tuple(rng.randrange(40, 230) for _ in range(3)))
    d = ImageDraw.Draw(img)
    x, y = rng.randrange(5, 50), rng.randrange(5, 30)
    d.ellipse([x, y, x + 30, y + 30], fill=tuple(rng.randrange(0, 255) for _ in range(3)))
    d.text((4, 58), label[:14], fill=(0, 0, 0))
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path)


def make_sample(directory: str | os.PathLike, n: int = 8, seed: int = 0) -> Path:
    """Write ``data-all.json`` plus generated ``images/`` in the release's layout; return the JSON path.

    Covers all three record schemas (A with ``"A.x"`` options, B with the context in the question,
    C with a CODIS category and ``"A. x"`` translations sharing ``old_id``), a singleton group, a group of
    four and a gold typo, so every loader path runs. As in the release, the schema-C pair reuses the
    ``question_id`` of a schema-B query (one ``question_id`` pair of 9 queries) and one dual query has
    no translations. ``n`` is the number of schema-A groups (>= 2).
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    recs: list[dict[str, Any]] = []
    n = max(2, int(n))

    def add(**kw: Any) -> None:
        kw = {"id": len(recs), **kw}
        kw.setdefault("eval", _empty_eval())
        recs.append(kw)

    for g in range(n):  # schema A: one context, one question, one image per reading
        qid = g + 1
        word = _WORDS[(g + seed) % len(_WORDS)]
        cat = g % 6 + 1
        lang = [1, 2, 3][g % 3]
        size = 4 if g == 1 else 2
        opts = [f"{LETTERS[k]}.{word} reading {k + 1}." for k in range(size)]
        for k in range(size):
            answer = opts[k]
            if g == 0 and k == 1:
                answer = f"B.{word} readin {k + 1}."  # a typo in the gold string, as in the release
            add(question_id=qid, image_id=f"{qid}-{k + 1}", sentence=f"I saw the {word} near the water. ",
                question=f"What does '{word}' mean here?", options=opts, answer=answer,
                tags={"category": cat, "language": lang})
    base_q = len(recs) + 900
    b_pairs = [("1", 2), ("2", 1)]  # schema B: context inside the question; pair "2" is never translated
    b_origs = []
    for pid, size in b_pairs:
        for k in range(size):
            if pid == "1":
                b_origs.append(len(recs))
            add(question_id=base_q + len(recs), image_id=f"malay/{pid}-1", pair_id=pid,
                question=f"I am {30 + 40 * k} years old. My friend waved on the boat. Is my friend at the front?",
                options=["A.Front.", "B.Back."], answer=["A.Front.", "B.Back."][k % 2],
                tags={"category": 7, "language": 1, "change_language": int(pid == "1")})
    c_origs = []
    for k in range(2):  # schema C: separate context, CODIS image-ambiguity type, a schema-B question_id
        c_origs.append(len(recs))
        add(question_id=recs[b_origs[0]]["question_id"], image_id="malay/101", pair_id="3",
            context=["The courier gives a box to the man.", "The man gives a box to the courier."][k],
            question="Is the man on the right picking up the box or putting it down?",
            answer=["A.Picking up.", "B.Putting down."][k], category="Temporal Information",
            options=["A.Picking up.", "B.Putting down."],
            tags={"category": 7, "language": 1, "change_language": 1})
    for orig in b_origs + c_origs:  # translations: zh then ms, "A. x" options, shared old_id
        src = recs[orig]
        for lang, tr in ((2, "（译）"), (3, "(terj.) ")):
            new = {k: v for k, v in src.items() if k not in ("id", "eval")}
            new["question"] = tr + src["question"]
            new["options"] = [o.replace(".", ". " + tr, 1) for o in src["options"]]
            new["answer"] = new["options"][src["options"].index(src["answer"])]
            new["tags"] = {"category": 7, "language": lang, "change_language": 1}
            new["old_id"] = orig
            add(**new)
    (out / DATA_FILE).write_text(json.dumps(recs, ensure_ascii=False, indent=1), encoding="utf-8")
    for i, image_id in enumerate(sorted({r["image_id"] for r in recs})):
        _draw(out / "images" / f"{image_id}.png", image_id, seed * 1000 + i)
    return out / DATA_FILE


# -- the release -------------------------------------------------------------------------------------
RECORDS_REPO = "THUNLP-MT/MUCAR"
RECORDS_COMMIT = "c2410e1b3f229f6ebb3b0f46a3cdad80a8347a56"
RECORDS_SHA256 = "9d100e26587386352143acc3ea81ba152e21aebcd7f1db9155b4f01b6391fb22"
IMAGES_REVISION = "3a28f23644e54a58c6131b41fe762a04869ee7cc"
#: ``image_id``s of ``data-all.json`` written ``malay/N``: the hub image set at ``IMAGES_REVISION`` has no such
#: file, but both ``malay/N-1`` and ``malay/N-2``, and which one a query means cannot be told without its answer.
#: 186 dual-ambiguity queries use them (31 pairs by ``pair_id``, 62 per language).
AMBIGUOUS_IMAGE_IDS = {f"malay/{n}": (f"malay/{n}-1", f"malay/{n}-2")
                       for n in (8, 9, 15, 22, 23, 27, 30, 35, 42, 43, 45, 46, 59, 61, 77, 82, 97, 116, 131, 133,
                                 136, 183)}


def release_items(root: Path):
    """The fetched records as items (``root`` is the release's files folder)."""
    return load_items(root / DATA_FILE, images=root / "images")


def release_counts(root: Path) -> dict[str, int]:
    stats = data_stats(release_items(root))
    return {"queries": stats["queries"], "pairs": stats["pairs"]}


def release_images(root: Path):
    """``image_id`` -> its file in the fetched hub image set (a layout the paper never documents), or None: the
    files :class:`ImageResolver` would find, indexed once (the resolver itself is asked only for what lies in
    parquet shards)."""
    from vlamb_nb.images import IMAGE_EXTENSIONS

    folder = root / "images"
    if not folder.is_dir():
        return lambda image_id: None
    index: dict[str, Path] = {}
    for p in sorted(folder.rglob("*")):
        if p.suffix.lower() in IMAGE_EXTENSIONS and p.is_file():
            index.setdefault(p.relative_to(folder).with_suffix("").as_posix(), p)
    resolver = ImageResolver(folder) if any(folder.rglob("*.parquet")) else None

    def resolve(image_id: str) -> Path | None:
        for sub in ImageResolver.SUBDIRS:
            hit = index.get(f"{sub}/{image_id}" if sub else image_id)
            if hit is not None:
                return hit
        if resolver is None:
            return None
        try:
            resolver.resolve(image_id)
        except ImageError:
            return None
        return folder

    return resolve


def release_candidates(root: Path):
    """``image_id`` -> the hub image files it could mean where it names none: every ``<image_id>-<n>`` (how the 22
    known defects look), so a new ``malay/N`` with both ``malay/N-1`` and ``malay/N-2`` is reported as a defect with
    its candidates, never guessed and never taken for a download to retry."""
    import re

    from vlamb_nb.images import IMAGE_EXTENSIONS

    folder = root / "images"
    by_base: dict[str, set[str]] = {}
    for p in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if p.suffix.lower() not in IMAGE_EXTENSIONS or not p.is_file():
            continue
        stem = p.relative_to(folder).with_suffix("").as_posix()
        sub = next((s for s in ImageResolver.SUBDIRS if s and stem.startswith(s + "/")), "")
        stem = stem[len(sub) + 1:] if sub else stem
        m = re.fullmatch(r"(.+)-\d+", stem)
        if m:
            by_base.setdefault(m.group(1), set()).add(stem)
    return lambda image_id: tuple(sorted(by_base.get(image_id, ())))


RELEASE = Release(
    paper=NAME, name=f"github:{RECORDS_REPO} + hub:{HUB_IMAGES}", licence="as released (none stated)",
    parts=(UrlFile(DATA_FILE, f"{RAW}/{RECORDS_REPO}/{{revision}}/{DATA_FILE}", RECORDS_SHA256, 701289,
                   revision=RECORDS_COMMIT, source=RECORDS_REPO, identical_at=("930eb28",)),
           HubFiles(HUB_IMAGES, ("*",), revision=IMAGES_REVISION, dest="images", what="images")),
    expected={"queries": 1278, "pairs": 501}, count=release_counts, n_items=1278, unit="queries",
    items=release_items, item_id="uid", whole="group",
    names=ItemFiles("image_id", release_images, candidates=release_candidates),
    defects=(KnownDefect("image_id", AMBIGUOUS_IMAGE_IDS, found_at=IMAGES_REVISION,
                         why="the image_id names no file of the hub image set, where both of its candidates "
                             "exist; which one the query means cannot be told"),),
    load={"source": f"files/{DATA_FILE}", "images": "files/images"},
    size="0.7 MB of records + the hub image set (size set by the hub)",
    notes=("the hub image set's layout is undocumented: every image_id is resolved and the ones that are not "
           "found are reported",))


# -- the test sets as a noise floor sees them ---------------------------------------------------------------------
#: §2.1 / §3.3: queries and pairs, all and in the six non-dual categories (Tables 3 and 12 count those only)
DECLARED_SIZES = {"all": (1278, 501), "non-dual": (906, 439)}


def test_sets(items=None) -> dict[str, Any]:
    """MUCAR's test sets for :mod:`vlamb_nb.noise`: Acc_q counts queries, resampled with their pair; Acc_p counts
    pairs. Given the whole release (1,278 queries), each pair's size is counted from it; otherwise 1,278 queries
    are declared spread over 501 pairs (906 over 439 in the non-dual categories)."""
    from vlamb_nb.stats.power import TestSet, cluster_sizes, even_sizes

    out: dict[str, Any] = {}
    whole = items is not None and len(items) == DECLARED_SIZES["all"][0] and "group" in items.columns
    for part, (n_q, n_p) in DECLARED_SIZES.items():
        if whole:
            rows = items if part == "all" else items[items["category"].isin(NON_DUAL_CATEGORIES)]
            sizes, origin, note = cluster_sizes(rows["group"].astype(str)), "release", f"{part} categories"
        else:
            sizes, origin, note = even_sizes(n_q, n_p), "declared", f"{part}: {n_q} queries over {n_p} pairs (§3.3)"
        out[f"{part} queries"] = TestSet(f"{part} queries", int(sum(sizes)), "query", sizes, "pairs", origin, note)
        out[f"{part} pairs"] = TestSet(f"{part} pairs", len(sizes), "pair", None, "", origin, note)
    return out
