"""A fine-tuned adapter read back: its run record, the base model with the adapter, its V-FLUTE scores, and the
check that a reload reproduces the trained model.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vlamb_nb.benchmarks.vflute.finetune_data import encode_batch, example_requests, training_examples
from vlamb_nb.benchmarks.vflute.finetune_recipe import RECIPE_FILE
from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.meta import Deviation

if TYPE_CHECKING:
    from vlamb_nb.benchmarks.vflute.finetune import TrainResult

def read_adapter_record(directory: str | os.PathLike) -> dict[str, Any]:
    """The run record saved with an adapter (base model, config, losses, deviations)."""
    path = Path(directory) / RECIPE_FILE
    if not path.is_file():
        raise SettingError(f"{Path(directory)}: no {RECIPE_FILE}; not an adapter saved by vlamb_nb.benchmarks.vflute.finetune")
    try:
        return json.loads(path.read_text())
    except ValueError as e:
        raise DataError(f"unreadable run record: {e}", source=str(path)) from None


def load_finetuned(adapter_dir: str | os.PathLike, *, base_model: str | None = None, **kwargs: Any):
    """The base model (quantized as in training) with the saved adapter: a ``vlamb_nb.models`` model."""
    from vlamb_nb.models import load_model

    rec = read_adapter_record(adapter_dir)
    return load_model(base_model or rec["base_model"], quantization=rec.get("quantization"),
                      skip_modules=tuple(rec.get("skip_modules") or ()), adapter=str(adapter_dir), **kwargs)


def finetuned_deviations(adapter_dir: str | os.PathLike) -> list[Deviation]:
    """The fine-tuning deviations recorded with an adapter (print them under the evaluation tables)."""
    return [Deviation.of(d) for d in read_adapter_record(adapter_dir).get("deviations", [])]


def evaluate_adapter(adapter_dir: str | os.PathLike, items, *, setting: str | None = None, store=None,
                     scorer: Any = "auto", batch_size: int = 8, limit: int | None = None, progress: bool = True,
                     model: Any = None, **kwargs: Any):
    """Score a fine-tuned adapter on V-FLUTE (the −Image run is evaluated with white images too)."""
    from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK

    rec = read_adapter_record(adapter_dir)
    if setting is None:
        setting = "hypothesis_only" if rec.get("config", {}).get("setting") == "hypothesis_only" else "zero_shot"
    model = model if model is not None else load_finetuned(adapter_dir)
    scored = BENCHMARK.evaluate(model, items, setting, store=store, scorer=scorer, batch_size=batch_size,
                                limit=limit, progress=progress, **kwargs)
    scored.attrs["deviations"] = list(scored.attrs.get("deviations", [])) + finetuned_deviations(adapter_dir)
    return scored


def reload_check(result: TrainResult, items, *, max_new_tokens: int = 8) -> dict[str, Any]:
    """Reload the saved adapter onto a fresh base and compare logits and greedy text with the trained model."""
    import torch

    from vlamb_nb.models import DecodingParams, Request

    hf = result.model
    example = training_examples(items.head(1), setting=result.config.setting)[0]
    batch = {k: v for k, v in encode_batch(hf, [example]).items() if k != "labels"}
    reloaded = load_finetuned(result.adapter_dir)
    with torch.no_grad():
        before = hf.model(**batch).logits
        after = reloaded.model(**batch).logits
    prompt = example_requests(example)[0]
    req = Request(id=example.id, messages=prompt.messages, images=prompt.images,
                  params=DecodingParams(max_new_tokens=max_new_tokens))
    same_text = hf.generate([req])[0].text == reloaded.generate([req])[0].text
    return {"max_abs_logit_diff": float((before - after).abs().max()), "same_text": bool(same_text),
            "model_id": reloaded.info.model_id, "same_identity": reloaded.info.model_id == hf.info.model_id}
