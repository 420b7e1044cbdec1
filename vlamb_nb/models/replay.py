"""Replay recorded real outputs through the real pipeline: ``replay:FILE``.

Nobody can judge a default (a coordinate scale, a repair text, a token limit) from a tiny random model's
noise. A replay backend answers every request with what a real model answered, so requests → parse →
repair → score run exactly as in a real run and must give the real run's per-item results.

A recording is JSON Lines (or a JSON list), one answer per line::

    {"item_id": "17", "setting": "direct", "depth": 0, "text": "{\\"bbox_2d\\": [10, 20, 200, 220]}",
     "model": "Qwen/Qwen3-VL-8B-Thinking"}

``depth`` counts the assistant turns of the chat before the answer (0: the first answer, 1: the answer after one
repair turn); an integer ``turn`` is read as the old spelling of it. (A run's *turn* is the name of a step of its
chain, ``answer`` or ``repair``, as the store and the run record keep it; a chat's depth is what a request still
carries once it has crossed HTTP, so a recording keys by depth.) A line is matched by (``item_id``, ``setting``,
``depth``) when the request carries an item id (``meta["item_id"]``), else by (``prompt``, ``depth``), where
``prompt`` is the text of the request's first user turn (a follow-up is told apart by its depth). The second key
is what an HTTP request still carries, so the same recording served with
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


def _depth_of(request: Request) -> int:
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
        out.append({**rec, "depth": _depth(rec, path, line), "_line": line})
    if not out:
        raise DataError("the recording holds no answers", source=str(path))
    return out


def _depth(rec: dict[str, Any], path: Path | str, line: int | None) -> int:
    """A recorded answer's chat depth (``depth``, or an integer ``turn``, the old spelling); a turn that names a
    step (a prediction store's record) is refused in one line."""
    name = "depth" if "depth" in rec else "turn"
    v = rec.get(name, 0)
    if v is None:
        return 0
    if isinstance(v, str) and v.strip().isdigit():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        if name == "turn" and isinstance(v, str):
            raise DataError(f"turn {v!r} names a step of a run, as a prediction store keeps it: a recording gives "
                            "each answer's 'depth' (0: the first answer, 1: the answer after one repair turn); "
                            "a store's answers are scored with vlamb-nb score", source=str(path), row=line, field=name)
        raise DataError(f"{name} must be a whole number of turns before the answer (0, 1, ...), got {v!r}",
                        source=str(path), row=line, field=name)
    return v


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
            r = {**r, "depth": _depth(r, source, r.get("_line"))}
            if r.get("item_id") is not None:
                key = (str(r["item_id"]), _base_setting(r.get("setting", "")), r["depth"])
                self._add(self._by_item, key, r["text"], r)
            if r.get("prompt") is not None:
                self._add(self._by_prompt, (str(r["prompt"]), r["depth"]), r["text"], r)
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
        depth = _depth_of(request)
        item = request.meta.get("item_id") if request.meta else None
        if item is not None:
            setting = _base_setting(request.setting)
            for key in ((str(item), setting, depth), (str(item), "", depth)):
                if key in self._by_item:
                    return self._by_item[key]
        return self._by_prompt.get((first_user_text(request), depth))

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        out = []
        for r in requests:
            self.calls += 1
            text = self.lookup(r)
            if text is None:
                item = (r.meta or {}).get("item_id", r.id)
                out.append(Generation(request_id=r.id, finish_reason="error",
                                      error=f"ReplayMissing: no recorded answer for item {item!r} "
                                            f"(setting {_base_setting(r.setting)!r}, depth {_depth_of(r)})"))
            else:
                sizes = [tuple(getattr(im, "size", ())) or None for im in r.images] if r.images else None
                out.append(Generation(request_id=r.id, text=text, finish_reason="stop", image_sizes=sizes))
        return out

    def score_options(self, request: Request, options: Sequence[str]) -> list[float]:
        raise SettingError("a replayed model has no option scorer (log-likelihoods were not recorded)")
