"""Text-only causal LMs (LLM judges) through HFModel: detection, tiny Llama-3-style checkpoint, judge run."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from vlamb_nb.cli import main
from vlamb_nb.errors import SettingError
from vlamb_nb.models import IMAGE_SLOT, DecodingParams, Request, load_model, system_message, user_message
from vlamb_nb.models import tiny as T
from vlamb_nb.models.families import FAMILIES, TEXT_FAMILIES, family_for_config
from vlamb_nb.models.hf import _apply_quirks
from vlamb_nb.runner import default_run_meta

#: the family rows by name
FAMILY = {f.name: f for f in (*FAMILIES, *TEXT_FAMILIES)}

_CACHE: dict[str | None, object] = {}


def text_lm(quantization: str | None):
    """Load once per test run: loading is the slow part."""
    if quantization not in _CACHE:
        _CACHE[quantization] = load_model("tiny:llama_text", quantization=quantization)
    return _CACHE[quantization]


def _image():
    from PIL import Image

    return Image.fromarray(np.random.default_rng(0).integers(0, 255, (40, 60, 3), dtype=np.uint8))


def _requests(n: int = 4, max_new_tokens: int = 6) -> list[Request]:
    params = DecodingParams(max_new_tokens=max_new_tokens)
    return [Request(id=f"t{i}", params=params,
                    messages=[system_message("You are a strict judge."),
                              user_message("Does the answer name one referent?" + " Explain." * i)])
            for i in range(n)]


def _image_request(rid: str = "img") -> Request:
    return Request(id=rid, messages=[user_message(IMAGE_SLOT, "What is this?")], images=[_image()],
                   params=DecodingParams(max_new_tokens=6))


# -- detection and prompt quirks (fast) --------------------------------------------------------------
def test_text_only_configs_are_detected_from_the_config():
    from transformers import (
        GemmaConfig,
        LlamaConfig,
        LlavaConfig,
        MllamaConfig,
        PretrainedConfig,
        Qwen2_5_VLConfig,
        Qwen2Config,
    )

    assert family_for_config(LlamaConfig()).name == "text"
    assert family_for_config(Qwen2Config()).name == "text"
    assert family_for_config(GemmaConfig()).name == "text_gemma"
    # vision-language configs keep their own rows, even those whose text part is a Llama
    assert family_for_config(LlavaConfig()).name == "llava"
    assert family_for_config(MllamaConfig()).name == "mllama"
    assert family_for_config(Qwen2_5_VLConfig()).name == "qwen2_5_vl"
    # types outside the table: a causal-LM architecture without a vision part is a text LM ...
    unknown_lm = PretrainedConfig(architectures=["NovelForCausalLM"])
    unknown_lm.model_type = "novel_lm"
    assert family_for_config(unknown_lm).name == "text"
    # ... but anything with a vision part, or a non-LM head, stays the generic VLM row
    with_vision = PretrainedConfig(architectures=["NovelForCausalLM"], vision_config={"hidden_size": 64})
    with_vision.model_type = "novel_vlm"
    assert family_for_config(with_vision).name == "generic"
    other_head = PretrainedConfig(architectures=["NovelForConditionalGeneration"])
    other_head.model_type = "novel_vlm"
    assert family_for_config(other_head).name == "generic"
    text = FAMILY["text"]
    assert text.auto_model == "AutoModelForCausalLM" and not text.accepts_images
    assert FAMILY["llava"].auto_model == "AutoModelForImageTextToText" and FAMILY["llava"].accepts_images


def test_text_quirks_give_string_content_and_merge_gemma_system():
    msgs = [system_message("Be brief."), user_message("Question?", " More.")]
    flat = _apply_quirks(msgs, FAMILY["text"])
    assert flat == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Question? More."}]
    merged = _apply_quirks(msgs, FAMILY["text_gemma"])
    assert merged == [{"role": "user", "content": "Be brief.\n\nQuestion? More."}]
    assert msgs[1]["content"][0] == {"type": "text", "text": "Question?"}  # the request is never mutated


def test_unknown_tiny_family_lists_the_text_family(tmp_path):
    with pytest.raises(SettingError, match="llama_text"):
        T.build_tiny("gpt2", tmp_path / "x")


# -- the tiny Llama-3-style checkpoint -----------------------------------------------------------------
@pytest.mark.slow
def test_build_writes_a_text_lm_in_the_hub_layout(tmp_path):
    from transformers import AutoConfig, AutoTokenizer

    out = T.build_tiny("llama_text", tmp_path / "llama", seed=2)
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "generation_config.json"} <= names
    assert "processor_config.json" not in names and "preprocessor_config.json" not in names  # text only
    cfg = AutoConfig.from_pretrained(out)
    assert cfg.model_type == "llama" and cfg.architectures == ["LlamaForCausalLM"]
    assert not hasattr(cfg, "vision_config")
    assert cfg.hidden_size % 64 == 0 and cfg.vocab_size == T.VOCAB_SIZE
    tok = AutoTokenizer.from_pretrained(out)
    assert len(tok) == T.VOCAB_SIZE and tok.pad_token is None  # like the released Llama-3 tokenizer
    gen = json.loads((out / "generation_config.json").read_text())
    eot, eos = tok.convert_tokens_to_ids("<|eot_id|>"), tok.convert_tokens_to_ids("<|end_of_text|>")
    assert sorted(gen["eos_token_id"]) == sorted([eot, eos])
    prompt = tok.apply_chat_template([{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}],
                                     tokenize=False, add_generation_prompt=True)
    assert prompt == ("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>"
                      "<|start_header_id|>user<|end_header_id|>\n\nQ<|eot_id|>"
                      "<|start_header_id|>assistant<|end_header_id|>\n\n")
    text = "Ünïcødé ✓ CLASS B"
    ids = tok(text)["input_ids"]
    assert ids[0] == tok.bos_token_id  # plain encoding adds BOS, as the hub tokenizer does
    assert tok.decode(ids, skip_special_tokens=True) == text


@pytest.mark.slow
@pytest.mark.parametrize("quantization", ["4bit", "8bit", None])
def test_load_and_generate_text_only(quantization):
    import bitsandbytes as bnb

    m = text_lm(quantization)
    assert m.info.model_id == "tiny:llama_text" and m.info.family == "text" and m.info.backend == "hf"
    assert m.info.quantization == quantization
    assert type(m.model).__name__ == "LlamaForCausalLM"
    assert any(isinstance(x, bnb.nn.Linear4bit) for x in m.model.modules()) == (quantization == "4bit")
    assert any(isinstance(x, bnb.nn.Linear8bitLt) for x in m.model.modules()) == (quantization == "8bit")
    devs = default_run_meta(m)["deviations"]  # what a run no benchmark describes stores: the one builder's words
    assert [(d["what"], d["paper"], d["ours"]) for d in devs] == (
        [("quantization", "full/half precision weights", quantization)] if quantization else [])
    reqs = _requests()
    gens = m.generate(reqs)
    assert [g.request_id for g in gens] == [r.id for r in reqs]
    for g in gens:
        assert g.error is None, g.error
        assert g.finish_reason in ("stop", "length") and 1 <= g.completion_tokens <= 6
        assert g.image_sizes is None and g.processed_image_sizes is None
    assert [g.prompt_tokens for g in gens] == sorted({g.prompt_tokens for g in gens})  # longer prompts, more tokens
    # the template writes BOS; the tokenizer must not add a second one
    batch = m.prepare(reqs)
    bos = m.tokenizer.bos_token_id
    for row, mask in zip(batch["input_ids"].tolist(), batch["attention_mask"].tolist(), strict=True):
        real = [t for t, k in zip(row, mask, strict=True) if k]
        assert real[0] == bos and real.count(bos) == 1
    assert set(batch) == {"input_ids", "attention_mask"}
    assert m.tokenizer.padding_side == "left" and m.tokenizer.pad_token_id is not None


@pytest.mark.slow
@pytest.mark.parametrize("quantization", ["4bit", None])
def test_batched_equals_one_at_a_time(quantization):
    m = text_lm(quantization)
    reqs = _requests(n=5)
    batched = [g.text for g in m.generate(reqs)]
    single = [m.generate([r])[0].text for r in reqs]
    assert batched == single
    assert len(set(batched)) > 1  # different prompts give different outputs


@pytest.mark.slow
def test_image_requests_fail_per_item_with_a_clear_error():
    m = text_lm("4bit")
    reqs = _requests(n=3)
    reqs.insert(1, _image_request())
    gens = m.generate(reqs)
    assert [g.request_id for g in gens] == [r.id for r in reqs]
    bad = gens[1]
    assert bad.finish_reason == "error" and "text-only" in bad.error and "1 image" in bad.error
    assert all(g.error is None and g.finish_reason in ("stop", "length") for i, g in enumerate(gens) if i != 1)
    with pytest.raises(SettingError, match="text-only"):
        m.score_options(_image_request(), ["A", "B"])
    with pytest.raises(SettingError, match="text-only"):
        m.prompt(_image_request())


@pytest.mark.slow
def test_runner_counts_image_requests_as_failures(tmp_path):
    from vlamb_nb import runner

    m = text_lm(None)
    reqs = [*_requests(n=3), _image_request("img-a"), _image_request("img-b")]
    df = runner.run(m, reqs, tmp_path / "store.jsonl", batch_size=2, progress=False)
    assert len(df) == 5
    failed = df[df["error"].notna()]
    assert sorted(failed["request_id"]) == ["img-a", "img-b"]
    assert failed["error"].str.contains("text-only").all()


@pytest.mark.slow
@pytest.mark.parametrize("quantization", ["4bit", None])
def test_score_options_agrees_with_greedy_first_token(quantization):
    m = text_lm(quantization)
    tok = m.tokenizer
    for req in _requests(n=4, max_new_tokens=1):
        first = m.generate([req])[0].text
        if not first or len(tok(first, add_special_tokens=False)["input_ids"]) != 1:
            continue  # a byte fragment or special token: no single-token option spells it
        others = [o for o in ("A", "B", "C", "YES", "NO") if o != first]
        scores = m.score_options(req, [first, *others])
        assert all(math.isfinite(s) and s <= 0 for s in scores)
        assert scores[0] == max(scores)
        with_options = Request(id="mcq", messages=req.messages, options=[first, *others[:2]],
                               params=DecodingParams(max_new_tokens=2))
        g = m.generate([with_options])[0]
        assert g.option_logprobs == pytest.approx(scores[:3], abs=1e-4)
        return
    pytest.fail("no request produced a single-token first answer to compare against")


@pytest.mark.slow
def test_cli_make_tiny_model_text(tmp_path, capsys):
    assert main(["make-tiny-model", "llama_text", str(tmp_path / "judge"), "--seed", "1"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "judge")
    cfg = json.loads((tmp_path / "judge" / "config.json").read_text())
    assert cfg["model_type"] == "llama" and cfg["architectures"] == ["LlamaForCausalLM"]
    m = load_model(str(tmp_path / "judge"))  # a local folder takes the same path as a hub id
    assert m.info.family == "text" and m.generate(_requests(n=1))[0].error is None


# -- end to end: the RACQUET A/B/C judge on a tiny text LM ---------------------------------------------
class _Counting:
    """Wraps a model and counts how many requests reach it (a resumed run must make none)."""

    def __init__(self, model) -> None:
        self.model, self.info, self.calls = model, model.info, 0

    def generate(self, requests):
        self.calls += len(requests)
        return self.model.generate(requests)

    def score_options(self, request, options):
        return self.model.score_options(request, options)


@pytest.mark.slow
def test_racquet_judge_runs_on_a_tiny_text_lm(tmp_path):
    from vlamb_nb.benchmarks.racquet import prompts as P
    from vlamb_nb.benchmarks.racquet.benchmark import BENCHMARK
    from vlamb_nb.models import ScriptedModel
    from vlamb_nb.scorers import judge as J

    bench = BENCHMARK
    items = bench.load(bench.make_sample(tmp_path / "data", n=4, seed=0))
    answers = {0: "The man on the left is holding it.", 1: "", 2: "Which one do you mean?"}
    vlm = ScriptedModel(lambda r: answers[int(r.id.split("::")[0].split("-")[-1]) % 3], model_id="vlm")
    preds = bench.predictions(items, bench.run(vlm, items, "direct", store=tmp_path / "vlm.jsonl", progress=False))
    general = preds[preds["subset"] == "general"]
    n_empty = int((general["text"].fillna("").str.strip() == "").sum())
    assert 0 < n_empty < len(general)

    judge = _Counting(text_lm("4bit"))
    store = tmp_path / "judge.jsonl"
    judged_all = bench.judge(judge, preds, store=store, max_new_tokens=8, batch_size=2, progress=False)
    # every row comes back (BIAS rows unlabelled, for the hand annotator); only GENERAL rows were judged
    assert len(judged_all) == len(preds) and judge.calls == len(general) - n_empty
    judged = judged_all[judged_all["subset"] == "general"]
    assert (judged["judge_model"] == "tiny:llama_text").all()
    summary = J.parse_summary(judged)
    assert summary["n"] == len(general) and summary["generation_failed"] == 0
    assert summary["parsed"] + summary["unparsed"] == summary["n"]
    assert summary["unparsed"] >= n_empty
    # garbage output from random weights is kept and counted as unparsed, never dropped or crashing
    judged_rows = judged[judged["judge_parse_error"] != "no response: empty"]
    assert len(judged_rows) == len(general) - n_empty
    assert judged_rows["judge_text"].map(lambda t: isinstance(t, str)).all()
    assert judged_rows["judge_error"].isna().all()
    # the judge saw the paper's prompt, filled with the question and the response, through the Llama-3 template
    line = json.loads(store.read_text().splitlines()[-1]) if store.read_text().strip() else {}
    assert line, "the judge store is empty"
    spec = P.judge_spec("abc", max_new_tokens=8)
    row = judged_rows.iloc[0]
    req = J.judge_requests(spec, judged_rows.iloc[:1], id_column="request_id",
                           field_map={"question": "question_asked", "response": "response"})[0]
    prompt = judge.model.prompt(req)
    assert spec.prompt(question=row["question_asked"], response=row["response"]).strip() in prompt
    assert prompt.startswith("<|begin_of_text|><|start_header_id|>user<|end_header_id|>")
    # scoring: unlabelled rows stay in the denominators
    scored = bench.score(judged)
    assert scored["label"].isna().sum() == summary["unparsed"]
    shares = bench.tables(scored)["class_shares"]
    assert shares["count"].sum() == len(general)
    # a rerun resumes from the store: no model calls
    before = judge.calls
    again = bench.judge(judge, preds, store=store, max_new_tokens=8, batch_size=2, progress=False)
    again = again[again["subset"] == "general"]
    assert judge.calls == before
    assert again["judge_text"].tolist() == judged["judge_text"].tolist()


@pytest.mark.slow
def test_text_lm_over_http_matches_direct_calls():
    """The same judge served as an OpenAI-compatible endpoint (as a vLLM server would) gives the same text."""
    from vlamb_nb import runner
    from vlamb_nb.models.serve import ChatServer

    hf = text_lm("4bit")
    reqs = [*_requests(n=3), _image_request()]
    with ChatServer(hf).start(lifetime=120) as srv:
        client = load_model("openai:tiny-judge", base_url=srv.base_url, concurrency=2, backoff=0.01, max_retries=1)
        over_http = runner.run(client, reqs, None, batch_size=4, progress=False)
    direct = [hf.generate([r])[0] for r in reqs]
    assert list(over_http["text"])[:3] == [g.text for g in direct[:3]]
    assert over_http["error"].iloc[:3].isna().all()
    assert "text-only" in over_http["error"].iloc[3] and "text-only" in direct[3].error  # counted, not a crash
    assert "400" in over_http["error"].iloc[3]  # the client's fault: answered 400, so never retried
