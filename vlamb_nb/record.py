"""One run record: the typed, versioned file a run and a scoring write beside their prediction store.

Like an inspect_ai eval log, a record holds everything a reader needs to trust a number and to see the items
behind it, in one file read in one call (:meth:`RunRecord.read`): the run's facts (model, spec and revision,
decoding, prompt digests, package and library versions, the data's release, revision and sha256), its coverage
(n of N, what was left out and why, failures), its deviations as typed values, every declared metric's value
(:mod:`vlamb_nb.stats.metric`, the paper's ``METRICS``) and one row per item and turn with the prompt, the
answer, the parse, the gold, a reference to the image, each metric's per-item value and the failure, if any.
``vlamb-nb score`` prints :meth:`RunRecord.score_view` of the record: one shape for every paper.

The file is JSON (``<store>.record.json`` beside ``<store>.jsonl``), with ``schema_version``; a record of a
newer version than this package reads is refused in one line rather than half read.

A record travels without its data, so it is checked before it is believed (:meth:`RunRecord.read`): against its
store where the store lies beside it (the run's identity, the store's sha256 and line count as they were when the
record was written; another run appended to the store since is no change to this one), against itself (each
unit set's values finite and in their kind's range, every value recomputed from its units, every row's value its
unit's) and against its data (the digest of the items it was scored against beside the one its run was asked).
A disagreement is a :class:`RecordMismatch` naming the file and the field; where the store is not beside it,
:attr:`RunRecord.unchecked` says so, and every view that uses the record repeats it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from vlamb_nb.datahome import DataIdentity
from vlamb_nb.errors import DataError, StoreError
from vlamb_nb.hashing import digest
from vlamb_nb.meta import Deviation, commit_label, package_commit, package_version
from vlamb_nb.metrics import Coverage
from vlamb_nb.run_identity import RunId
from vlamb_nb.stats.metric import Units, point_of, units_are_zero_one, units_need_gold

#: the version this package writes and the newest it reads (2: each metric's unit sets; a record of 1 still
#: reads, and its numbers show, but the card and ``compare`` need the unit sets: score its store again)
SCHEMA_VERSION = 2
#: a record's file name beside its store: ``<store stem>.record.json``
SUFFIX = ".record.json"
#: the item columns a row's image reference is taken from, first present wins (a path, a URL or an id)
IMAGE_COLUMNS = ("image_url", "image_path", "image", "file_name", "image_file", "image_id", "image_name")
#: the item columns a row's gold is taken from, first present wins (a paper with no gold, RACQUET, has none)
GOLD_COLUMNS = ("gold", "label_true", "gt_xyxy", "true_answer", "answer")
#: the columns of :meth:`RunRecord.to_pandas` before the metrics' own (``key``: a scored row's key in the metrics'
#: unit sets, the item id unless the paper keys its units otherwise, such as Ref-Adv's ``row_idx``; ``correct``:
#: whether the answer is right, where the paper's scoring says so per row; ``details``: what the scoring added
#: that explains the row's outcome, :data:`DETAIL_COLUMNS`)
ROW_COLUMNS = ("item_id", "turn", "request_id", "prompt", "answer", "parsed", "valid", "gold", "image", "failure",
               "scored", "key", "correct", "details")
#: the scored columns beyond the parse that say why a row came out as it did, kept in a row's ``details`` (a page
#: opens an item onto them from the record alone): a repair turn, a refusal, the explanation's score and its
#: scorer, a judge's verdict, a class, who labelled it
DETAIL_COLUMNS = ("retry_used", "refusal", "explanation_score", "explanation_scorer", "judge_label", "judge_text",
                  "judge_parse_error", "judge_model", "class_name", "labelled")
#: the largest record file read (a record of 20,000 items is about 20 MB): a bigger one is refused in one line
MAX_RECORD_BYTES = 1 << 30
#: the deepest nesting a record holds (a row's parse is a few levels deep): a deeper one is refused in one line
MAX_DEPTH = 64


class RecordMismatch(DataError):
    """A run record that disagrees with its store, its data or itself: one line naming the file and the field."""


@dataclass(frozen=True)
class StoreDigest:
    """The store a record was written from, as it was then: the file's sha256 and lines, and the run's own records
    (its identity's records, read as every scorer reads them) by their digest and number, so a record stays true
    of a store that has since taken another run's answers."""

    sha256: str
    lines: int
    run_sha256: str | None = None
    run_records: int | None = None


@dataclass(frozen=True)
class ModelFacts:
    """The model a run asked: its id and how it was served, the spec it was loaded from."""

    model_id: str
    revision: str | None = None
    quantization: str | None = None
    backend: str | None = None
    endpoint: str | None = None
    family: str | None = None
    dtype: str | None = None
    spec: str | None = None


@dataclass(frozen=True)
class Environment:
    """What ran it: the package (version, git commit and whether its checkout had local changes) and the libraries
    a score can depend on."""

    vlamb_nb: str = ""
    commit: str | None = None
    dirty: bool | None = None  # the checkout differed from its commit (None: not a git checkout, or not recorded)
    python: str = ""
    torch: str | None = None
    transformers: str | None = None
    bitsandbytes: str | None = None
    platform: str = ""

    @property
    def commit_label(self) -> str | None:
        """The commit as the pages show it (``<sha> + local changes`` where the checkout had local changes)."""
        return commit_label(self.commit, self.dirty)


@dataclass(frozen=True)
class DataFacts:
    """The data a run stood on: its identity (:class:`~vlamb_nb.datahome.DataIdentity`, the one type for it:
    release, revision, N, what the release leaves out), the sha256 of what was read (of the release's verified
    file list, or of the given file) and the digest of the items asked."""

    identity: DataIdentity | None = None
    sha256: str | None = None
    source_digest: str = ""
    #: the digest of the items the run was scored against (their fields, :func:`items_digest`) and of those it
    #: was asked (its run meta's); two different ones: scored against other items (another answer key)
    items_sha256: str | None = None
    asked_sha256: str | None = None

    @property
    def scored_elsewhere(self) -> str:
        """Why the run was scored against other items than it was asked (empty: the same, or not known)."""
        if self.items_sha256 and self.asked_sha256 and self.items_sha256 != self.asked_sha256:
            return (f"scored against other items than its run was asked (items {self.items_sha256[:12]}, asked "
                    f"{self.asked_sha256[:12]}): another answer key or other data gives other numbers")
        return ""

    @property
    def kind(self) -> str:
        return self.identity.kind if self.identity else ""

    @property
    def release(self) -> str:
        return self.identity.release if self.identity else ""

    @property
    def revision(self) -> str | None:
        return self.identity.revision if self.identity else None

    def to_dict(self) -> dict[str, Any]:
        return {"identity": self.identity.to_dict() if self.identity else None, "sha256": self.sha256,
                "source_digest": self.source_digest, "items_sha256": self.items_sha256,
                "asked_sha256": self.asked_sha256}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DataFacts:
        if not isinstance(d, Mapping):
            raise TypeError("data is not an object")
        text = {k: d.get(k) if isinstance(d.get(k), str) else None for k in ("items_sha256", "asked_sha256")}
        return cls(identity=DataIdentity.from_dict(d.get("identity")), sha256=d.get("sha256"),
                   source_digest=str(d.get("source_digest") or ""), **text)


@dataclass(frozen=True)
class MetricValue:
    """One declared metric on one slice of the run (percent), over ``n`` of its units."""

    metric: str
    kind: str
    slice: str
    value: float | None
    n: int
    unit: str
    ci_low: float | None = None
    ci_high: float | None = None
    higher_is_better: bool = True
    whole: bool = True  # the metric's whole set (False: one of its slices)


@dataclass
class RunRecord:
    """One run (and its scoring) as data: read with :meth:`read`, its items with :meth:`to_pandas`."""

    benchmark: str
    setting: str
    model: ModelFacts
    #: the run's identity as every scorer tells runs apart (:class:`~vlamb_nb.run_identity.RunId`: model, revision,
    #: quantization, backend, endpoint, setting, decoding, prompts, data, seed); None for a file that is no store
    run_id: RunId | None = None
    stage: str = "scored"  # "run": answers only (written when a run ends); "scored": with every metric
    decoding: dict[str, Any] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)  # digests: the prompt templates, the items asked
    seed: int | None = None
    environment: Environment = field(default_factory=Environment)
    data: DataFacts = field(default_factory=DataFacts)
    coverage: Coverage = field(default_factory=lambda: Coverage(items=None, answered=0))
    deviations: tuple[Deviation, ...] = ()
    metrics: tuple[MetricValue, ...] = ()
    #: each declared metric's per-unit values on the whole set and each slice (:class:`~vlamb_nb.stats.metric.Units`):
    #: what every number of the run is computed from; ``[]``: the metric covers no row, None: the run has none of
    #: its values
    units: dict[str, list[Units] | None] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    store: str | None = None  # the prediction store's file name (beside the record), or the file scored
    notes: tuple[str, ...] = ()
    created: str = ""
    schema_version: int = SCHEMA_VERSION
    #: the store as it was when the record was written (None: a record written before records kept it)
    store_digest: StoreDigest | None = None
    #: why the record read was not checked against its store (empty: it was, or it was never read); not written
    unchecked: str = field(default="", compare=False, repr=False)

    # -- reading and writing -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("unchecked", None)
        out["data"] = self.data.to_dict()
        out["coverage"] = {**asdict(self.coverage), "left_out": [lo.summary() for lo in self.coverage.left_out]}
        out["units"] = {k: None if v is None else [u.to_dict() for u in v] for k, v in self.units.items()}
        return out

    def write(self, path: str | os.PathLike, *, run: int | None = None) -> Path:
        """Write the record to ``path`` (a store: beside it, :func:`record_path`) at once, so a reader never sees
        half a record. When a store comes to hold several runs (``run``: this one's number), the record it had
        as a store of one run is renamed to its own run's number (or dropped if no run of the store is its)."""
        target = record_path(path, run)
        single = record_path(path)
        if run is not None and single != target and single.is_file():
            try:
                old = load_json(single)
            except DataError:
                old = {}
            k = _number_of(path, old) if isinstance(old, dict) else None
            if k is not None and k != run:
                os.replace(single, record_path(path, k))
            else:
                single.unlink(missing_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(_clean(self.to_dict()), ensure_ascii=False, indent=1), encoding="utf-8")
            os.replace(tmp, target)
        except BaseException:  # a full disk, a read-only folder, Ctrl-C: no half-written file left behind
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
            raise
        return target

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, source: str = "") -> RunRecord:
        if not isinstance(d, Mapping) or "schema_version" not in d:
            raise DataError("not a run record (no schema_version)", source=source)
        version = d["schema_version"]
        if not isinstance(version, int) or version < 1:
            raise DataError(f"not a run record (schema_version {version!r})", source=source)
        if version > SCHEMA_VERSION:
            raise DataError(f"run record schema_version {version} is newer than this vlamb_nb reads "
                            f"({SCHEMA_VERSION}); upgrade vlamb_nb to read it", source=source)
        try:
            return cls(benchmark=str(d["benchmark"]), setting=str(d["setting"]),
                       model=_typed(ModelFacts, d["model"]), stage=str(d.get("stage", "scored")),
                       run_id=_typed(RunId, d["run_id"]) if d.get("run_id") else None,
                       decoding=dict(d.get("decoding") or {}), prompts=dict(d.get("prompts") or {}),
                       seed=d.get("seed"), environment=_typed(Environment, d.get("environment") or {}),
                       data=DataFacts.from_dict(d.get("data") or {}),
                       coverage=Coverage.from_dict(d.get("coverage") or {}),
                       deviations=tuple(_typed(Deviation, x) for x in d.get("deviations") or ()),
                       metrics=tuple(_typed(MetricValue, x) for x in d.get("metrics") or ()),
                       units={str(k): None if v is None else [Units.from_dict(u) for u in v]
                              for k, v in (d.get("units") or {}).items()},
                       rows=[dict(r) for r in d.get("rows") or ()], store=d.get("store"),
                       notes=tuple(d.get("notes") or ()), created=str(d.get("created", "")), schema_version=version,
                       store_digest=_typed(StoreDigest, d["store_digest"]) if d.get("store_digest") else None)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise DataError(f"malformed run record ({type(e).__name__}: {e})", source=source) from None

    @classmethod
    def read(cls, path: str | os.PathLike, *, verify: bool = True) -> RunRecord:
        """The record at ``path`` (the record file, the prediction store it lies beside, or a folder holding one),
        checked before it is believed (:meth:`verify`; ``verify=False`` only where it is about to be rewritten)."""
        p = locate(path)
        rec = cls.from_dict(load_json(p), source=str(p))
        if verify:
            rec.verify(p)
        return rec

    # -- checks ------------------------------------------------------------------------------------------
    def verify(self, path: str | os.PathLike) -> None:
        """Check the record read from ``path`` against itself (:meth:`check_self`) and against the store beside it
        (:meth:`check_store`); a disagreement is a :class:`RecordMismatch` naming the file and the field."""
        self.check_self(str(path))
        self.check_store(Path(path))

    def check_self(self, source: str = "") -> None:
        """The record's parts agree: each unit set's values are finite and in their kind's range (0/1 outcomes,
        labels and classes), every metric value is the one its unit set gives (and its n that set's size), every
        scored row's value is its unit's, and the model is its run's."""
        def bad(fld: str, why: str) -> RecordMismatch:
            return RecordMismatch(why, source=source or self.store or None, field=fld)

        if self.run_id is not None and self.run_id.model_id != self.model.model_id:
            raise bad("run_id.model_id", f"the run is {self.run_id.model_id!r}, the record's model "
                      f"{self.model.model_id!r}; the record was edited or pieced together")
        kinds = {m.metric: m.kind for m in self.metrics}
        sets: dict[tuple[str, str, bool], Units] = {}
        for name, us in self.units.items():
            for i, u in enumerate(us or ()):
                where = f"units.{name}[{i}].values"
                v = u.array()
                if len(v) and np.isnan(v).any():
                    k = int(np.flatnonzero(np.isnan(v))[0])
                    raise bad(where, f"unit {u.keys[k]!r} has no value (NaN); the record was edited or damaged")
                if units_are_zero_one(kinds.get(name, "")) and len(v) and not np.isin(v, (0.0, 1.0)).all():
                    k = int(np.flatnonzero(~np.isin(v, (0.0, 1.0)))[0])
                    raise bad(where, f"unit {u.keys[k]!r} is {v[k]:g} where a {kinds[name]} metric's unit is 0 or 1; "
                              "the record was edited or damaged")
                if units_need_gold(kinds.get(name, "")) and (u.gold is None or not set(u.gold) <= {0, 1}):
                    raise bad(f"units.{name}[{i}].gold", "a macro_f1 metric's units need 0/1 gold labels")
                sets[(name, u.slice, u.whole)] = u
        for i, m in enumerate(self.metrics):
            u = sets.get((m.metric, m.slice, m.whole))
            if u is None:
                continue
            got = point_of(m.kind, u)
            want = m.value if isinstance(m.value, int | float) and not isinstance(m.value, bool) else None
            if (want is None) != (not math.isfinite(got)) or (want is not None and abs(round(got, 2) - want) > 0.006):
                raise bad(f"metrics[{i}].value", f"{m.metric} ({m.slice}) is {m.value!r} but its {len(u.values)} "
                          f"units give {round(got, 2) if math.isfinite(got) else None!r}; the record was edited")
            if m.n != len(u.values):
                raise bad(f"metrics[{i}].n", f"{m.metric} ({m.slice}) counts {m.n!r} units, its unit set "
                          f"{len(u.values)}; the record was edited")
        self._check_rows(bad)

    def _check_rows(self, bad: Any) -> None:
        """Every scored row's metric value is its unit's: the same (key, value) pairs as the whole unit set (for
        a metric over groups, each row holds its group's value)."""
        from collections import Counter

        for name, us in self.units.items():
            whole = next((u for u in us or () if u.whole), None)
            if whole is None:
                continue
            if any(not isinstance(r, Mapping) for r in self.rows):
                raise bad("rows", "a row that is not an object")
            held = [(i, r) for i, r in enumerate(self.rows) if r.get("scored", True) and r.get(name) is not None]
            if any(r.get("key") is None for _, r in held):  # rows that name no unit key: nothing to hold them to
                continue
            if whole.members is not None:  # all_correct: a row's value is its group's
                group_of = {k: g for g, ks in zip(whole.keys, whole.members, strict=True) for k in ks}
                value = dict(zip(whole.keys, whole.values, strict=True))
                for i, r in held:
                    g = group_of.get(str(r.get("key")))
                    if g is not None and r[name] != value[g]:
                        raise bad(f"rows[{i}].{name}", f"row {r.get('key')!r} holds {r[name]!r}, its group {g!r} "
                                  f"{value[g]:g} in the unit sets; the record was edited")
                continue
            rows = Counter((str(r.get("key")), _as_float(r[name])) for _, r in held)
            units = Counter(zip(whole.keys, whole.values, strict=True))
            if rows != units:
                diff = next(iter((rows - units) or (units - rows)))
                i = next((i for i, r in held if (str(r.get("key")), _as_float(r[name])) == diff), None)
                raise bad(f"rows[{i}].{name}" if i is not None else f"units.{name}",
                          f"the rows hold {sum(rows.values())} {name} values, the unit set {len(whole.values)}, and "
                          f"they differ at {diff[0]!r} ({'row' if diff in rows else 'unit'} value {diff[1]:g}); "
                          "the record was edited")

    def check_store(self, path: Path) -> None:
        """The store beside the record is the one it was written from: its sha256 as then, or, where other runs'
        answers were appended since, this run's own records as then; a store that holds no run of the record's
        identity is another run's (a record copied beside the wrong store). No store beside it (a record that
        travelled alone), or a record written before records kept its store's digest, is said in
        :attr:`unchecked`."""
        def bad(fld: str, why: str) -> RecordMismatch:
            return RecordMismatch(why, source=str(path), field=fld)

        store = path.parent / self.store if self.store else None
        if store is None or not store.is_file() or store.resolve() == path.resolve():
            self.unchecked = (f"not checked against its store ({self.store} is not beside it)" if self.store
                              else "not checked against its store (it names none)")
            return
        d = self.store_digest
        if d is not None:
            sha, lines = file_digest(store)
            if sha == d.sha256:
                return
            if self.run_id is None or d.run_sha256 is None:
                raise bad("store_digest.sha256", f"{store.name} changed since the record was written ({d.lines} "
                          f"lines then, {lines} now); score it again")
        if self.run_id is None:
            self.unchecked = "not checked against its store (written before records kept its digest)"
            return
        from vlamb_nb.store import is_store

        if not is_store(store):
            raise bad("store", f"{store.name} beside it is no prediction store; the record is another file's")
        runs = _store_runs(store)
        recs = runs.get(self.run_id)
        if recs is None:
            held = "; ".join(r.label for r in runs) or "none"
            raise bad("run_id", f"{store.name} holds no run {self.run_id.label} (it holds: {held}); the record is "
                      "another run's")
        if d is None:
            self.unchecked = "checked against its store's runs only (written before records kept its digest)"
        elif digest(recs) != d.run_sha256:
            raise bad("store_digest.run_sha256", f"the run's answers in {store.name} changed since the record was "
                      f"written ({d.run_records} records then, {len(recs)} now); score it again")

    # -- views ---------------------------------------------------------------------------------------------
    def unit_sets(self, metric: str) -> list[Units] | None:
        """The declared metric's unit sets as the run was scored (``[]``: it covers none of the run's rows; None:
        the run has none of its values): what the card and ``compare`` compute from."""
        if self.schema_version < 2 and self.stage == "scored":
            raise DataError(f"a run record of schema {self.schema_version} keeps no per-unit values; score its "
                            "store again (vlamb-nb score) to rank or compare it", source=self.store or None)
        return self.units.get(metric, [])

    def keyed_rows(self) -> dict[str, dict[str, Any]]:
        """The scored rows by their key in the unit sets (the first row of a key): how a row is matched to the
        units computed from it, and across runs."""
        out: dict[str, dict[str, Any]] = {}
        for r in self.rows:
            if r.get("scored", True):
                out.setdefault(str(r.get("key") or r.get("item_id")), r)
        return out

    def __len__(self) -> int:
        """The rows scored (a turn before the answer that counts is not one)."""
        return sum(1 for r in self.rows if r.get("scored", True))

    def to_pandas(self):
        """One row per item and turn: item_id, turn, request_id, prompt, answer, parsed, valid, gold, image,
        failure, scored (False: a turn before the answer that counts, such as a caption or a first attempt before
        a repair), key (a scored row's key in the unit sets), correct (right or wrong, where the paper's scoring
        says so per row), then every declared metric's per-item value (NaN where the metric does not cover the
        row)."""
        import pandas as pd

        names = dict.fromkeys(k for r in self.rows for k in r if k not in ROW_COLUMNS)  # every declared metric
        cols = [*ROW_COLUMNS, *names]
        return pd.DataFrame([{c: r.get(c) for c in cols} for r in self.rows], columns=cols)

    def score_view(self) -> dict[str, Any]:
        """What ``vlamb-nb score`` prints, the same keys for every paper: the run, its data, coverage, rows
        scored and invalid, every declared metric on its whole set (``metrics``) and on the whole set and each
        slice with its interval (``by_slice``), the deviations and notes."""
        return {"benchmark": self.benchmark, "setting": self.setting, "model": self.model.model_id,
                "run": self.run_id.label if self.run_id else None,
                "predictions": self.store, "data": self.data.release or self.data.kind or None,
                "revision": self.data.revision, "coverage": self.coverage.to_dict(),
                "scored": sum(1 for r in self.rows if r.get("scored", True)),
                "invalid": sum(1 for r in self.rows if r.get("valid") is False),
                "metrics": {m.metric: m.value for m in self.metrics if m.whole},
                "by_slice": [{k: v for k, v in asdict(m).items() if k not in ("kind", "higher_is_better", "whole")}
                             for m in self.metrics],
                "deviations": [asdict(d) for d in self.deviations], "notes": list(self.notes)}


def load_json(p: Path) -> Any:
    """A record file's JSON, bounded: too big a file, text that is not JSON, or nesting deeper than
    :data:`MAX_DEPTH` is one line naming the file, never a traceback."""
    try:
        size = p.stat().st_size
        if size > MAX_RECORD_BYTES:
            raise DataError(f"a run record of {size:,} bytes, more than the {MAX_RECORD_BYTES:,} a record may hold; "
                            "not a record this package wrote", source=str(p))
        d = json.loads(p.read_text(encoding="utf-8"))
    except RecursionError:
        raise DataError(f"a run record nested deeper than {MAX_DEPTH} levels; not a record this package wrote",
                        source=str(p)) from None
    except (OSError, ValueError) as e:
        raise DataError(f"unreadable run record ({e})", source=str(p)) from None
    stack = [(d, 1)]
    while stack:
        obj, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise DataError(f"a run record nested deeper than {MAX_DEPTH} levels; not a record this package wrote",
                            source=str(p))
        for v in obj.values() if isinstance(obj, dict) else obj:
            if isinstance(v, dict | list):
                stack.append((v, depth + 1))
    return d


def _as_float(v: Any) -> Any:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else v


def file_digest(path: Path) -> tuple[str, int]:
    """A file's sha256 and its number of lines."""
    h, lines, last = hashlib.sha256(), 0, b"\n"
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
            lines += block.count(b"\n")
            last = block[-1:]
    return h.hexdigest(), lines + (last != b"\n")


def _store_runs(store: Path) -> dict[RunId, list[dict[str, Any]]]:
    """The runs of a store and each one's records, as every scorer tells them apart."""
    from vlamb_nb.run_identity import identify_runs
    from vlamb_nb.store import read_records

    return identify_runs(read_records(store))


def store_digest(store: str | os.PathLike, run_id: RunId | None = None,
                 records: Sequence[dict[str, Any]] | None = None) -> StoreDigest | None:
    """What a record keeps of the file it was written from (None: no such file): its sha256 and lines and, for a
    run of a prediction store (``run_id``; ``records``: its records, when already read), the run's own."""
    p = Path(store)
    if not p.is_file():
        return None
    sha, lines = file_digest(p)
    if run_id is not None and records is None:
        from vlamb_nb.store import is_store

        records = _store_runs(p).get(run_id) if is_store(p) else None
    if run_id is None or records is None:
        return StoreDigest(sha, lines)
    return StoreDigest(sha, lines, digest(list(records)), len(records))


def run_digest(store: str | os.PathLike) -> str | None:
    """The digest of the one run a prediction store holds (None: several, or none): what makes a record and its
    store, or two copies of either, one run."""
    runs = _store_runs(Path(store))
    return digest(next(iter(runs.values()))) if len(runs) == 1 else None


def locate(path: str | os.PathLike) -> Path:
    """The record file of ``path``: the file itself, the record beside a prediction store (its run's, where the
    store holds several runs and one has a record), or the one record in a folder; else one line saying why."""
    p = Path(path)
    if p.is_dir():
        found = sorted(p.glob(f"*{SUFFIX}"))
        if len(found) != 1:
            what = "no run record" if not found else \
                f"{len(found)} run records ({', '.join(f.name for f in found)})"
            raise DataError(f"{what} in the folder; name the record file", source=str(p))
        p = found[0]
    elif not p.name.endswith(SUFFIX):
        base, per_run = record_path(p), sorted(p.parent.glob(f"{glob_escape(p.stem)}.run-*{SUFFIX}"))
        if not base.is_file() and len(per_run) > 1:
            raise DataError(f"the store holds {len(per_run)} runs, each with its record "
                            f"({', '.join(f.name for f in per_run)}); name one", source=str(p))
        p = per_run[0] if not base.is_file() and per_run else base
    if not p.is_file():
        raise DataError("no run record (score the store first: vlamb-nb score)", source=str(p))
    return p


def record_path(path: str | os.PathLike, run: int | None = None) -> Path:
    """Where the record of the store at ``path`` lies: ``<stem>.record.json`` beside it, or, for the run numbered
    ``run`` of a store holding several (the number ``-o run=N`` picks), ``<stem>.run-<N>.record.json``."""
    p = Path(path)
    if p.name.endswith(SUFFIX):
        return p
    return p.with_name(p.stem + ("" if run is None else f".run-{run}") + SUFFIX)


def latest_store(base: str | os.PathLike) -> Path:
    """Of the stores a default name stands for (:func:`run_stores`), the one whose run ended last (its record,
    rewritten by every run that ends, or else the store itself, the newest): the store a job that just ran left.
    The default name itself when none exists."""
    from vlamb_nb.store import run_stores

    found = run_stores(base)
    if len(found) < 2:
        return found[0] if found else Path(base)

    def ended(p: Path) -> float:
        rec = record_path(p)
        return (rec if rec.is_file() else p).stat().st_mtime

    return max(found, key=ended)


def glob_escape(name: str) -> str:
    import glob

    return glob.escape(name)


def _number_of(store: str | os.PathLike, record: Mapping[str, Any]) -> int | None:
    """The number of the run of ``store`` a record (as JSON) describes: the same model, quantization and setting."""
    from vlamb_nb.run_identity import identify_runs
    from vlamb_nb.store import read_records

    model = dict(record.get("model") or {})
    for k, rid in enumerate(identify_runs(read_records(store))):
        if (rid.model_id, rid.quantization or None, rid.setting) == (
                model.get("model_id"), model.get("quantization") or None, record.get("setting")):
            return k
    return None


def run_number(store: str | os.PathLike, frame: Any, model: Mapping[str, Any] | None = None) -> int | None:
    """The number of ``frame``'s run among the runs of ``store`` (None: the store holds one run, or is no
    store): the run of the same model and quantization whose answers the frame holds."""
    p = Path(store)
    from vlamb_nb.store import is_store, read_records

    if not p.is_file() or not is_store(p):
        return None
    from vlamb_nb.run_identity import identify_runs

    runs = list(identify_runs(read_records(p)).items())
    if len(runs) < 2:
        return None
    col = "key" if "key" in frame.columns else "request_id" if "request_id" in frame.columns else None
    ids = set(frame[col].astype(str)) if col else set()
    info = dict(model or {})
    want = (info.get("model_id") or frame.attrs.get("model"), info.get("quantization"))

    def fit(k: int) -> tuple[int, int]:
        rid, recs = runs[k]
        same = rid.model_id == want[0] and (not info or (rid.quantization or None) == (want[1] or None))
        return int(same), sum(str(r.get(col)) in ids for r in recs) if col else 0

    return max(range(len(runs)), key=fit)


def _typed(cls: type, d: Any) -> Any:
    """A dataclass from a mapping, keeping only its fields (a newer minor field is ignored, none is invented)."""
    if isinstance(d, cls):
        return d
    if not isinstance(d, Mapping):
        raise TypeError(f"{cls.__name__} is not an object")
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})


def _clean(v: Any) -> Any:
    """JSON-ready: NaN as null, numpy scalars and arrays as Python, bytes left out (an image is a reference)."""
    import numpy as np

    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, list | tuple | set):
        return [_clean(x) for x in v]
    if isinstance(v, np.ndarray):
        return [_clean(x) for x in v.tolist()]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, bytes | bytearray):
        return None
    if v is None or isinstance(v, str | int | float | bool):
        return v
    return str(v)


# -- building a record from a run ----------------------------------------------------------------------------
def git_commit() -> str | None:
    """The commit of the package's own checkout (None when it is installed, or vendored in another project's)."""
    found = package_commit()
    return None if found is None else found[0]


def environment(versions: Mapping[str, Any] | None = None) -> Environment:
    """The run's environment: the versions its meta recorded when it ran (else those of this process)."""
    import platform

    v = dict(versions or {})
    for name in ("torch", "transformers", "bitsandbytes"):
        mod = sys.modules.get(name)
        if name not in v and mod is not None:
            v[name] = getattr(mod, "__version__", None)
    found = package_commit()
    return Environment(vlamb_nb=str(v.get("vlamb_nb") or package_version()), commit=found[0] if found else None,
                       dirty=found[1] if found else None,
                       python=str(v.get("python") or sys.version.split()[0]), torch=v.get("torch"),
                       transformers=v.get("transformers"), bitsandbytes=v.get("bitsandbytes"),
                       platform=str(v.get("platform") or platform.platform()))


def data_facts(paper: str, data: Mapping[str, Any] | None, source_digest: str = "") -> DataFacts:
    """The data's facts from a run's data identity (:class:`~vlamb_nb.datahome.DataIdentity`): for the fetched
    release, the sha256 of its manifest's verified file list; for a given file, its own sha256."""

    identity = DataIdentity.from_dict(dict(data or {}))
    kind, release = (identity.kind, identity.release) if identity else ("", "")
    sha = None
    if kind == "release":
        from vlamb_nb.datahome import read_manifest

        try:
            manifest = read_manifest(paper)
        except DataError:
            manifest = None
        files = (manifest or {}).get("files") or []
        if files:
            sha = digest(sorted((str(f.get("path")), str(f.get("sha256"))) for f in files if isinstance(f, dict)))
    elif release and Path(release).is_file():
        from vlamb_nb.datahome import file_sha256

        sha = file_sha256(Path(release))
    if sha is None and identity is not None:  # a generated sample: the digest of its items as loaded
        sha = identity.sha256
    return DataFacts(identity=identity, sha256=sha, source_digest=source_digest)


def metric_values(metrics: Sequence[Any], scored: Any, *, n_resamples: int = 1000, seed: int = 0
                  ) -> tuple[list[MetricValue], dict[str, list[Any]], list[str], dict[str, list[Any] | None]]:
    """Every declared metric on ``scored``: its unit sets (:meth:`~vlamb_nb.stats.metric.Metric.unit_sets`, the
    whole set and each slice: what the record keeps), its value on each (with a bootstrap interval over its
    cluster unit), its per-row value (aligned with ``scored``) and what could not be computed."""
    import pandas as pd

    values: list[MetricValue] = []
    per_row: dict[str, list[Any]] = {}
    notes: list[str] = []
    units: dict[str, list[Any] | None] = {}
    for m in metrics:
        col = pd.Series([None] * len(scored), index=scored.index, dtype=object)
        per_row[m.name] = col.tolist()
        try:
            sets = m.unit_sets(scored)
        except DataError as e:
            notes.append(f"{m.name}: not computed ({e})")
            continue
        units[m.name] = sets
        if not sets:
            notes.append(f"{m.name}: the run has none of its values")
            continue
        rows = m.rows(scored)
        whole = next(u for u in sets if u.whole)
        groups = m.row_groups(rows)  # a unit of several rows (a pair): each row gets its group's value
        if groups is not None:
            col.loc[rows.index] = groups.map(dict(zip(whole.keys, whole.values, strict=True))).to_numpy()
        else:
            col.loc[rows.index] = whole.values
        per_row[m.name] = col.tolist()
        values += [value_of(m, u, n_resamples=n_resamples, seed=seed) for u in sets]
    return values, per_row, notes, units


def value_of(m: Any, u: Any, *, n_resamples: int = 1000, seed: int = 0) -> MetricValue:  # = INTERVAL_*
    """One metric's value on one of its unit sets, with its interval (the metric's one rule,
    :meth:`~vlamb_nb.stats.metric.Metric.interval`): the record's numbers, recomputable from the record's own
    unit sets."""
    point = m.value_of(u)
    lo = hi = None
    if n_resamples and len(u.values) > 1:
        lo, hi = (round(x, 2) for x in m.interval(u, n_resamples=n_resamples, seed=seed)[:2])
    return MetricValue(metric=m.name, kind=m.kind, slice=u.slice,
                       value=round(point, 2) if math.isfinite(point) else None, n=len(u.values), unit=m.unit,
                       ci_low=lo, ci_high=hi, higher_is_better=m.higher_is_better, whole=u.whole)


def _first(row: Mapping[str, Any], names: Sequence[str]) -> Any:
    for n in names:
        v = row.get(n)
        if isinstance(v, dict):
            v = v.get("path") or v.get("url")
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        return v
    return None


def _run_records(store: Path | None, scored: Any
                 ) -> tuple[RunId | None, dict[str, dict[str, Any]], StoreDigest | None]:
    """``scored``'s run in ``store``: its identity, by request_id the stored record of each of its turns (of its
    model: a judge's verdicts are not the run's; an answer over a failure where a request was retried) and the
    store's digest as the record keeps it (:func:`store_digest`)."""
    if store is None or not store.is_file():
        return None, {}, None
    from vlamb_nb.store import is_store

    if not is_store(store):
        return None, {}, store_digest(store)
    runs = list(_store_runs(store).items())
    if not runs:
        return None, {}, store_digest(store)
    k = scored.attrs.get("run_number")
    if k is None and len(runs) > 1:
        k = run_number(store, scored)
    model = scored.attrs.get("model")
    run_id, recs = runs[k or 0]
    if model and run_id.model_id != model:  # a judge's store: none of it is the judged run's
        return None, {}, store_digest(store)
    out: dict[str, dict[str, Any]] = {}
    for r in recs:
        req = str(r.get("request_id"))
        if req not in out or (out[req].get("error") and not r.get("error")):
            out[req] = r
    return run_id, out, store_digest(store, run_id, recs)


def _first_answer(store: Path | None, attrs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The first stored answer of the scored run (its model and setting, where a store holds several): what
    the run's meta, model and decoding are read from."""
    if store is None or not store.is_file():
        return None
    from vlamb_nb.store import is_store, read_records

    if not is_store(store):
        return None
    model, setting = attrs.get("model"), attrs.get("setting")
    recs = [r for r in read_records(store) if r.get("turn") in (None, "answer")]
    mine = [r for r in recs if not model or (r.get("model") or {}).get("model_id") == model]  # not a judge's
    return next((r for r in mine if (r.get("run") or {}).get("setting", setting) == setting), mine[0] if mine else None)


def _step_row(step: Mapping[str, Any], gold: Any, image: Any, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """A row of a turn that is not the scored answer (a caption, a scene graph, an agent step, a first attempt
    before a repair), as the store kept it: no parse, no metric."""
    return _clean({"item_id": str(step.get("item_id")), "turn": str(step.get("turn") or ""),
                   "request_id": str(step.get("request_id")), "prompt": step.get("prompt"), "answer": step.get("text"),
                   "parsed": None, "valid": None, "gold": gold, "image": image, "failure": _failure(step),
                   "scored": False, **dict.fromkeys(metrics)})


def _failure(row: Mapping[str, Any]) -> str | None:
    for name in ("error", "parse_error"):
        v = row.get(name)
        if isinstance(v, str) and v.strip():
            return v.strip().splitlines()[0][:240]
    return None


def from_scored(bench: Any, scored: Any, *, store: str | os.PathLike | None = None, stage: str = "scored",
                run_meta: Mapping[str, Any] | None = None, model: Mapping[str, Any] | None = None,
                n_resamples: int = 1000) -> RunRecord:
    """The record of one scored run (``stage="run"``: parsed answers, before any metric) of ``bench``: its
    facts from the stored run meta and the frame's ``attrs``, its metrics from ``bench.metrics``."""
    import numpy as np

    from vlamb_nb.meta import Deviation as Dev

    attrs = dict(getattr(scored, "attrs", {}) or {})
    path = Path(store) if store is not None else None
    run_id, stored, digested = _run_records(path, scored)
    # the run's meta, model and decoding: from its own first answer (a store may hold another decoding's run)
    first = next((r for r in stored.values() if r.get("turn") in (None, "answer")), None) or \
        _first_answer(path, attrs)
    meta = dict(run_meta or (first or {}).get("run") or {})
    info = dict(model or meta.get("model") or (first or {}).get("model") or {})
    if not info.get("model_id"):
        info["model_id"] = str(attrs.get("model") or (scored["model"].iloc[0] if "model" in scored.columns and
                                                        len(scored) else "?"))
    spec = attrs.get("spec") or meta.get("spec")
    facts = ModelFacts(**{k: info.get(k) for k in ("model_id", "revision", "quantization", "backend", "endpoint",
                                                   "family", "dtype")}, spec=spec)
    facts = ModelFacts(**{**asdict(facts), "backend": None if facts.backend is None else str(facts.backend)})
    metrics = tuple(getattr(bench, "metrics", ()) or ())
    values, per_row, notes, units = metric_values(metrics, scored, n_resamples=n_resamples) \
        if stage == "scored" else ([], {}, [], {})
    parsed_cols = [c for c in attrs.get("parsed_columns") or () if c in scored.columns]
    detail_cols = [c for c in DETAIL_COLUMNS if c in scored.columns and c not in parsed_cols]
    key = next((c for c in ("item_id", "uid", "id") if c in scored.columns), None)
    unit_key = next((k for m in metrics for k in m.key if k in scored.columns), key)  # how the unit sets name a row
    rows: list[dict[str, Any]] = []
    errors: dict[Any, str] = {}
    frame_rows = scored.to_dict(orient="records")
    shown = {str(r.get("request_id")) for r in frame_rows} if "request_id" in scored.columns else None
    steps: dict[str, list[dict[str, Any]]] = {}  # the turns before (or instead of) the answer that counts, by item
    for rid, r in (stored.items() if shown is not None else ()):
        if rid not in shown:
            steps.setdefault(str(r.get("item_id")), []).append(r)
    for i, row in enumerate(frame_rows):
        rid = str(row.get("request_id") or row.get(key) or "")
        rec = stored.get(rid) or {}
        turn = str(rec.get("turn") or (row.get("turn") if isinstance(row.get("turn"), str) else None) or "answer")
        out = {"item_id": None if key is None else str(row.get(key)), "turn": turn, "request_id": rid,
               "prompt": rec.get("prompt"), "answer": row.get("text", row.get("response")),
               "parsed": {c: row.get(c) for c in parsed_cols} or None, "valid": row.get("valid"),
               "gold": _first(row, GOLD_COLUMNS), "image": _first(row, IMAGE_COLUMNS), "failure": _failure(row),
               "details": {c: row.get(c) for c in detail_cols} or None}
        for step in steps.pop(str(out["item_id"]), []):  # each earlier turn of the item, as the store kept it
            rows.append(_step_row(step, out["gold"], out["image"], per_row))
        if isinstance(row.get("error"), str) and row["error"].strip():
            errors[out["item_id"]] = row["error"]
        if isinstance(out["valid"], float) and math.isnan(out["valid"]):
            out["valid"] = None
        out["scored"] = True
        out["key"] = None if unit_key is None else str(row.get(unit_key))
        ok = row.get("correct")
        out["correct"] = bool(ok) if isinstance(ok, bool | int | np.bool_ | np.integer) else None
        for name, vals in per_row.items():
            out[name] = vals[i]
        rows.append(_clean(out))
    rows += [_step_row(step, None, None, per_row) for left in steps.values() for step in left]  # never answered
    decoding = dict((first or {}).get("params") or {})
    cov = attrs.get("coverage")
    if not isinstance(cov, Coverage):  # a live run's frame: its answered and failed rows (N is not known here)
        from vlamb_nb.metrics import coverage as count

        ids = [str(r.get(key)) for r in frame_rows] if key else []
        cov = count(None, [i for i in ids if i not in errors], list(errors), list(errors.values()))
    data = data_facts(str(getattr(bench, "name", "")), attrs.get("data") or meta.get("data"),
                      str(meta.get("source") or ""))
    data = replace(data, **{k: attrs[k] if isinstance(attrs.get(k), str) else None
                            for k in ("items_sha256", "asked_sha256")})
    coverage = replace(cov, left_out=tuple(data.identity.left_out if data.identity else ()))
    devs = tuple(Dev.of(d) for d in attrs.get("deviations") or ())
    return RunRecord(benchmark=str(getattr(bench, "name", "")), setting=str(attrs.get("setting") or ""),
                     model=facts, run_id=run_id, stage=stage, decoding=decoding,
                     prompts={"templates": str(meta.get("template") or ""), "items": str(meta.get("source") or "")},
                     seed=meta.get("seed"), environment=environment(meta.get("versions")),
                     data=data, coverage=coverage, deviations=devs, metrics=tuple(values), units=units, rows=rows,
                     store=None if path is None else path.name,
                     notes=tuple(str(n) for n in attrs.get("notes") or ()) + tuple(notes),
                     created=time.strftime("%Y-%m-%dT%H:%M:%S%z"), store_digest=digested)


class RecordError(StoreError):
    """A run record could not be written (a read-only folder, a full disk): every view reads the record, so
    this stops the run; its answers stand in the store, and scoring the store again writes the record."""

    @classmethod
    def of(cls, where: str | os.PathLike, e: OSError) -> RecordError:
        return cls(f"{where}: run record not written ({e.strerror or e}); the answers stand in the store: make "
                   "its folder writable and score the store again (vlamb-nb score, or bench.score_store)")


def write_for(bench: Any, frame: Any, store: str | os.PathLike, *, stage: str = "scored",
              run_meta: Mapping[str, Any] | None = None, model: Mapping[str, Any] | None = None) -> Path:
    """Write the record of ``frame()`` (the scored or parsed run) beside ``store``: the file every view reads
    the run from, so a folder that cannot be written to is an error naming it (:class:`RecordError`)."""
    scored = frame()
    rec = from_scored(bench, scored, store=store, stage=stage, run_meta=run_meta, model=model)
    run = scored.attrs["run_number"] if "run_number" in scored.attrs else \
        run_number(store, scored, model or (run_meta or {}).get("model"))
    try:
        return rec.write(store, run=run)
    except OSError as e:
        raise RecordError.of(record_path(store), e) from None
