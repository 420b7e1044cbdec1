"""Runner: out-of-memory halving with injected OOMs, resume after an interruption, cached reruns."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from vlamb_nb import runner
from vlamb_nb.models import (
    IMAGE_SLOT,
    DecodingParams,
    Generation,
    ModelInfo,
    Request,
    ScriptedModel,
    user_message,
)
from vlamb_nb.store import PredictionStore


class OutOfMemoryError(RuntimeError):
    """Named like torch.cuda.OutOfMemoryError: the runner recognises OOMs by name, without torch."""


class OOMModel:
    """Fails any batch larger than ``capacity`` (and any batch holding a ``poison`` request) with an OOM."""

    def __init__(self, capacity: int, poison: set[str] = frozenset(), exc: type[Exception] = OutOfMemoryError):
        self.info = ModelInfo(model_id="oom-model", backend="scripted")
        self.capacity, self.poison, self.exc = capacity, set(poison), exc
        self.batch_sizes: list[int] = []

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        self.batch_sizes.append(len(requests))
        if len(requests) > self.capacity or any(r.id in self.poison for r in requests):
            raise self.exc("CUDA out of memory. Tried to allocate 2.00 GiB")
        return [Generation(request_id=r.id, text=f"answer {r.id}", finish_reason="stop") for r in requests]

    def score_options(self, request, options):
        raise NotImplementedError


def _reqs(n: int) -> list[Request]:
    return [Request(id=f"q{i}", messages=[user_message(f"question {i}")], benchmark="b", setting="s")
            for i in range(n)]


def test_oom_halves_the_batch_and_keeps_the_smaller_size(tmp_path):
    model = OOMModel(capacity=2)
    out = runner.run(model, _reqs(11), tmp_path / "p.jsonl", batch_size=8, progress=False)
    assert out["error"].isna().all()
    assert list(out["text"]) == [f"answer q{i}" for i in range(11)]
    assert out.attrs["batch_size"] == 2 and out.attrs["oom_events"] == 2
    assert model.batch_sizes[:3] == [8, 4, 2]
    assert max(model.batch_sizes[3:]) <= 2  # the halved size is kept for the rest of the run
    assert len(PredictionStore(tmp_path / "p.jsonl").keys()) == 11


def test_oom_at_batch_size_one_fails_only_that_item(tmp_path):
    model = OOMModel(capacity=4, poison={"q5"})
    out = runner.run(model, _reqs(8), tmp_path / "p.jsonl", batch_size=4, progress=False)
    failed = out[out["error"].notna()]
    assert list(failed["request_id"]) == ["q5"]
    assert "batch size 1" in failed["error"].iloc[0] and "out of memory" in failed["error"].iloc[0]
    assert out["error"].isna().sum() == 7
    # the failure is recorded, so a rerun (with more memory) retries exactly that item
    model2 = OOMModel(capacity=4)
    again = runner.run(model2, _reqs(8), tmp_path / "p.jsonl", batch_size=4, progress=False)
    assert model2.batch_sizes == [1] and again["error"].isna().all()


def test_real_torch_oom_class_is_recognised(tmp_path):
    torch = pytest.importorskip("torch")
    model = OOMModel(capacity=1, exc=torch.cuda.OutOfMemoryError)
    out = runner.run(model, _reqs(3), None, batch_size=4, progress=False)
    assert out["error"].isna().all() and out.attrs["batch_size"] == 1


def test_other_errors_fail_the_batch_without_halving():
    def boom(r):
        raise ValueError("bad prompt")

    out = runner.run(ScriptedModel(boom), _reqs(3), None, batch_size=4, progress=False)
    assert out["error"].str.contains("bad prompt").all()
    assert out.attrs["oom_events"] == 0


def test_rerun_of_finished_run_makes_no_model_calls(tmp_path):
    m = ScriptedModel(lambda r: r.id.upper())
    first = runner.run(m, _reqs(50), tmp_path / "p.jsonl", batch_size=8, progress=False)
    calls = m.calls
    again = runner.run(m, _reqs(50), tmp_path / "p.jsonl", batch_size=8, progress=False)
    assert m.calls == calls and again.attrs["model_calls"] == 0
    assert again["cached"].all() and list(again["text"]) == list(first["text"])


def test_default_run_meta_records_quantization(tmp_path):
    class Quantized(ScriptedModel):
        def __init__(self):
            super().__init__(lambda r: "x")
            self.info = ModelInfo(model_id="m", quantization="4bit")

    runner.run(Quantized(), _reqs(1), tmp_path / "p.jsonl", progress=False)
    rec = next(PredictionStore(tmp_path / "p.jsonl").records())
    assert rec["run"]["model"]["quantization"] == "4bit"
    assert rec["run"]["deviations"][0]["what"] == "quantization"


@pytest.mark.slow
def test_resume_after_interrupted_run_with_a_real_tiny_model(tmp_path):
    """Kill the run mid-way (KeyboardInterrupt after two batches); the rerun only does the rest."""
    from vlamb_nb.models import load_model

    hf = load_model("tiny:qwen2_5_vl", quantization="4bit")
    from PIL import Image

    img = Image.new("RGB", (90, 60), (200, 30, 30))
    reqs = [Request(id=f"r{i}", messages=[user_message(IMAGE_SLOT, f"Colour? {i}")], images=[img],
                    params=DecodingParams(max_new_tokens=4), benchmark="b", setting="s") for i in range(7)]

    class Interrupting:
        def __init__(self, inner, stop_after: int | None):
            self.inner, self.info, self.stop_after, self.seen = inner, inner.info, stop_after, []

        def generate(self, batch):
            if self.stop_after is not None and len(self.seen) >= self.stop_after:
                raise KeyboardInterrupt
            self.seen.append([r.id for r in batch])
            return self.inner.generate(batch)

        def score_options(self, request, options):
            return self.inner.score_options(request, options)

    store = tmp_path / "p.jsonl"
    with pytest.raises(KeyboardInterrupt):
        runner.run(Interrupting(hf, stop_after=2), reqs, store, batch_size=2, progress=False)
    assert len(PredictionStore(store).keys()) == 4  # both finished batches survived the interruption
    resumed = Interrupting(hf, stop_after=None)
    out = runner.run(resumed, reqs, store, batch_size=2, progress=False)
    assert resumed.seen == [["r4", "r5"], ["r6"]]
    assert list(out["cached"]) == [True] * 4 + [False] * 3
    assert out["error"].isna().all() and out["processed_image_sizes"].notna().all()
    full = runner.run(hf, reqs, tmp_path / "fresh.jsonl", batch_size=7, progress=False)
    assert list(full["text"]) == list(out["text"])  # resuming gives what one uninterrupted run gives


def test_results_are_matched_to_requests_by_id_not_position(tmp_path):
    from vlamb_nb import runner
    from vlamb_nb.models.base import Generation, ModelInfo, Request, user_message

    class Reversed:
        info = ModelInfo("rev", backend="scripted")

        def generate(self, requests):
            return [Generation(request_id=r.id, text=f"answer to {r.id}") for r in reversed(requests)]

    class Lost(Reversed):
        def generate(self, requests):
            return [Generation(request_id="x", text="?") for _ in requests]

    reqs = [Request(id=f"q{i}", messages=[user_message(f"question {i}")]) for i in range(4)]
    out = runner.run(Reversed(), reqs, tmp_path / "s.jsonl", batch_size=4, progress=False)
    assert out["text"].tolist() == [f"answer to q{i}" for i in range(4)]
    lost = runner.run(Lost(), reqs, None, batch_size=4, progress=False)
    assert lost["error"].notna().all() and lost["text"].fillna("").eq("").all()
