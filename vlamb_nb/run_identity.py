"""A score belongs to one run: telling runs apart in a store or file, and refusing to merge them.

A prediction store is append-only and may hold several runs: other models, another quantization or
revision, other decoding parameters, other settings, other prompt templates or other data. Scoring them together gives a number no run
produced. Every stored record carries its run's identity (the model's id, revision, quantization,
backend and, for a served model, endpoint; the benchmark, the setting tag and the decoding parameters of its
request, the ``turn`` of its run it answers, and in ``run`` the run's setting, its seed and the digests of the
prompt templates and of the items asked); a record of a turn before or after the answer joins its run.
:func:`select_run` returns the records of exactly one run or raises :class:`MixedRunsError` listing the runs and
how to pick one.

Within one run the same request may appear twice (a rerun after a crash, a retried failure):
:func:`dedupe` applies the prediction store's rule (:mod:`vlamb_nb.store`): one record when the answers
agree, a success over any failure, and conflicting answers refused. The same rule holds for one question asked
twice under two request ids or hashes (two runs' records copied into one file, a rerun that named its requests
otherwise): :func:`one_per_question` keeps one record per item, turn, request meta and decoding, so an item is never
counted twice.
What the rules drop is counted and reported (``attrs["coverage"].duplicates`` of a scored store), never silent.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.hashing import digest
from vlamb_nb.models.base import Backend
from vlamb_nb.store import ANSWER, ANSWER_FIELDS, failed, with_fields

#: the model fields that make two runs different runs
MODEL_FIELDS = ("model_id", "revision", "quantization", "backend", "endpoint")


class MixedRunsError(DataError):
    """A store or file holds several runs and nothing says which one to score (``runs``: them, listed)."""

    runs: str = ""


class DuplicateWarning(UserWarning):
    """Identical duplicate records were dropped (reported, not silent)."""


@dataclass(frozen=True)
class RunId:
    """The identity of one run; ``label`` is what an error message and a table show."""

    model_id: str
    revision: str | None
    quantization: str | None
    backend: str | None
    benchmark: str
    setting: str
    params: str  # digest of the decoding parameters of the run's answer requests (a per-request seed left out)
    template: str = ""  # digest of the prompt templates the run was asked with
    source: str = ""  # digest of the items the run was asked about
    endpoint: str | None = None  # the server a remote model answered from (credentials masked)
    tag: str = ""  # the answer requests' setting tag (what else the run asked with: Ref-Adv's grounding style)
    seed: Any = None  # the run's seed (its meta), which per-request seeds (RACQUET's samples) derive from

    @property
    def label(self) -> str:
        parts = [self.model_id]
        if self.quantization:
            parts.append(self.quantization)
        if self.revision:
            parts.append(f"rev {self.revision}")
        if self.backend and self.backend != Backend.HF:
            parts.append(str(self.backend))
        if self.endpoint:
            parts.append(f"at {self.endpoint}")
        parts.append(self.tag if self.tag and self.tag != self.setting else (self.setting or "?"))
        if self.seed is not None:
            parts.append(f"seed {self.seed}")
        extra = "".join(f" | {k} {v[:8]}" for k, v in (("prompts", self.template), ("data", self.source)) if v)
        return " | ".join(parts) + f" | decoding {self.params[:8]}" + extra


def _params(rec: dict[str, Any]) -> str:
    """The decoding parameters' digest, without a per-request seed (the run's own seed is in its identity)."""
    return digest({k: v for k, v in (rec.get("params") or {}).items() if k != "seed"})


def run_identity(rec: dict[str, Any]) -> RunId:
    """The run a stored record belongs to. A record of a turn other than the answer (a caption, a scene graph, an
    agent step, a repair turn) has no decoding or tag of its own here: it joins its run in :func:`identify_runs`."""
    rec = with_fields(rec)
    model = rec.get("model") or {}
    if isinstance(model, str):
        model = {"model_id": model}
    run = rec.get("run") if isinstance(rec.get("run"), dict) else {}
    step = rec["turn"] != ANSWER
    return RunId(model_id=str(model.get("model_id", "")), revision=model.get("revision"),
                 quantization=model.get("quantization"), backend=model.get("backend"),
                 benchmark=str(rec.get("benchmark") or ""), setting=str(run.get("setting") or rec.get("setting") or ""),
                 params="" if step else _params(rec), template=str(run.get("template") or ""),
                 source=str(run.get("source") or ""), endpoint=model.get("endpoint"),
                 tag="" if step else str(rec.get("setting") or ""), seed=run.get("seed"))


def identify_runs(records: Iterable[dict[str, Any]]) -> dict[RunId, list[dict[str, Any]]]:
    """Records grouped by run, in first-seen order. A record of another turn than the answer joins the run of its
    setting with the same model, prompts and data; when there are several (two decodings, two grounding styles),
    the one its decoding parameters match, then the one whose setting tag its own extends. A step whose run is
    still ambiguous stands as a run of its own, so nothing is scored with a turn from another run."""
    records = [with_fields(r) for r in records]
    runs: dict[RunId, list[dict[str, Any]]] = {}
    steps: list[tuple[RunId, dict[str, Any]]] = []
    for r in records:
        rid = run_identity(r)
        if rid.params == "":
            steps.append((rid, r))
        else:
            runs.setdefault(rid, []).append(r)
    same = (*MODEL_FIELDS, "benchmark", "setting", "template", "source")
    for rid, r in steps:
        owners = [k for k in runs if all(getattr(k, f) == getattr(rid, f) for f in same)]
        if len(owners) > 1:
            owners = [k for k in owners if k.params == _params(r)] or owners
        if len(owners) > 1:
            tag = str(r.get("setting") or "")
            owners = [k for k in owners if tag.startswith(k.tag)] or owners
        if len(owners) == 1:
            runs[owners[0]].append(r)
        else:  # no base run, or several it could belong to: the step stands as its own run
            runs.setdefault(rid, []).append(r)
    return runs


def describe(runs: dict[RunId, list[dict[str, Any]]]) -> str:
    return "; ".join(f"[{i}] {rid.label} ({len(recs)} records)" for i, (rid, recs) in enumerate(runs.items()))


#: how a run without quantization is named when picking it (``-o quantization=none``, ``=null`` or ``=``)
UNQUANTIZED = ("", "none", "null")


def quantization_matches(have: Any, want: Any) -> bool:
    """Whether a run quantized ``have`` is the one asked for; ``want`` None asks nothing, and ``none``, ``null``
    or an empty value ask for the run without quantization."""
    if want is None:
        return True
    if str(want).strip().lower() in UNQUANTIZED:
        return have is None or str(have).strip().lower() in UNQUANTIZED
    return str(have) == str(want)


def select_run(records: Iterable[dict[str, Any]], *, model: str | None = None, setting: str | None = None,
               quantization: str | None = None, run: int | None = None,
               source: str = "") -> tuple[RunId, list[dict[str, Any]]]:
    """The records of exactly one run. Several runs and no selector (``model``, ``setting``,
    ``quantization`` — ``"none"`` for the run without — or the run's index ``run``) is a
    :class:`MixedRunsError` that lists them."""
    runs = identify_runs(records)
    if not runs:
        raise DataError("no records to score", source=source)
    keys = list(runs)
    if run is not None:
        if not 0 <= int(run) < len(keys):
            raise SettingError(f"run index {run} out of range; the file holds {describe(runs)}")
        keys = [keys[int(run)]]
    keys = [k for k in keys if (model is None or k.model_id == model) and (setting is None or k.setting == setting)
            and quantization_matches(k.quantization, quantization)]
    if not keys:
        raise MixedRunsError(f"no run matches model={model!r} setting={setting!r} quantization={quantization!r}; "
                             f"the file holds {describe(runs)}", source=source)
    if len(keys) > 1:
        shown = {k: runs[k] for k in keys}
        err = MixedRunsError(f"the file holds {len(keys)} runs, which are never scored together: {describe(shown)}. "
                             "Pick one with -o run=N (or -o model=..., -o setting=..., -o quantization=...)",
                             source=source)
        err.runs = describe(shown)
        raise err
    return keys[0], runs[keys[0]]


def _keep_one(records: Sequence[dict[str, Any]], key_of: Any, conflict: Any, *, answer: Sequence[str],
              source: str, lines: Sequence[int] | None) -> tuple[list[dict[str, Any]], int]:
    """The store's rule for records that share ``key_of(record)``: identical answers collapse (counted), a success
    replaces an earlier failure (a rerun retried it), a later failure never replaces an answer, and two different
    successful answers are a :class:`DataError` whose text ``conflict(key, old, new, where)`` gives."""
    out: dict[Any, dict[str, Any]] = {}
    at: dict[Any, int | None] = {}
    dropped = 0
    for i, r in enumerate(records):
        k = key_of(r)
        line = lines[i] if lines is not None else None
        if k not in out:
            out[k], at[k] = r, line
            continue
        old = out[k]
        dropped += 1
        if failed(old):
            out[k], at[k] = r, line  # the retry succeeded (or failed again: the newer error counts)
        elif not failed(r) and not all(old.get(f) == r.get(f) for f in answer):
            where = f" on lines {at[k]} and {line}" if at[k] is not None and line is not None else ""
            raise DataError(conflict(k, old, r, where), source=source)
    return list(out.values()), dropped


def dedupe(records: Sequence[dict[str, Any]], *, key: str = "request_id", answer: Sequence[str] = ANSWER_FIELDS,
           source: str = "", lines: Sequence[int] | None = None) -> tuple[list[dict[str, Any]], int]:
    """One record per ``key``, by the store's rule (:func:`_keep_one`): two different successful answers are an
    error naming the request and, given ``lines`` (the 1-based line of each record), both lines."""
    kept, dropped = _keep_one(
        records, lambda r: r.get(key),
        lambda k, old, new, where: f"{key} {k!r} has two different answers{where} ({_short(old)} vs {_short(new)}); "
                                   "the file mixes runs or was edited",
        answer=answer, source=source, lines=lines)
    if dropped:
        warnings.warn(f"{source or 'predictions'}: {dropped} duplicate record(s) dropped", DuplicateWarning,
                      stacklevel=2)
    return kept, dropped


def check_benchmark(numbered: Sequence[tuple[int, dict[str, Any]]], benchmark: str, *, source: str = "") -> None:
    """Refuse a record of another benchmark (one that names none is a paper reader's): scoring the rest as if it
    were not there would count its item as missing, silently."""
    for line, r in numbered:
        if r.get("benchmark") not in (None, "", benchmark):
            raise DataError(f"line {line}: a record of benchmark {r.get('benchmark')!r} among {benchmark}'s; a store "
                            "holds one benchmark's runs, score it with that benchmark", source=source)


def check_turns(numbered: Sequence[tuple[int, dict[str, Any]]], turns: Sequence[str], *, run: str,
                source: str = "") -> int:
    """Refuse a record of a turn the run does not have (``turns``: its turns' names), naming its line. A record of
    another variant of one of its turns (``repair-newlines`` beside ``repair``, or the other way round: the same
    turn asked with other options, which one store keeps side by side) is not this run's to score: it is counted, and the count returned,
    for the caller to report."""
    variants = 0
    for line, r in numbered:
        turn = r.get("turn")
        if turn in turns:
            continue
        if isinstance(turn, str) and turn.split("-", 1)[0] in {t.split("-", 1)[0] for t in turns}:
            variants += 1
            continue
        raise DataError(f"line {line}: turn {turn!r} is not a turn of {run} ({', '.join(map(repr, turns))}); "
                        "the record was edited or belongs elsewhere", source=source)
    return variants


def question(rec: dict[str, Any]) -> tuple[str, str, str, str]:
    """What a record answers: its item, its turn, its request's meta and its decoding parameters. Two records of one
    run that answer one item in one turn with the same meta and decoding answer one question, whatever request hash
    or id they are filed under (a line copied in from another run, a rerun whose prompt or image changed): an item
    is counted once per turn. A RACQUET sample differs by its meta and seed, a judge's verdict by the answer it
    judged, Ref-Adv's deletion by the expression asked, so they stay apart."""
    return (str(rec.get("item_id")), str(rec.get("turn")), digest(rec.get("meta") or {}),
            digest(rec.get("params") or {}))


def one_per_question(records: Sequence[dict[str, Any]], *, source: str = "",
                     lines: Sequence[int] | None = None) -> tuple[list[dict[str, Any]], int]:
    """One record per :func:`question` of one run, by the store's rule (:func:`_keep_one`): the same answer under
    two request ids or hashes is kept once (the first) and counted, and two different answers to one question are
    an error naming the item, the turn, both request ids and, given ``lines``, both lines."""
    return _keep_one(
        records, question,
        lambda k, old, new, where: f"item {k[0]!r} (turn {k[1]!r}) has two different answers{where}, under request "
                                   f"ids {old.get('request_id')!r} and {new.get('request_id')!r} ({_short(old)} vs "
                                   f"{_short(new)}); the file mixes runs or was edited, refusing to pick one",
        answer=ANSWER_FIELDS, source=source, lines=lines)


@dataclass
class StoredAnswers:
    """A store's answers after the store's rules (:func:`stored_answers`): one record per request of each turn and
    per question, each with its line in the file."""

    records: list[dict[str, Any]]
    lines: list[int]
    run_id: RunId | None  # the one run they are (None: not narrowed, a judge's verdicts over several settings)
    number: int | None  # the run's number in a store holding several (its record is named by it)
    duplicates: int  # records answering a question already answered under another request id (counted once)
    in_file: int  # records the file holds

    @property
    def numbered(self) -> list[tuple[int, dict[str, Any]]]:
        return list(zip(self.lines, self.records, strict=True))


def stored_answers(store: Any, benchmark: str, *, source: str = "", narrow: bool = True,
                   **pick: Any) -> StoredAnswers:
    """The one reader of stored answers: a prediction store (a path, read by :func:`vlamb_nb.store.read_store`) or
    records (dicts: what a paper's reader makes of an official file) of ``benchmark`` (a record of another is
    refused), narrowed to one run (:func:`select_run`, ``pick`` its selectors; ``narrow=False`` keeps every run's,
    for a judge store whose verdicts span the settings it judged), one record per request of each turn
    (:func:`dedupe`) and per question (:func:`one_per_question`)."""
    import os

    from vlamb_nb.store import read_store

    is_file = isinstance(store, str | os.PathLike)
    numbered = read_store(store) if is_file else [(i, with_fields(dict(r))) for i, r in enumerate(store, start=1)]
    check_benchmark(numbered, benchmark, source=source)
    line_of = {id(r): ln for ln, r in numbered}
    recs = [r for _, r in numbered]
    rid = number = None
    if narrow:
        rid, recs = select_run(recs, source=source, **pick)
        if is_file:
            keys = list(identify_runs([r for _, r in numbered]))
            number = keys.index(rid) if len(keys) > 1 and rid in keys else None
    by_turn: dict[str, list[dict[str, Any]]] = {}
    for r in recs:  # one record per request of each turn (two repair texts re-ask one request id)
        by_turn.setdefault(str(r.get("turn")), []).append(r)
    recs = [r for group in by_turn.values()
            for r in dedupe(group, source=source, lines=[line_of[id(x)] for x in group])[0]]
    recs, duplicates = one_per_question(recs, source=source, lines=[line_of[id(r)] for r in recs])
    return StoredAnswers(recs, [line_of[id(r)] for r in recs], rid, number, duplicates, len(numbered))


def one_run(numbered: Sequence[tuple[int, dict[str, Any]]], *, source: str = "",
            **pick: Any) -> list[tuple[int, dict[str, Any]]]:
    """(line, record) pairs of a store (:func:`vlamb_nb.store.read_store`) narrowed to one run
    (:func:`select_run`, ``pick`` its selectors) with one record per request (:func:`dedupe`)."""
    line_of = {id(r): ln for ln, r in numbered}
    _, recs = select_run([r for _, r in numbered], source=source, **pick)
    recs, _ = dedupe(recs, source=source, lines=[line_of[id(r)] for r in recs])
    return [(line_of[id(r)], r) for r in recs]


def _short(rec: dict[str, Any], n: int = 40) -> str:
    text = str(rec.get("text") or rec.get("error") or "")
    return repr(text if len(text) <= n else text[: n - 1] + "…")
