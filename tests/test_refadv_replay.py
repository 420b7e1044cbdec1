"""Official Ref-Adv outputs replayed through the real path give the official per-row hits.

For each official run, what the model answered on the 31 demo images is rebuilt from the released prediction
file in the model's own coordinate format (``pred_box_expected_format``); where the official run needed the
repair turn, the first answer is a failed one and the box comes after the repair. The recording then answers
requests through ``replay:FILE`` (Python and ``vlamb-nb run``) and through an OpenAI-compatible server
(``openai:`` client over HTTP), and the package's requests → parse → repair → score must hit exactly the rows
the official evaluation hit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vlamb_nb import cli
from vlamb_nb.benchmarks.refadv import data, release
from vlamb_nb.benchmarks.refadv.benchmark import RefAdv
from vlamb_nb.models import load_model
from vlamb_nb.models.base import ModelInfo

pytestmark = pytest.mark.shared

RUNS = {"qwen25a72b_direct": "abs_xyxy", "qwen3a8bthinking_direct": "norm_1000_xyxy"}


def _recording(shared_data, run: str, tmp_path: Path, *, with_prompts: bool = False):
    """The package's recording of a released run (``release.recording``) and, read straight from the released
    file, the official hit of every demo row."""
    items = data.load_demo(shared_data / "refadv" / "demo")
    path = shared_data / "refadv" / "predictions" / f"{run}_predictions.jsonl"
    preds = {json.loads(line)["row_idx"]: json.loads(line) for line in path.read_text().splitlines()}
    official = {str(item["id"]): bool(preds[int(item["row_idx"])]["first_hit"]) for _, item in items.iterrows()}
    model = next(iter(preds.values()))["model_full_name"]
    lines = release.recording(path, items)
    assert {r["model"] for r in lines} == {model} and len({r["item_id"] for r in lines}) == len(items)
    if with_prompts:  # what an HTTP request still carries: the first user turn's text
        info = ModelInfo(model, backend="openai")
        prompts = {req.meta["item_id"]: next(p["text"] for p in req.messages[0]["content"] if p["type"] == "text")
                   for req in RefAdv().requests(items, "direct", model=info)}
        lines = [dict(r, prompt=prompts[r["item_id"]]) for r in lines]
    out = tmp_path / f"{run}.jsonl"
    out.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return items, out, official, model


@pytest.mark.parametrize("run", sorted(RUNS))
def test_replayed_official_outputs_give_the_official_hits_row_by_row(shared_data, tmp_path, run):
    items, rec, official, _ = _recording(shared_data, run, tmp_path)
    store = tmp_path / "replayed.jsonl"
    scored = RefAdv().evaluate(load_model(f"replay:{rec}"), items, "direct", progress=False, store=store)
    assert set(scored["box_format"]) == {RUNS[run]}
    got = dict(zip(scored["id"].astype(str), scored["hit"].astype(bool), strict=True))
    assert got == official
    assert int(scored["retry_used"].sum()) > 0 or run == "qwen25a72b_direct"
    # the stored run (answers and repair turns) scores to the same official hits, with the style it ran with
    again = RefAdv().score_store(store, items)
    assert dict(zip(again["id"].astype(str), again["hit"].astype(bool), strict=True)) == official
    assert set(again["box_format"]) == {RUNS[run]} and again["retry_used"].sum() == scored["retry_used"].sum()


def test_replay_through_the_family_table_reads_qwen25_as_pixels(shared_data, tmp_path):
    items, rec, official, model = _recording(shared_data, "qwen25a72b_direct", tmp_path)
    replay = load_model(f"replay:{rec}", family="qwen2_5_vl")
    assert replay.info.family == "qwen2_5_vl"
    scored = RefAdv().evaluate(replay, items, "direct", progress=False)
    assert dict(zip(scored["id"].astype(str), scored["hit"].astype(bool), strict=True)) == official


@pytest.mark.parametrize("run", sorted(RUNS))
def test_served_recording_through_the_openai_client_gives_the_official_hits(shared_data, tmp_path, monkeypatch,
                                                                            run):
    from vlamb_nb.models.openai_compat import OpenAIModel
    from vlamb_nb.models.serve import serve

    items, rec, official, model = _recording(shared_data, run, tmp_path, with_prompts=True)
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    with serve(load_model(f"replay:{rec}"), lifetime=120, model_name=model) as server:
        client = OpenAIModel(model, base_url=server.base_url, max_retries=0)
        scored = RefAdv().evaluate(client, items, "direct", progress=False, store=tmp_path / "served.jsonl")
    assert set(scored["box_format"]) == {RUNS[run]}
    assert dict(zip(scored["id"].astype(str), scored["hit"].astype(bool), strict=True)) == official


def test_cli_run_on_a_recording_then_score_the_store(shared_data, tmp_path, capsys):
    items, rec, official, _ = _recording(shared_data, "qwen3a8bthinking_direct", tmp_path)
    demo = shared_data / "refadv" / "demo"
    out = tmp_path / "store.jsonl"
    assert cli.main(["run", "refadv", "--model", f"replay:{rec}", "--source", str(demo), "--setting", "direct",
                     "--out", str(out)]) == 0
    capsys.readouterr()
    assert cli.main(["score", "refadv", "--predictions", str(out), "--source", str(demo), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["metrics"]["Acc@0.5"] == round(100 * sum(official.values()) / len(official), 2)
    assert round(res["metrics"]["Acc@0.5"], 1) == 29.0
