"""Replay recorded real outputs through the real pipeline: ``replay:FILE``.

Nobody can judge a default (a coordinate scale, a repair text, a token limit) from a tiny random model's
noise. A replay backend answers every request with what a real model answered, so requests → parse →
repair → score run exactly as in a real run and must give the real run's per-item results.

A recording is JSON Lines (or a JSON list), one answer per line::

    {"item_id": "17", "setting": "direct", "turn": 0, "text": "{\\"bbox_2d\\": [10, 20, 200, 220]}",
     "model": "Qwen/Qwen3-VL-8B-Thinking"}

``turn`` counts the assistant turns before the answer (0: the first answer, 1: the answer after one
repair turn). A line is matched by (``item_id``, ``setting``, ``turn``) when the request carries an item
id (``meta["item_id"]``), else by (``prompt``, ``turn``), where ``prompt`` is the text of the request's first
user turn (a follow-up turn is told apart by ``turn``). The second key is what an HTTP request still carries, so the same recording served with
:func:`vlamb_nb.models.serve.serve` (``vlamb-nb serve replay:FILE``) drives the ``openai:`` path end to end.

A request with no recorded answer fails like a backend error (counted, never silently answered), and the
model is labelled ``backend="replay"`` with the recorded model's name, so its results never pass as a live
run while the recorded model's own conventions (its coordinate format) still apply.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.models.base import Backend, Generation, ModelInfo, Request


def _turn(request: Request) -> int:
    return sum(1 for m in request.messages if m.get("role") == "assistant")


def _text(message: dict[str, Any]) -> str:
    content = message.get("content", [])
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")


def first_user_text(request: Request) -> str:
    """The text of the first user turn: what identifies a request (and its follow-up turns, whose own text is
    often the same for every item) once it has crossed HTTP."""
    return next((_text(m) for m in request.messages if m.get("role") == "user"), "")


def _base_setting(setting: str) -> str:
    return str(setting or "").split(":", 1)[0]


def read_recording(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Recorded answers from a JSONL file or a JSON list; each needs ``text`` and ``item_id`` or ``prompt``."""
    from vlamb_nb.jsonl import iter_jsonl, read_json

    path = Path(path)
    if not path.is_file():
        raise DataError("recording not found", source=str(path))
    if path.suffix.lower() == ".json":
        rows = list(enumerate(read_json(path, expect=list, what="recorded answers"), start=1))
    else:
        rows = list(iter_jsonl(path))
    out = []
    for line, rec in rows:
        if not isinstance(rec, dict):
            raise DataError("a recorded answer must be an object", source=str(path), row=line)
        if not isinstance(rec.get("text"), str):
            raise DataError("a recorded answer needs a string 'text'", source=str(path), row=line, field="text")
        if rec.get("item_id") is None and rec.get("prompt") is None:
            raise DataError("a recorded answer needs 'item_id' or 'prompt'", source=str(path), row=line)
        out.append({**rec, "turn": int(rec.get("turn", 0) or 0), "_line": line})
    if not out:
        raise DataError("the recording holds no answers", source=str(path))
    return out


class ReplayModel:
    """Answers from a recording (see the module docstring)."""

    def __init__(self, records: Iterable[dict[str, Any]], *, model_id: str | None = None, source: str = "",
                 family: str | None = None) -> None:
        records = list(records)
        models = sorted({str(r["model"]) for r in records if r.get("model")})
        if model_id is None and len(models) > 1:
            raise SettingError(f"the recording {source or ''} mixes models {models}; replay one at a time "
                               "(pass model_id= to choose)")
        name = model_id or (models[0] if models else "recorded")
        if model_id is not None:
            records = [r for r in records if not r.get("model") or str(r["model"]) == model_id]
        self.info = ModelInfo(model_id=name, backend=Backend.REPLAY, family=family, revision=source or None)
        self._by_item: dict[tuple[str, str, int], str] = {}
        self._by_prompt: dict[tuple[str, int], str] = {}
        for r in records:
            if r.get("item_id") is not None:
                key = (str(r["item_id"]), _base_setting(r.get("setting", "")), r["turn"])
                self._add(self._by_item, key, r["text"], r)
            if r.get("prompt") is not None:
                self._add(self._by_prompt, (str(r["prompt"]), r["turn"]), r["text"], r)
        self.calls = 0

    @staticmethod
    def _add(index: dict, key: tuple, text: str, rec: dict[str, Any]) -> None:
        if key in index and index[key] != text:
            raise DataError(f"two different recorded answers for {key}", row=rec.get("_line"))
        index[key] = text

    @classmethod
    def from_file(cls, path: str | os.PathLike, **kwargs: Any) -> ReplayModel:
        return cls(read_recording(path), source=Path(path).name, **kwargs)

    def lookup(self, request: Request) -> str | None:
        turn = _turn(request)
        item = request.meta.get("item_id") if request.meta else None
        if item is not None:
            setting = _base_setting(request.setting)
            for key in ((str(item), setting, turn), (str(item), "", turn)):
                if key in self._by_item:
                    return self._by_item[key]
        return self._by_prompt.get((first_user_text(request), turn))

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        out = []
        for r in requests:
            self.calls += 1
            text = self.lookup(r)
            if text is None:
                item = (r.meta or {}).get("item_id", r.id)
                out.append(Generation(request_id=r.id, finish_reason="error",
                                      error=f"ReplayMissing: no recorded answer for item {item!r} "
                                            f"(setting {_base_setting(r.setting)!r}, turn {_turn(r)})"))
            else:
                sizes = [tuple(getattr(im, "size", ())) or None for im in r.images] if r.images else None
                out.append(Generation(request_id=r.id, text=text, finish_reason="stop", image_sizes=sizes))
        return out

    def score_options(self, request: Request, options: Sequence[str]) -> list[float]:
        raise SettingError("a replayed model has no option scorer (log-likelihoods were not recorded)")
