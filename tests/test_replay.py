"""The replay backend: recorded real outputs answer requests, through Python, the CLI and the HTTP path."""

from __future__ import annotations

import json

import pytest

from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.models import load_model
from vlamb_nb.models.base import Request, assistant_message, user_message
from vlamb_nb.models.replay import ReplayModel, read_recording


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _req(item, text, setting="direct", turns=()):
    msgs = [user_message(text)]
    for answer, follow in turns:
        msgs += [assistant_message(answer), user_message(follow)]
    return Request(id=f"{item}::{setting}", messages=msgs, setting=setting, meta={"item_id": item})


def test_answers_by_item_setting_and_depth(tmp_path):
    rec = _write(tmp_path / "r.jsonl", [
        {"item_id": "1", "setting": "direct", "depth": 0, "text": "first", "model": "M"},
        {"item_id": "1", "setting": "direct", "depth": 1, "text": "after repair", "model": "M"},
        {"item_id": "1", "setting": "cot", "turn": 0, "text": "cot answer", "model": "M"},  # the old spelling
        {"prompt": "what is it?", "text": "by prompt", "model": "M"},
    ])
    m = load_model(f"replay:{rec}")
    assert m.info.model_id == "M" and m.info.backend == "replay"
    gens = m.generate([_req("1", "q"), _req("1", "q", "cot"), _req("1", "q", "direct:repair", [("first", "fix it")]),
                       _req("9", "what is it?"), _req("9", "unknown")])
    assert [g.text for g in gens[:4]] == ["first", "cot answer", "after repair", "by prompt"]
    assert gens[4].error.startswith("ReplayMissing: no recorded answer for item '9'")
    assert all(g.error is None for g in gens[:4])


def test_a_store_given_as_a_recording_and_a_bad_depth_are_refused_in_one_line(tmp_path):
    """A prediction store's records name their turn (``answer``, ``repair``); a recording counts its chat's depth.
    Either mistake is one line naming the file and the row, never a ValueError from deep inside."""
    store = _write(tmp_path / "store.jsonl", [{"item_id": "1", "turn": "answer", "text": "x",
                                               "request_id": "1::direct", "model": {"model_id": "M"}}])
    with pytest.raises(DataError, match="turn 'answer' names a step of a run") as e:
        read_recording(store)
    assert "store.jsonl" in str(e.value) and "row 1" in str(e.value) and "\n" not in str(e.value)
    for bad in (-1, 1.5, True, "one"):
        with pytest.raises(DataError, match="depth must be a whole number"):
            read_recording(_write(tmp_path / "d.jsonl", [{"item_id": "1", "depth": bad, "text": "x"}]))
    assert [r["depth"] for r in read_recording(_write(tmp_path / "ok.jsonl", [
        {"item_id": "1", "depth": "1", "text": "x"}, {"item_id": "2", "turn": 2, "text": "y"},
        {"item_id": "3", "text": "z"}]))] == [1, 2, 0]


def test_bad_recordings_are_clear_errors(tmp_path):
    with pytest.raises(DataError, match="needs a string 'text'"):
        read_recording(_write(tmp_path / "a.jsonl", [{"item_id": "1"}]))
    with pytest.raises(DataError, match="needs 'item_id' or 'prompt'"):
        read_recording(_write(tmp_path / "b.jsonl", [{"text": "x"}]))
    with pytest.raises(DataError, match="holds no answers"):
        read_recording(_write(tmp_path / "c.jsonl", []))
    (tmp_path / "d.jsonl").write_text('{"item_id": 1, "text": "x"}\n{oops\n')
    with pytest.raises(DataError, match=r"d.jsonl.*row 2|line 2"):
        read_recording(tmp_path / "d.jsonl")
    with pytest.raises(DataError, match="two different recorded answers"):
        ReplayModel(read_recording(_write(tmp_path / "e.jsonl", [{"item_id": "1", "text": "a"},
                                                                {"item_id": "1", "text": "b"}])))
    mixed = read_recording(_write(tmp_path / "f.jsonl", [{"item_id": "1", "text": "a", "model": "A"},
                                                        {"item_id": "1", "text": "b", "model": "B"}]))
    with pytest.raises(SettingError, match="mixes models"):
        ReplayModel(mixed)
    assert ReplayModel(mixed, model_id="B").generate([_req("1", "q", "")])[0].text == "b"


def test_served_replay_drives_the_openai_client_end_to_end(tmp_path, monkeypatch):
    from vlamb_nb.models.openai_compat import OpenAIModel
    from vlamb_nb.models.serve import serve

    rec = _write(tmp_path / "r.jsonl", [{"prompt": "Where is the dog?", "text": "[1, 2, 3, 4]", "model": "M"},
                                        {"prompt": "Where is the dog?", "depth": 1, "text": "[5, 6, 7, 8]", "model": "M"}])
    with serve(load_model(f"replay:{rec}"), lifetime=60) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "unused")
        client = OpenAIModel("M", base_url=server.base_url, max_retries=0)
        first = Request(id="a", messages=[user_message("Where is the dog?")])
        second = Request(id="b", messages=[user_message("Where is the dog?"), assistant_message("no idea"),
                                           user_message("Answer again.")])
        missing = Request(id="c", messages=[user_message("Something else")])
        gens = client.generate([first, second, missing])
    assert [g.text for g in gens[:2]] == ["[1, 2, 3, 4]", "[5, 6, 7, 8]"]
    assert gens[2].error and "ReplayMissing" in gens[2].error


def test_cli_run_with_a_recording_and_an_empty_one_fails_loudly(tmp_path, shared_data, capsys):
    from vlamb_nb import cli

    demo = shared_data / "refadv" / "demo"
    rec = _write(tmp_path / "none.jsonl", [{"item_id": "no-such-item", "text": "x", "model": "M"}])
    code = cli.main(["run", "refadv", "--model", f"replay:{rec}", "--source", str(demo), "--setting", "direct",
                     "--out", str(tmp_path / "out.jsonl"), "--limit", "3"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_RUN_FAILED and "ReplayMissing" in err
    code = cli.main(["run", "refadv", "--model", f"replay:{rec}", "--quant", "8bit", "--source", str(demo),
                     "--out", str(tmp_path / "o2.jsonl")])
    assert code == cli.EXIT_ERROR and "does not apply to replay: models" in capsys.readouterr().err
