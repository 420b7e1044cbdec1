"""Bad input gets a clear error naming the file (and line or field) — never a raw traceback, never silence.

One table of hostile cases across the loaders and scorers; each case writes its bad file and states the error
type and the words the message must contain.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import fixtures_stored as F
import pytest

from vlamb_nb import get_benchmark
from vlamb_nb.errors import DataError, ImageError, StoreError, VlambError


def _write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def _racquet_empty(tmp: Path):
    get_benchmark("racquet").load(_write(tmp / "racquet_general.jsonl", "\n\n"))


def _racquet_non_utf8(tmp: Path):
    good = json.dumps({"id": 0, "image_url": "http://x/a.jpg", "question": "What is it?", "question_idx": 1})
    get_benchmark("racquet").load(_write(tmp / "racquet_general.jsonl", good.encode() + b"\n\xff\xfe{}\n"))


def _racquet_bad_json_line(tmp: Path):
    good = json.dumps({"id": 0, "image_url": "http://x/a.jpg", "question": "What is it?", "question_idx": 1})
    get_benchmark("racquet").load(_write(tmp / "racquet_general.jsonl", good + "\n{not json\n"))


def _vflute_empty_csv(tmp: Path):
    get_benchmark("vflute").load(_write(tmp / "vflute-v2-test.csv", ""))


def _vflute_predictions_empty_csv(tmp: Path):
    bench = get_benchmark("vflute")
    folder = bench.make_sample(tmp / "d", n=4, seed=0)
    bench.score_file(_write(tmp / "p.csv", ""), source=folder, scorer="none", ci=False)


def _vague_non_utf8_json(tmp: Path):
    get_benchmark("vague").score_file(_write(tmp / "m_VLM_mcq.json", b'{"a": "\xff"}'))


def _vague_truncated_json(tmp: Path):
    get_benchmark("vague").score_file(_write(tmp / "m_VLM_mcq.json", '{"a_annot.jpg": {"model_output": "A"'))


def _refadv_demo_not_a_list(tmp: Path):
    get_benchmark("refadv").load(_write(tmp / "demo" / "demo_samples.json", '{"image": "x"}'))


def _mucar_partial_predictions_without_source(tmp: Path, shared: Path | None):
    if shared is None or not (shared / "mucar").is_dir():
        pytest.skip("the MUCAR release is not beside the checkout")
    bench = get_benchmark("mucar")
    items = bench.load(None)
    uid = str(items["uid"].iloc[0])
    bench.score_file(_write(tmp / "p.jsonl", json.dumps({"id": uid, "output": "Answer: A"}) + "\n"))


def _corrupt_image(tmp: Path):
    from vlamb_nb.images import load_image

    load_image(_write(tmp / "broken.jpg", b"\xff\xd8\xff\xe0 not really a jpeg"))


def _image_of_the_wrong_size(tmp: Path):
    from PIL import Image

    from vlamb_nb.images import load_image

    Image.new("RGB", (64, 48)).save(tmp / "small.png")
    load_image(tmp / "small.png", expect_size=(640, 480))


def _with_byte(data: bytes, line: int, byte: bytes = b"\xff") -> bytes:
    """``data`` with ``byte`` put in the middle of its ``line``-th line (1-based)."""
    lines = data.split(b"\n")
    half = len(lines[line - 1]) // 2
    lines[line - 1] = lines[line - 1][:half] + byte + lines[line - 1][half:]
    return b"\n".join(lines)


def _mucar_non_utf8(tmp: Path):
    bench = get_benchmark("mucar")
    src = bench.make_sample(tmp / "d", n=2, seed=0)
    src.write_bytes(_with_byte(src.read_bytes(), 3))
    bench.load(src)


def _mucar_predictions_non_utf8(tmp: Path):
    bench = get_benchmark("mucar")
    src = bench.make_sample(tmp / "d", n=2, seed=0)
    bench.score_file(_write(tmp / "p.json", b'{\n"mucar-0": "Answer: A\xff"\n}'), source=src, n_resamples=0)


def _refadv_official_non_utf8(tmp: Path):
    rows = [_official_row(0), _official_row(1)]
    data = ("\n".join(json.dumps(r) for r in rows) + "\n").encode()
    get_benchmark("refadv").score_file(_write(tmp / "x_predictions.jsonl", _with_byte(data, 2)))


def _racquet_labels_non_utf8(tmp: Path):
    bench = get_benchmark("racquet")
    src = bench.make_sample(tmp / "d", n=4, seed=0)
    data = b'{"id": "general-0", "label": "A"}\n{"id": "general-1", "label": "B\xff"}\n'
    bench.score_file(_write(tmp / "labels.jsonl", data), source=src, n_resamples=10)


def _store_non_utf8_last_line(tmp: Path):
    from vlamb_nb.models import ScriptedModel

    bench = get_benchmark("vague")
    src = bench.make_sample(tmp / "d", n=3, seed=0)
    store = tmp / "s.jsonl"
    bench.run(ScriptedModel(lambda r: "A"), bench.load(src), "lm", store=store, progress=False)
    store.write_bytes(_with_byte(store.read_bytes(), 3))
    bench.score_file(store, source=src)


def _official_row(i: int, **changes) -> dict:
    row = {"row_idx": i, "file_name": f"{i}.jpg", "normal_caption": "the cup on the left", "image_source": "coco",
           "human_authored": True, "use_negation": False, "distractor_count": 3, "gt_bbox_xyxy": [0, 0, 10, 10],
           "pred_box_xyxy_first": [0, 0, 10, 10], "first_iou": 1.0, "first_hit": True, "parse_error": "",
           "retry_followup_used": False, "model_full_name": "Qwen/Q", "prompt_id": "direct",
           "pred_box_expected_format": "abs"}
    return row | changes


def _refadv_official(tmp: Path, **changes):
    rows = [_official_row(0, **changes), _official_row(1)]
    get_benchmark("refadv").score_file(_write(tmp / "x_predictions.jsonl", "".join(json.dumps(r) + "\n"
                                                                                   for r in rows)))


def _vflute_json(tmp: Path, row: int = 0, **changes):
    bench = get_benchmark("vflute")
    folder = bench.make_sample(tmp / "d", n=3, seed=0)
    path = folder / "vflute-v2-test.json"
    recs = json.loads(path.read_text())
    recs[row] = _dotted(recs[row], changes)
    path.write_text(json.dumps(recs))
    bench.load(folder)


def _vflute_header_only_csv(tmp: Path):
    get_benchmark("vflute").load(_write(tmp / "vflute-v2-test.csv",
                                        "id,source_dataset,phenomenon,path,claim,label,explanation,prompt\n"))


def _dotted(rec: dict, changes: dict) -> dict:
    """``rec`` with each ``a.b`` field set (None: removed)."""
    for k, v in changes.items():
        target = rec
        *parents, leaf = k.split(".")
        for part in parents:
            target = target[part]
        if v is None:
            target.pop(leaf, None)
        else:
            target[leaf] = v
    return rec


def _vague_json(tmp: Path, shared: Path, **changes):
    rec = _dotted(json.loads((shared / "vague" / "example_record.json").read_text()), changes)
    get_benchmark("vague").load(_write(tmp / "vague.json", json.dumps([rec])))


def _vague_result_json(tmp: Path, value):
    get_benchmark("vague").score_file(_write(tmp / "m_VLM_mcq.json", json.dumps(
        {"a@0_annot.jpg": {"model_output": value, "true_answer": "A"}})))


def _mucar_prediction_output(tmp: Path, value):
    bench = get_benchmark("mucar")
    src = bench.make_sample(tmp / "d", n=2, seed=0)
    bench.score_file(_write(tmp / "p.jsonl", json.dumps({"id": "mucar-0", "output": value}) + "\n"), source=src,
                     n_resamples=0)


def _mucar_first_record(tmp: Path):
    bench = get_benchmark("mucar")
    src = bench.make_sample(tmp / "d", n=2, seed=0)
    recs = json.loads(src.read_text())
    recs[0]["question"] = 7
    src.write_text(json.dumps(recs))
    bench.load(src)


def _refadv_demo(tmp: Path, shared: Path, **changes):
    import shutil

    demo = tmp / "demo"
    shutil.copytree(shared / "refadv" / "demo", demo)
    path = demo / "demo_samples.json"
    recs = json.loads(path.read_text())
    recs[0] = _dotted(recs[0], changes)
    path.write_text(json.dumps(recs))
    get_benchmark("refadv").load(demo)


CASES: list[tuple[str, Callable, type[Exception], tuple[str, ...]]] = [
    ("racquet: empty release file", _racquet_empty, DataError, ("racquet_general.jsonl",)),
    ("racquet: a non-UTF-8 byte", _racquet_non_utf8, DataError, ("racquet_general.jsonl", "UTF-8", "line 2")),
    ("racquet: a broken JSON line", _racquet_bad_json_line, DataError, ("racquet_general.jsonl", "row 2")),
    ("vflute: empty test CSV", _vflute_empty_csv, DataError, ("vflute-v2-test.csv",)),
    ("vflute: empty predictions CSV", _vflute_predictions_empty_csv, DataError, ("p.csv",)),
    ("vague: non-UTF-8 result JSON", _vague_non_utf8_json, DataError, ("m_VLM_mcq.json", "UTF-8")),
    ("vague: truncated result JSON", _vague_truncated_json, DataError, ("m_VLM_mcq.json", "not valid JSON")),
    ("refadv: demo file of the wrong shape", _refadv_demo_not_a_list, DataError, ("demo_samples.json", "list")),
    ("image: not an image", _corrupt_image, ImageError, ("broken.jpg",)),
    ("image: not the recorded size", _image_of_the_wrong_size, ImageError, ("small.png", "64x48", "640x480")),
    # a byte that is not UTF-8: the file, its line (1-based) and the byte offset, never a raw traceback
    ("mucar: a non-UTF-8 byte in the release", _mucar_non_utf8, DataError,
     ("data-all.json", "line 3", "not UTF-8", "byte offset")),
    ("mucar: a non-UTF-8 byte in a predictions JSON", _mucar_predictions_non_utf8, DataError,
     ("p.json", "line 2", "not UTF-8", "byte offset")),
    ("refadv: a non-UTF-8 byte in official predictions", _refadv_official_non_utf8, DataError,
     ("x_predictions.jsonl", "line 2", "not UTF-8", "byte offset")),
    ("racquet: a non-UTF-8 byte in a labels file", _racquet_labels_non_utf8, DataError,
     ("labels.jsonl", "line 2", "not UTF-8", "byte offset")),
    ("store: a non-UTF-8 byte on the last line", _store_non_utf8_last_line, StoreError,
     ("s.jsonl", "line 3", "not UTF-8", "byte offset")),
    # a value of the wrong type is refused, never turned into text
    ("vflute: a number as the claim", lambda t: _vflute_json(t, claim=12345), DataError,
     ("vflute-v2-test.json", "row 1, field 'claim'", "int")),
    ("vflute: a number as the explanation", lambda t: _vflute_json(t, row=1, explanation=3.5), DataError,
     ("vflute-v2-test.json", "row 2, field 'explanation'", "float")),
    ("vflute: a list as the label", lambda t: _vflute_json(t, label=["entailment"]), DataError,
     ("vflute-v2-test.json", "row 1, field 'label'", "list")),
    ("refadv: a number as a prediction's parse_error", lambda t: _refadv_official(t, parse_error=0), DataError,
     ("x_predictions.jsonl", "row 1, field 'parse_error'", "int")),
    ("refadv: text as a prediction's flag", lambda t: _refadv_official(t, human_authored="no"), DataError,
     ("x_predictions.jsonl", "row 1, field 'human_authored'", "str")),
    ("refadv: a number as a prediction's model name", lambda t: _refadv_official(t, model_full_name=7), DataError,
     ("x_predictions.jsonl", "row 1, field 'model_full_name'", "int")),
    ("vague: a number as a result's model_output", lambda t: _vague_result_json(t, 5), DataError,
     ("m_VLM_mcq.json", "row 1, field 'model_output'", "int")),
    ("mucar: a number as a predicted output", lambda t: _mucar_prediction_output(t, 1), DataError,
     ("p.jsonl", "row 1, field 'output'", "int")),
    # a CSV with a header and no rows is not a source of zero items
    ("vflute: a test CSV with only its header", _vflute_header_only_csv, DataError,
     ("vflute-v2-test.csv", "no rows")),
    # rows count from 1 in JSON files as in JSON Lines and CSV
    ("vflute: the first record, missing its claim", lambda t: _vflute_json(t, claim=None), DataError,
     ("vflute-v2-test.json", "row 1, field 'claim'")),
    ("mucar: the first record, a number as its question", _mucar_first_record, DataError,
     ("data-all.json", "row 1, field 'question'")),
    ("refadv: the first official prediction, a field missing", lambda t: _refadv_official(t, first_iou=None),
     DataError, ("x_predictions.jsonl", "row 1, field 'first_iou'")),
]

#: cases that start from a released file beside the checkout (skipped where it is absent)
SHARED_CASES: list[tuple[str, Callable, type[Exception], tuple[str, ...]]] = [
    ("vague: a number as the caption", lambda t, s: _vague_json(t, s, **{"meta.caption": 42}), DataError,
     ("vague.json", "row 1, field 'meta.caption'", "int")),
    ("vague: the first record, missing its direct wording", lambda t, s: _vague_json(t, s, direct=None), DataError,
     ("vague.json", "row 1, field 'direct'")),
    ("refadv: a number as a demo record's source", lambda t, s: _refadv_demo(t, s, source=3), DataError,
     ("demo_samples.json", "row 1, field 'source'", "int")),
    ("refadv: text as a demo record's negation flag", lambda t, s: _refadv_demo(t, s, negation="false"), DataError,
     ("demo_samples.json", "row 1, field 'negation'", "str")),
    ("refadv: the first demo record, missing its box", lambda t, s: _refadv_demo(t, s, bbox=None), DataError,
     ("demo_samples.json", "row 1, field 'bbox'")),
]


@pytest.mark.parametrize("name,make,error,words", CASES, ids=[c[0] for c in CASES])
def test_hostile_input_is_a_clear_error(tmp_path, name, make, error, words):
    with pytest.raises(error) as info:
        make(tmp_path)
    msg = str(info.value)
    for w in words:
        assert w in msg, f"{name}: {w!r} not in {msg!r}"


@pytest.mark.parametrize("name,make,error,words", SHARED_CASES, ids=[c[0] for c in SHARED_CASES])
def test_hostile_edit_of_a_released_file_is_a_clear_error(tmp_path, shared_data, name, make, error, words):
    with pytest.raises(error) as info:
        make(tmp_path, shared_data)
    msg = str(info.value)
    for w in words:
        assert w in msg, f"{name}: {w!r} not in {msg!r}"


def test_partial_predictions_without_a_source_are_not_scored_against_the_whole_release(tmp_path):
    from vlamb_nb.paths import shared_data_dir

    with pytest.raises(VlambError, match=r"no --source given.*answers 1 of them"):
        _mucar_partial_predictions_without_source(tmp_path, shared_data_dir())


def test_a_refadv_image_of_another_size_than_its_record_is_refused(tmp_path, shared_data):
    import shutil

    from PIL import Image

    demo = tmp_path / "demo"
    shutil.copytree(shared_data / "refadv" / "demo", demo)
    first = sorted((demo / "images").glob("*.jpg"))[0]
    Image.new("RGB", (100, 100)).save(first)  # the record says 640x480
    bench = get_benchmark("refadv")
    items = bench.load(demo)
    with pytest.raises(ImageError, match=r"100x100.*640x480"):
        bench.requests(items.head(1), "direct")


# -- a UTF-8 byte-order mark is accepted by every loader ------------------------------------------------------
def _frame_text(df) -> str:
    return df.drop(columns=[c for c in ("source_file", "image", "image_root") if c in df.columns]).to_json()


def _loaded(name: str) -> Callable:
    return lambda path, tmp, shared: _frame_text(get_benchmark(name).load(path))


def _mucar_sample(tmp: Path, shared: Path) -> bytes:
    return get_benchmark("mucar").make_sample(tmp / "d", n=2, seed=0).read_bytes()


def _mucar_answers(tmp: Path, shared: Path) -> bytes:
    src = get_benchmark("mucar").make_sample(tmp / "d", n=2, seed=0)
    return json.dumps({u: "Answer: A" for u in get_benchmark("mucar").load(src)["uid"]}).encode()


def _shared_file(*parts: str) -> Callable:
    return lambda tmp, shared: shared.joinpath(*parts).read_bytes()


def _refadv_demo_folder(path: Path, tmp: Path, shared: Path) -> str:
    import shutil

    shutil.copytree(shared / "refadv" / "demo" / "images", path.parent / "images")
    return _frame_text(get_benchmark("refadv").load(path.parent))


BOM_CASES: list[tuple[str, str, Callable, Callable]] = [
    ("mucar: the release", "data-all.json", _mucar_sample, _loaded("mucar")),
    ("mucar: a predictions JSON", "p.json", _mucar_answers, lambda p, t, s: get_benchmark("mucar").score_file(
        p, source=t / "d" / "data-all.json", n_resamples=0)["metrics"]),
    ("vague: the official JSON", "vague.json", _shared_file("vague", "example_record.json"), _loaded("vague")),
    ("vague: JSON Lines records", "vague.jsonl", lambda t, s: json.dumps(json.loads(
        (s / "vague" / "example_record.json").read_text())).encode() + b"\n", _loaded("vague")),
    ("refadv: official predictions", "x_predictions.jsonl",
     _shared_file("refadv", "predictions", "qwen25a7b_direct_predictions.jsonl"),
     lambda p, t, s: get_benchmark("refadv").score_file(p)["metrics"]),
    ("refadv: the demo records", "demo_samples.json", _shared_file("refadv", "demo", "demo_samples.json"),
     _refadv_demo_folder),
    ("racquet: the release", "racquet_general.jsonl", _shared_file("racquet", "racquet_general.jsonl"),
     _loaded("racquet")),
    ("racquet: a labels file", "labels.jsonl",
     lambda t, s: b'{"id": "general-0", "label": "A"}\n{"id": "general-1", "label": "B"}\n',
     lambda p, t, s: get_benchmark("racquet").score_file(p, source=s / "racquet", n_resamples=10)["metrics"]),
    ("vflute: the official JSON", "vflute-v2-test.json", _shared_file("vflute", "vflute-v2-test.json"),
     _loaded("vflute")),
]


@pytest.mark.parametrize("name,file,data,read", BOM_CASES, ids=[c[0] for c in BOM_CASES])
def test_a_byte_order_mark_is_accepted_and_changes_nothing(tmp_path, shared_data, name, file, data, read):
    raw = data(tmp_path, shared_data)
    plain = read(_write(tmp_path / "plain" / file, raw), tmp_path, shared_data)
    with_bom = read(_write(tmp_path / "bom" / file, b"\xef\xbb\xbf" + raw), tmp_path, shared_data)
    assert plain == with_bom


# -- the command line: one line and exit 2 for bad bytes ------------------------------------------------------
def _cli_mucar_release(tmp: Path) -> list[str]:
    src = get_benchmark("mucar").make_sample(tmp / "d", n=2, seed=0)
    src.write_bytes(_with_byte(src.read_bytes(), 3))
    return ["data", "stats", "mucar", "--source", str(src)]


def _cli_refadv_official(tmp: Path) -> list[str]:
    data = "".join(json.dumps(_official_row(i)) + "\n" for i in range(2)).encode()
    return ["score", "refadv", "--predictions", str(_write(tmp / "x_predictions.jsonl", _with_byte(data, 2)))]


def _cli_vague_store(tmp: Path) -> list[str]:
    from vlamb_nb.models import ScriptedModel

    bench = get_benchmark("vague")
    src = bench.make_sample(tmp / "d", n=3, seed=0)
    store = tmp / "s.jsonl"
    bench.run(ScriptedModel(lambda r: "A"), bench.load(src), "lm", store=store, progress=False)
    store.write_bytes(_with_byte(store.read_bytes(), 3))
    return ["score", "vague", "--predictions", str(store), "--source", str(src)]


CLI_BYTES = [("mucar data stats", _cli_mucar_release, "line 3"), ("refadv score", _cli_refadv_official, "line 2"),
             ("vague score of a store", _cli_vague_store, "line 3")]


@pytest.mark.parametrize("name,argv,where", CLI_BYTES, ids=[c[0] for c in CLI_BYTES])
def test_a_non_utf8_byte_is_one_line_and_exit_2_from_the_cli(tmp_path, capsys, name, argv, where):
    from vlamb_nb import cli

    code = cli.main(argv(tmp_path))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == cli.EXIT_ERROR and len(err) == 1, err
    assert err[0].startswith("vlamb-nb: error: ") and where in err[0] and "byte offset" in err[0]


# -- prediction stores: one answer per request, and a score that says what it stands on ----------------------
def _raise_for(fail: Callable[[object], bool], answer: str) -> Callable[[object], str]:
    def respond(r):
        if fail(r):
            raise RuntimeError("HTTP 500 from the endpoint")
        return answer
    return respond


def _first_item(r) -> bool:
    return str(r.id).split("::")[0] == _FIRST[0]


_FIRST: list[str] = [""]


def _store_run(name: str, tmp: Path, respond: Callable[[object], str], n: int = 3):
    """A store written by a scripted model for the first ``n`` items of a generated sample: (source, store,
    options for ``score``, the ids of the items asked)."""
    from vlamb_nb.models import ScriptedModel

    bench = get_benchmark(name)
    store = tmp / f"{name}.jsonl"
    if name == "racquet":  # the A/B/C judge's store of a model's responses
        src = bench.make_sample(tmp / "d", n=4, seed=0)
        items = bench.load(src, subset="general").head(n)
        _FIRST[0] = str(items["id"].iloc[0])
        preds = bench.predictions(items, bench.run(ScriptedModel(lambda r: "The red one.", model_id="vlm"), items,
                                                   "direct", progress=False))
        bench.judge(ScriptedModel(respond, model_id="judge"), preds, store=store, progress=False)
        return src, store, ["-o", "model=vlm", "-o", "n_resamples=20"], list(items["id"])
    src = bench.make_sample(tmp / "d", n=2 if name == "mucar" else 4, seed=0)
    items = bench.load(src)
    ids = items["uid" if name == "mucar" else "id"]
    asked = items.head(n)
    _FIRST[0] = str(ids.iloc[0])
    model = ScriptedModel(respond, model_id="m")
    if name == "mucar":
        bench.evaluate(model, asked, "full", store=store, progress=False)
    else:
        setting = {"vague": "lm", "vflute": "zero_shot", "refadv": "direct"}[name]
        bench.run(model, asked, setting, store=store, progress=False)
    opts = {"mucar": ["-o", "n_resamples=0"], "vflute": ["--scorer", "none", "-o", "ci=false"]}.get(name, [])
    return src, store, opts, list(ids.head(n))


ANSWERS = {"vague": "A", "mucar": "Answer: A", "vflute": "It does.\nLABEL: entailment",
           "refadv": '[{"bbox_2d": [1, 2, 30, 40]}]', "racquet": "CLASS A"}
STORE_BENCHMARKS = list(ANSWERS)


def _score(argv: list[str], capsys) -> tuple[int, dict | None, str]:
    from vlamb_nb import cli

    code = cli.main(["score", *argv, "--json"])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else None), out.err


def _argv(name: str, src: Path, store: Path, opts: list[str]) -> list[str]:
    return [name, "--predictions", str(store), "--source", str(src), *opts]


def _headline(name: str, out: dict) -> object:
    """The numbers a score reports (every paper's in the same place), without the file's name."""
    return json.dumps(out["metrics"], sort_keys=True)


def _append(store: Path, rec: dict) -> int:
    """Append a record to a store by hand (a merged file, an edit); returns its 1-based line."""
    with open(store, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(rec) + "\n")
    return len(store.read_text().splitlines())


def _first_answer(store: Path) -> tuple[int, dict]:
    """The first successful answer of the store (1-based line, record), skipping any extra step."""
    for ln, line in enumerate(store.read_text().splitlines(), start=1):
        rec = json.loads(line)
        if not rec.get("error") and "::caption" not in rec["request_id"]:
            return ln, rec
    raise AssertionError("no answer in the store")


@pytest.mark.parametrize("name", STORE_BENCHMARKS)
def test_two_different_answers_to_one_request_are_refused_by_score(tmp_path, capsys, name):
    src, store, opts, _ = _store_run(name, tmp_path, lambda r: ANSWERS[name])
    first_line, rec = _first_answer(store)
    line = _append(store, dict(rec, text=rec["text"] + " Actually, B."))
    code, _, err = _score(_argv(name, src, store, opts), capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    for words in (store.name, repr(rec["request_id"]), f"line {first_line}", f"line {line}", "two different"):
        assert words in err, (words, err)


@pytest.mark.parametrize("name", STORE_BENCHMARKS)
def test_a_later_failure_never_replaces_an_answer_when_scoring(tmp_path, capsys, name):
    src, store, opts, _ = _store_run(name, tmp_path, lambda r: ANSWERS[name])
    code, before, err = _score(_argv(name, src, store, opts), capsys)
    assert code == 0, err
    _, rec = _first_answer(store)
    _append(store, dict(rec))  # an identical repeat counts once
    _append(store, dict(rec, text="", error="HTTP 500 on a rerun"))  # the last word on this request: a failure
    code, after, err = _score(_argv(name, src, store, opts), capsys)
    assert code == 0, err
    assert _headline(name, after) == _headline(name, before)
    assert after["coverage"] == before["coverage"] and after["coverage"]["failed"] == 0


def _n_items(name: str, src: Path) -> int:
    items = get_benchmark(name).load(src)
    return len(items)


@pytest.mark.parametrize("name", STORE_BENCHMARKS)
def test_a_score_says_how_many_items_it_covers_and_how_many_failed(tmp_path, capsys, name):
    from vlamb_nb import cli

    src, store, opts, asked = _store_run(name, tmp_path, _raise_for(_first_item, ANSWERS[name]))
    code, out, err = _score(_argv(name, src, store, opts), capsys)
    assert code == 0, err
    n = _n_items(name, src)
    assert out["coverage"] == {"items": n, "answered": len(asked) - 1, "failed": 1, "missing": n - len(asked),
                               "most_frequent_error": "RuntimeError: HTTP 500 from the endpoint"}
    assert cli.main(["score", *_argv(name, src, store, opts)]) == 0  # the text output says so too
    text = capsys.readouterr().out
    block = text.split("coverage\n", 1)[1].split("\n\n", 1)[0].splitlines()
    got = dict(ln.split(None, 1) for ln in block)
    assert (got["items"], got["answered"], got["failed"], got["missing"]) == (
        str(n), str(len(asked) - 1), "1", str(n - len(asked))), text


@pytest.mark.parametrize("name", STORE_BENCHMARKS)
def test_nothing_answered_is_a_one_line_error_not_a_score_of_zero(tmp_path, capsys, name):
    from vlamb_nb import cli

    src, store, opts, asked = _store_run(name, tmp_path, _raise_for(lambda r: True, ANSWERS[name]))
    code = cli.main(["score", *_argv(name, src, store, opts)])
    out = capsys.readouterr()
    assert code == cli.EXIT_RUN_FAILED and out.out == "", out.out
    err = out.err.strip().splitlines()
    assert len(err) == 1 and "nothing to score" in err[0] and f"{len(asked)} item(s)" in err[0], err
    assert "HTTP 500 from the endpoint" in err[0]


QUANT_BENCHMARKS = ["vague", "mucar", "vflute", "refadv"]


@pytest.mark.parametrize("value", ["none", "null", ""])
@pytest.mark.parametrize("name", QUANT_BENCHMARKS)
def test_quantization_none_null_or_empty_picks_the_unquantized_run(tmp_path, capsys, name, value):
    from dataclasses import replace

    from vlamb_nb import cli
    from vlamb_nb.models import ScriptedModel

    bench = get_benchmark(name)
    src = bench.make_sample(tmp_path / "d", n=2 if name == "mucar" else 4, seed=0)
    items = bench.load(src).head(3)
    setting = {"vague": "lm", "mucar": "full", "vflute": "zero_shot", "refadv": "direct"}[name]
    full = ScriptedModel(lambda r: ANSWERS[name], model_id="q")
    four = ScriptedModel(_raise_for(lambda r: True, ""), model_id="q")  # the 4-bit run failed throughout
    four.info = replace(four.info, quantization="4bit")
    run = bench.evaluate if name == "mucar" else bench.run
    store = F.one_store(tmp_path / "s.jsonl",  # both runs in one file, as written before one run per file
                        *(lambda p, m=m: run(m, items, setting, store=p, progress=False) for m in (full, four)))
    opts = {"mucar": ["-o", "n_resamples=0"], "vflute": ["--scorer", "none", "-o", "ci=false"]}.get(name, [])
    argv = ["score", name, "--predictions", str(store), "--source", str(src), *opts]
    assert cli.main(argv) != 0  # two runs, none picked
    capsys.readouterr()
    code = cli.main([*argv, "-o", f"quantization={value}", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert json.loads(out.out)["coverage"]["answered"] == 3
    assert cli.main([*argv, "-o", "quantization=4bit"]) == cli.EXIT_RUN_FAILED  # the other run: all failed


# -- a stored run never counts an item twice, never drops a record silently --------------------------------------
def _with_request_id(rec: dict, **change) -> dict:
    """``rec`` filed under another request id (a second run's records copied in, a rerun that named it otherwise)."""
    return dict(rec, request_id=str(rec["request_id"]) + "-again", **change)


@pytest.mark.parametrize("name", STORE_BENCHMARKS)
def test_a_second_answer_to_one_item_under_another_request_id_is_refused(tmp_path, capsys, name):
    src, store, opts, _ = _store_run(name, tmp_path, lambda r: ANSWERS[name])
    first_line, rec = _first_answer(store)
    line = _append(store, _with_request_id(rec, text=rec["text"] + " Or rather B."))
    code, _, err = _score(_argv(name, src, store, opts), capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    for words in (store.name, f"lines {first_line} and {line}", "two different answers",
                  repr(str(rec["request_id"]) + "-again")):
        assert words in err, (words, err)


@pytest.mark.parametrize("name", STORE_BENCHMARKS)
def test_the_same_answer_under_another_request_id_counts_once_and_is_reported(tmp_path, capsys, name):
    src, store, opts, _ = _store_run(name, tmp_path, lambda r: ANSWERS[name])
    code, before, err = _score(_argv(name, src, store, opts), capsys)
    assert code == 0, err
    _, rec = _first_answer(store)
    _append(store, _with_request_id(rec))
    code, after, err = _score(_argv(name, src, store, opts), capsys)
    assert code == 0, err
    assert _headline(name, after) == _headline(name, before)  # one item, counted once
    if name != "racquet":  # (the judge's file reports what it superseded in its own words)
        assert after["coverage"] == {**before["coverage"], "duplicates": 1}


def _with_request_key(rec: dict, **change) -> dict:
    """``rec`` filed under another request hash and id (a line of another run of the same item copied in, a rerun
    whose prompt or image changed)."""
    return dict(rec, key="0" * 64, request_id=str(rec["request_id"]) + "-other", **change)


@pytest.mark.parametrize("name", STORE_BENCHMARKS)
def test_a_second_answer_to_one_item_under_another_request_key_is_refused(tmp_path, capsys, name):
    """The same item and turn answered again under another request hash: before, ``score`` counted it twice (n = 21
    of 20 items) while ``compare`` kept one; now two different answers are refused naming both lines."""
    src, store, opts, _ = _store_run(name, tmp_path, lambda r: ANSWERS[name])
    first_line, rec = _first_answer(store)
    line = _append(store, _with_request_key(rec, text=rec["text"] + " Or rather B."))
    code, _, err = _score(_argv(name, src, store, opts), capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    for words in (store.name, f"lines {first_line} and {line}", "two different answers"):
        assert words in err, (words, err)


@pytest.mark.parametrize("name", ["vague", "mucar", "vflute", "refadv"])
def test_the_same_answer_under_another_request_key_counts_once_in_score_compare_and_coverage(tmp_path, capsys,
                                                                                           name):
    from vlamb_nb import cli

    src, store, opts, asked = _store_run(name, tmp_path, lambda r: ANSWERS[name])
    code, before, err = _score(_argv(name, src, store, opts), capsys)
    assert code == 0, err
    other = tmp_path / "other.jsonl"  # a second model, to compare with
    other.write_bytes(store.read_bytes().replace(b'"model_id":"m"', b'"model_id":"n"'))
    _, rec = _first_answer(store)
    _append(store, _with_request_key(rec))
    code, after, err = _score(_argv(name, src, store, opts), capsys)
    assert code == 0, err
    assert _headline(name, after) == _headline(name, before)
    assert after["coverage"] == {**before["coverage"], "duplicates": 1}
    assert after["scored"] == before["scored"]
    argv = ["compare", str(store), str(other), "--source", f"{name}={src}", "--out", str(tmp_path / "cmp"), "--json"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    values = json.loads(capsys.readouterr().out)["values"]
    per_item = next(m for m in get_benchmark(name).metrics if m.compare and m.kind != "all_correct")
    n = next(v["n"] for v in values if v["metric"] == per_item.name and v["slice"] == per_item.overall)
    assert n == after["coverage"]["answered"] + after["coverage"]["failed"] == len(asked)  # each item once


BAD_RECORDS = {  # how a record is damaged -> the words its one line must hold
    "null turn": (lambda r: dict(r, turn=None), ["field 'turn' is null"]),
    "unknown turn": (lambda r: dict(r, turn="rethink"), ["turn 'rethink' is not a turn of"]),
    "another benchmark": (lambda r: dict(r, benchmark="nocaps"), ["benchmark 'nocaps'"]),
    "null item": (lambda r: dict(r, item_id=None), ["field 'item_id' is null"]),
    "run not an object": (lambda r: dict(r, run=["v2"]), ["field 'run' is [\"v2\"]"]),
    "model a number": (lambda r: dict(r, model=7), ["field 'model' is 7"]),
    "meta text": (lambda r: dict(r, meta="x"), ["field 'meta' is \"x\""]),
    "run's data a list": (lambda r: dict(r, run={**(r.get("run") or {}), "data": [1]}), ["field 'run.data' is [1]"]),
    "model id a number": (lambda r: dict(r, model={**r["model"], "model_id": 3}), ["field 'model.model_id' is 3"]),
    "newer format": (lambda r: dict(r, format=2), ["store format 2", "newer", "upgrade vlamb_nb"]),
    "a lone surrogate in the model's name": (lambda r: dict(r, model={**r["model"], "model_id": "m\udcff"}),
                                             ["field 'model' holds text that is not UTF-8"]),
    "format not a number": (lambda r: dict(r, format="2.0"), ["field 'format' is '2.0'"]),
    "answer moved to output.text": (lambda r: {**{k: v for k, v in r.items() if k != "text"},
                                               "output": {"text": r["text"]}},
                                    ["field 'text' is missing", "'output'", "newer format"]),
}


@pytest.mark.parametrize("case", list(BAD_RECORDS))
@pytest.mark.parametrize("name", STORE_BENCHMARKS)
def test_a_record_that_cannot_be_read_as_ours_is_refused_naming_its_line(tmp_path, capsys, name, case):
    """The record replaces the store's first answer, so dropping it would leave its item 'missing' unnoticed."""
    damage, words = BAD_RECORDS[case]
    src, store, opts, _ = _store_run(name, tmp_path, lambda r: ANSWERS[name])
    line, rec = _first_answer(store)
    lines = store.read_text(encoding="utf-8").splitlines()
    lines[line - 1] = json.dumps(damage(rec))
    store.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = _score(_argv(name, src, store, opts), capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for w in (store.name, f"line {line}", *words):
        assert w in err, (w, err)


@pytest.mark.parametrize("case", ["newer format", "run not an object", "model a number", "another benchmark",
                                  "a lone surrogate in the model's name", "answer moved to output.text"])
def test_compare_refuses_a_store_it_cannot_read_in_one_line(tmp_path, capsys, case):
    from vlamb_nb import cli

    src, store, _, _ = _store_run("vague", tmp_path, lambda r: ANSWERS["vague"])
    line, rec = _first_answer(store)
    lines = store.read_text(encoding="utf-8").splitlines()
    lines[line - 1] = json.dumps(BAD_RECORDS[case][0](rec))
    store.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = cli.main(["compare", str(store), "--source", f"vague={src}", "--out", str(tmp_path / "cmp")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert store.name in err and f"line {line}" in err, err
    assert not (tmp_path / "cmp").exists()


def test_a_store_written_today_says_its_format():
    import tempfile

    from vlamb_nb.store import STORE_FORMAT, PredictionStore

    with tempfile.TemporaryDirectory() as d:
        with PredictionStore(Path(d) / "s.jsonl") as st:
            st.append({"key": "k", "request_id": "r", "text": "A"})
        assert json.loads((Path(d) / "s.jsonl").read_text())["format"] == STORE_FORMAT


def test_compare_counts_an_answer_filed_twice_once_and_says_so(tmp_path, capsys):
    from vlamb_nb import cli

    src, store, _, _ = _store_run("vague", tmp_path, lambda r: ANSWERS["vague"])
    other = tmp_path / "other.jsonl"
    other.write_bytes(store.read_bytes().replace(b'"model_id":"m"', b'"model_id":"n"'))
    _, rec = _first_answer(store)
    _append(store, _with_request_id(rec))
    argv = ["compare", str(store), str(other), "--source", f"vague={src}", "--out", str(tmp_path / "cmp")]
    assert cli.main(argv) == 0, capsys.readouterr().err
    md = (tmp_path / "cmp" / "comparison.md").read_text(encoding="utf-8")
    assert "1 answer(s) in vague.jsonl repeat an answer under another request id: each counted once" in md
    assert json.loads((tmp_path / "cmp" / "comparison.json").read_text())["values"][0]["n"] == 3


def test_scoring_against_another_answer_key_is_said_and_recorded(tmp_path, capsys):
    """``score --source`` with an answer key that differs on some of the asked items gave other numbers with no
    note, and its record kept the digest of the items the store was asked: now the score says so, and the record
    keeps the digest of the items it was scored against beside the asked ones."""
    import shutil

    from vlamb_nb.record import RunRecord

    src, store, opts, asked = _store_run("vflute", tmp_path, lambda r: ANSWERS["vflute"])
    code, same, err = _score(_argv("vflute", src, store, opts), capsys)
    assert code == 0, err
    assert not any("other items" in n for n in same["notes"])
    rec = RunRecord.read(store)
    assert rec.data.items_sha256 == rec.data.asked_sha256 and not rec.data.scored_elsewhere
    other = tmp_path / "other-key"
    shutil.copytree(src, other)
    recs = json.loads((other / "vflute-v2-test.json").read_text())
    for r in recs:
        if r["id"] in asked[:2]:
            r["label"] = "contradiction" if r["label"] == "entailment" else "entailment"
    (other / "vflute-v2-test.json").write_text(json.dumps(recs))
    code, out, err = _score(_argv("vflute", other, store, opts), capsys)
    assert code == 0, err
    note = next(n for n in out["notes"] if "scored against other items than its run was asked" in n)
    assert f"the {len(asked)} items' digest" in note
    rec = RunRecord.read(store)
    assert rec.data.items_sha256 != rec.data.asked_sha256 and rec.data.scored_elsewhere
