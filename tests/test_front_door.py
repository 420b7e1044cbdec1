"""The front door end to end: a served model through every paper with one command, and the report card.

A local OpenAI-compatible server (127.0.0.1, stopped after the test: ``chat_endpoint.ChatEndpoint``) answers every request in the shape its
benchmark expects — a letter for VAGUE and MUCAR, a label with an explanation for V-FLUTE, a JSON box for Ref-Adv,
a free answer for RACQUET and a class for its judge — and logs what it was asked. ``vlamb-nb reproduce -p
model=openai:NAME -p base_url=...`` must send every model-running notebook's requests to that server under the
``paper`` profile, skip the notebooks that need the weights with the reason, and open ``report.md`` with a card
that names the model.
"""

from __future__ import annotations

import json

import hubstub
import pytest
import release_fixtures as rf
from chat_endpoint import ChatEndpoint

from vlamb_nb import cli
from vlamb_nb.benchmarks import PAPERS, needs_weights, notebooks

pytestmark = pytest.mark.slow

stand_in_hub = hubstub.stand_in_hub
static_server = hubstub.static_server

NAME = "acme/vlm-7b"


def answer(prompt: str) -> str:
    """What the served model says, by the benchmark the prompt comes from."""
    t = prompt.lower()
    if "class a, class b or class c" in t:  # RACQUET's A/B/C judge
        return "The response names one person and says which. CLASS B"
    if "yes" in t and "no" in t and "referent" in t:  # RACQUET's CoT YES/NO judge
        return "YES"
    if "list every descriptor" in t:
        return '["red"]'
    if "rewrite the referring expression" in t:
        return "the object"
    if "bbox" in t or "bounding box" in t:
        return '[{"bbox_2d": [10, 10, 60, 60], "label": "target"}]'
    if "directly select the correct option" in t or "pilih terus" in t or "直接选择" in t:
        return "Answer: A"
    if "entailment or contradiction" in t or "entail" in t:
        return "The picture shows a bright sky, so the claim holds.\nLabel: Entailment"
    if "describe the provided image" in t:
        return "Two people stand in a kitchen; one holds a cup."
    if "(a)" in t or "\na." in t or "a)" in t:
        return "A"
    return "The person on the left is wearing a red shirt."


def test_the_answers_have_each_benchmarks_shape():
    """The fake model answers the way each paper's parser reads (so the test below can fail only on plumbing)."""
    from vlamb_nb import get_benchmark

    assert get_benchmark("mucar").parse(answer("Directly select the correct option (A, B)"),
                                        {"options": ["x", "y"], "setting": "full"})["letter"] == "A"
    assert get_benchmark("vflute").parse(answer("entailment or contradiction?"), {})["label_pred"] == 1
    assert json.loads(answer("Report bbox coordinates in JSON format."))[0]["bbox_2d"] == [10, 10, 60, 60]


@pytest.mark.shared
def test_one_command_runs_a_served_model_through_every_paper_and_writes_the_report_card(
        tmp_path, monkeypatch, stand_in_hub, static_server, shared_data):
    from vlamb_nb.releases import fetch

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    # every paper's release, fetched from the stand-ins as a user fetches it from the hub and the release URLs
    monkeypatch.setenv("VLAMB_DATA", str(tmp_path / "data-home"))
    monkeypatch.setenv("VLAMB_MIRRORS", rf.serve_releases(stand_in_hub, static_server))
    revisions = {p.name: fetch(p.name, token=stand_in_hub.token, models=False, progress=False)["revision"]
                 for p in PAPERS}
    with ChatEndpoint(answer) as server:
        code = cli.main(["reproduce", "--run-id", "served", "--runs-dir", str(tmp_path / "runs"),
                         "-p", f"model=openai:{NAME}", "-p", f"base_url={server.base_url}", "-p", "limit=3",
                         "-p", "concurrency=8",
                         # the paper's metric models are downloads: the offline substitutes, each a recorded deviation
                         "-p", "vague.settings=lm,sm,vlm", "-p", "vflute.scorer=minilm", "-p", "racquet.grounder=tiny",
                         "-p", "racquet.n_samples=2",
                         # this test follows the model's answers to the card, not the intervals' width
                         *(a for nb in ("mucar", "vflute", "refadv", "racquet") for a in ("-p", f"{nb}.n_resamples=200"))])
    run = tmp_path / "runs" / "served"
    results = json.loads((run / "results.json").read_text())
    assert code == 0, {k: v["error"] for k, v in results.items() if v["error"]}
    model_notebooks = [nb for nb in notebooks() if not needs_weights(nb)]
    for nb in notebooks():
        r = results[nb]
        if needs_weights(nb):  # QLoRA training and saliency need the weights a server does not give
            assert r["skipped"] and "needs the model's weights" in r["skipped"], nb
            continue
        assert r["ok"], (nb, r["error"])
        assert r["parameters"]["model"] == f"openai:{NAME}" and r["parameters"]["base_url"] == server.base_url
        sent = [g for g in r["generations"] if g["model"] == f"openai:{NAME}"]
        assert sent and sum(g["requests"] for g in sent) > 0, f"{nb} sent no request to the server"
        assert sum(g["failed"] for g in r["generations"]) == 0, (nb, r["generations"])
    # the answers came from this server: it was asked, under the model's name (and the judge's)
    assert {e["model"] for e in server.log} == {NAME, "meta-llama/Meta-Llama-3-70B-Instruct"}
    assert {e["path"] for e in server.log} == {"/v1/chat/completions"}
    # the report card: every paper, under the paper profile, naming the model
    heads = [h for nb in model_notebooks for h in results[nb]["results"].get("headline", [])]
    assert {h["paper"] for h in heads} == {p.name for p in PAPERS}
    assert {h["profile"] for h in heads} == {"paper"} and {h["model"] for h in heads} == {f"openai:{NAME}"}
    # every row stands on the fetched release, at its revision, and says how much of it the run asked
    for h in heads:
        assert h["data"]["kind"] == "release" and h["data"]["revision"] == revisions[h["paper"]], h
        assert h["data"]["n_run"] == 3 < h["data"]["n_items"], h
    report = (run / "report.md").read_text()
    assert report.startswith(f"# Report card: openai:{NAME} (paper profile)")
    assert "PIPELINE DEMO" not in report.split("# Reproduction report")[0]
    assert f"hub:dddraxxx/ref-adv-s@{revisions['refadv'][:7]} · 3 of 1,142" in report
    assert "on a subset: 3 of 1,142 items" in report
    assert (run / "figures" / "card" / "report_card.png").is_file()
    assert not (run / "figures" / "card" / "demo").exists()


def test_a_parameter_no_selected_notebook_declares_is_an_error_naming_them(tmp_path):
    from vlamb_nb.errors import SettingError
    from vlamb_nb.reproduce import reproduce

    with pytest.raises(SettingError, match=r"declared by none of the notebooks being run \(vague, refadv\)"):
        reproduce(["vague", "refadv"], params={"temperature": 0.3}, out_dir=tmp_path, quiet=True)


def test_an_old_parameter_name_is_translated_with_a_warning(capsys):
    from vlamb_nb.reproduce import split_parameters

    with pytest.warns(DeprecationWarning) as caught:
        glob, per = split_parameters({"model_spec": "x", "mucar.n_demo": 3}, ["mucar"])
    assert sorted(str(w.message) for w in caught) == [
        "notebook parameter 'model_spec' is deprecated; use 'model'",
        "notebook parameter 'n_demo' is deprecated; use 'limit'"]
    assert glob == {"model": "x"} and per == {"mucar": {"limit": 3}}
    assert "deprecated" in capsys.readouterr().out
