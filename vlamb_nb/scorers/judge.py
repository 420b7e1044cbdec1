"""LLM-as-judge through the same model protocol as the evaluated models.

A judge is a prompt template plus a parser. :func:`judge_requests` fills the template
for each row (text only, no image: the RACQUET judge never sees the image),
:func:`run_judge` generates through :func:`vlamb_nb.runner.run` (cached, resumable;
batched for a local model, streamed to an endpoint) and parses every output. An output the
parser cannot read is kept as a row with ``judge_valid=False`` and counted, never dropped.
Any backend works: a local 4-bit model, or an OpenAI-compatible endpoint (e.g. a vLLM server
with Llama-3-70B-Instruct: ``load_model("openai:...", base_url=..., concurrency=64)``; a judge's
``concurrency=`` overrides the model's requests in flight for that judge).

Example (RACQUET A/B/C judge; MUCAR reuses the same functions with its own spec)::

    spec = JudgeSpec("abc", template="... Q: {question} A: {response}", parse=last_match_parser(
        r"CLASS\\s*([ABC])", labels=("A", "B", "C")))
    judged = run_judge(model, spec, predictions, store="judge.jsonl")
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.models.base import VLM, DecodingParams, Request, system_message, user_message

Parser = Callable[[str], dict[str, Any]]

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def placeholders(template: str) -> list[str]:
    """Names of the ``{name}`` slots of a template, in order of first appearance."""
    return list(dict.fromkeys(_PLACEHOLDER.findall(template)))


def fill_template(template: str, fields: Mapping[str, Any]) -> str:
    """Replace each ``{name}`` slot with ``fields[name]``.

    Unlike ``str.format`` this leaves every other brace alone, so templates may quote JSON.
    A slot without a value is an error: a judge prompt with an empty slot would be scored silently.
    """
    missing = [n for n in placeholders(template) if n not in fields]
    if missing:
        raise SettingError(f"judge template needs field(s) {missing}; got {sorted(fields)}")
    return _PLACEHOLDER.sub(lambda m: str(fields[m.group(1)]), template)


# -- parsers -----------------------------------------------------------------------------------------
def last_match_parser(pattern: str, labels: Sequence[str], *, flags: int = 0) -> Parser:
    """Label = group 1 of the *last* match of ``pattern`` (judges reason first, then conclude)."""
    rx = re.compile(pattern, flags)
    allowed = {str(x) for x in labels}

    def parse(text: str) -> dict[str, Any]:
        hits = [m.group(1) for m in rx.finditer(text or "")]
        hits = [h for h in hits if h in allowed]
        if not hits:
            return {"label": None, "valid": False, "parse_error": "no label found"}
        return {"label": hits[-1], "valid": True, "parse_error": None}

    return parse


def first_token_parser(labels: Sequence[str], *, case_sensitive: bool = False) -> Parser:
    """Label = the first word of the output if it is one of ``labels`` (e.g. a one-token YES/NO judge)."""
    canon = {(x if case_sensitive else x.lower()): x for x in labels}

    def parse(text: str) -> dict[str, Any]:
        words = re.findall(r"[A-Za-z]+", text or "")
        if not words:
            return {"label": None, "valid": False, "parse_error": "empty output"}
        w = words[0] if case_sensitive else words[0].lower()
        if w in canon:
            return {"label": canon[w], "valid": True, "parse_error": None}
        return {"label": None, "valid": False, "parse_error": f"first word {words[0]!r} is not a label"}

    return parse


# -- the judge ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JudgeSpec:
    """A judge: name (part of the cache key), template with ``{field}`` slots, parser, decoding."""

    name: str
    template: str
    parse: Parser
    labels: tuple[str, ...] = ()
    system: str | None = None
    params: DecodingParams = field(default_factory=lambda: DecodingParams(max_new_tokens=512))
    benchmark: str = "judge"

    @property
    def fields(self) -> list[str]:
        return placeholders(self.template)

    def prompt(self, **fields: Any) -> str:
        return fill_template(self.template, fields)


def _rows(rows: Any) -> list[dict[str, Any]]:
    if hasattr(rows, "to_dict"):
        return rows.to_dict(orient="records")
    return [dict(r) for r in rows]


def judge_requests(spec: JudgeSpec, rows: Any, *, id_column: str = "request_id",
                   field_map: Mapping[str, str] | None = None) -> list[Request]:
    """One text-only request per row; ``field_map`` maps template slots to row columns (default: same name).

    Request ids are ``<row id>::judge-<spec name>``; ``meta`` carries the judged row's id (``judged``), its item
    (``item_id``, the row's own ``item_id`` where it has one) and setting, all stored with the verdict, so judged
    rows join back to their predictions unambiguously.
    """
    fmap = {f: f for f in spec.fields}
    fmap.update(field_map or {})
    out: list[Request] = []
    for i, row in enumerate(_rows(rows), start=1):
        if id_column not in row:
            raise DataError(f"judge input has no {id_column!r} column", row=i, field=id_column)
        vals: dict[str, Any] = {}
        for slot, col in fmap.items():
            v = row.get(col)
            if v is None or (isinstance(v, float) and v != v):
                raise DataError(f"empty value for judge slot {slot!r}", row=i, field=col)
            vals[slot] = v
        messages = [system_message(spec.system)] if spec.system else []
        messages.append(user_message(spec.prompt(**vals)))
        rid = str(row[id_column])
        judged = {"setting": row["setting"]} if isinstance(row.get("setting"), str) else {}
        item = row.get("item_id")
        out.append(Request(id=f"{rid}::judge-{spec.name}", messages=messages, params=spec.params,
                           benchmark=spec.benchmark, setting=f"judge:{spec.name}",
                           meta={"item_id": str(item) if isinstance(item, str) else rid, "judged": rid,
                                 "judge": spec.name, **judged}))
    return out


def parse_outputs(spec: JudgeSpec, texts: Sequence[str | None], errors: Sequence[str | None] | None = None):
    """Parse judge outputs; a failed generation is an unparsed row with its error kept."""
    import pandas as pd

    errors = list(errors) if errors is not None else [None] * len(texts)
    rows = []
    for text, err in zip(texts, errors, strict=True):
        if _present(err):
            rows.append({"label": None, "valid": False, "parse_error": f"generation failed: {err}"})
        else:
            rows.append(spec.parse(text or ""))
    return pd.DataFrame(rows, columns=["label", "valid", "parse_error"])


def run_judge(model: VLM, spec: JudgeSpec, rows: Any, *, id_column: str = "request_id",
              field_map: Mapping[str, str] | None = None, store: str | os.PathLike | None = None,
              batch_size: int = 8, limit: int | None = None, progress: bool = True, prefix: str = "judge",
              concurrency: int | None = None):
    """Judge every row; return the rows with ``<prefix>_text``, ``_label``, ``_valid``, ``_parse_error``.

    ``batch_size`` is a local judge's batch; ``concurrency`` a served judge's requests in flight (default: the
    model's own)."""
    import pandas as pd

    from vlamb_nb import runner

    frame = rows.reset_index(drop=True) if hasattr(rows, "reset_index") else pd.DataFrame(_rows(rows))
    reqs = judge_requests(spec, frame, id_column=id_column, field_map=field_map)
    if limit is not None:
        frame, reqs = frame.iloc[:limit].reset_index(drop=True), reqs[:limit]
    meta = {"judge": spec.name, "model": model.info.to_dict(), "params": spec.params.to_dict()}
    gens = runner.run(model, reqs, store, batch_size=batch_size, progress=progress, run_meta=meta,
                      desc=f"judge {spec.name}", concurrency=concurrency)
    parsed = parse_outputs(spec, gens["text"].tolist(), gens["error"].tolist())
    out = frame.copy()
    out[f"{prefix}_model"] = model.info.model_id
    out[f"{prefix}_text"] = gens["text"].to_numpy()
    out[f"{prefix}_error"] = gens["error"].to_numpy()
    for c in ("label", "valid", "parse_error"):
        out[f"{prefix}_{c}"] = parsed[c].to_numpy()
    return out


def parse_summary(judged, *, prefix: str = "judge") -> dict[str, Any]:
    """How many outputs were parsed, unparsed, or failed to generate (reported beside every share)."""
    valid = judged[f"{prefix}_valid"].astype(bool)
    failed = judged[f"{prefix}_error"].map(_present).astype(bool)
    counts = judged.loc[valid, f"{prefix}_label"].value_counts().sort_index()
    return {"n": int(len(judged)), "parsed": int(valid.sum()), "unparsed": int((~valid).sum()),
            "generation_failed": int(failed.sum()), "labels": {str(k): int(v) for k, v in counts.items()}}


def _present(x: Any) -> bool:
    return x is not None and not (isinstance(x, float) and x != x) and str(x) != ""
