"""VAGUE: loader, prompts (golden text), parser, metrics against the published counts, pipeline, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vlamb_nb.benchmarks.vague import audit as vague_audit
from vlamb_nb.benchmarks.vague import data as vague_data
from vlamb_nb.benchmarks.vague.benchmark import BENCHMARK, OFFICIAL_QWEN_MAX_PIXELS
from vlamb_nb.benchmarks.vague.data import read_captions
from vlamb_nb.benchmarks.vague.parse import parse_free_form, parse_letter
from vlamb_nb.benchmarks.vague.prompts import SETTINGS
from vlamb_nb.benchmarks.vague.score import accuracy_pct, bleu1, round_half_up
from vlamb_nb.errors import DataError, ImageError, SettingError
from vlamb_nb.models import ScriptedModel

EXAMPLE_NAME = "0013_Halloween_00.15.15.492-00.15.17.652@0"
UTT = "Hey person1, spot the difference, this parking's a bit too special, isn't it?"
OPTS = ("A: The speaker wants person1 to admire the unusually decorated motorcycle in the parking lot.\n"
        "B: The speaker wants Person1 to enjoy playing a puzzle game and spot differences.\n"
        "C: The speaker wants person1 to move the sedan because it's in a handicapped parking spot.\n"
        "D: The speaker wants person1 to move the sedan because it's parked in front of a fire hydrant.")
CAP = ("A man in a business suit stands near a beige sedan parked in a handicapped parking spot. The area is "
       "surrounded by greenery and a building entrance is visible in the background.")


@pytest.fixture(scope="module")
def example(shared_data, tmp_path_factory):
    """The official README record, with a stand-in image file so the VLM settings can be built."""
    from PIL import Image

    src = shared_data / "vague" / "example_record.json"
    if not src.is_file():
        pytest.skip("the VAGUE example record is not in the released data folder")
    img_dir = tmp_path_factory.mktemp("vague_example_images")
    Image.new("RGB", (64, 32), (10, 20, 30)).save(img_dir / f"{EXAMPLE_NAME}_annot.jpg")
    return BENCHMARK.load(src, image_dir=img_dir)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    d = tmp_path_factory.mktemp("vague_sample")
    return BENCHMARK.load(BENCHMARK.make_sample(d, n=9, seed=3))


# -- the official example record ---------------------------------------------------------------------
def test_example_record_gold_and_categories(example):
    item = example.iloc[0]
    assert item["gold"] == "C"
    assert item["letter_category"] == {"C": "correct", "A": "FS", "B": "SU", "D": "NE"}
    assert item["addressee"] == "person1"
    assert item["subset"] == "VCR"
    assert item["indirect"] == UTT  # trailing spaces stripped
    assert item["indirect_raw"].endswith("?  ")


def test_example_prompt_lm_paper(example):
    (req,) = BENCHMARK.requests(example, "lm")
    assert req.images == []
    assert req.prompt_text == (
        "Select the option that best explains the underlying intention of the speaker's utterance.\n\n"
        "We assume that the speaker wants the listener to take a specific action.\n\n"
        f"Utterance: {UTT}\n\n[Choices]\n\n{OPTS}\n\n"
        "Your answer: (Output only the letter among A, B, C, and D)")


def test_example_prompt_vlm_paper(example):
    (req,) = BENCHMARK.requests(example, "vlm")
    assert len(req.images) == 1 and req.messages[0]["content"][0] == {"type": "image"}
    assert req.prompt_text == (
        "Select the option that best explains the underlying intention of the speaker's utterance based on the "
        "given image.\n\nMake sure any possible situation outside of the image SHOULD NOT affect your choice.\n\n"
        "We assume that the speaker wants the listener to take a specific action appropriate to the situation.\n\n"
        f"Utterance: {UTT}\n\n[Choices]\n\n{OPTS}\n\n"
        "Your answer: (Output only the letter among A, B, C, and D)")


def test_example_prompt_sm_and_cot_paper(example):
    (sm,) = BENCHMARK.requests(example, "sm", captions={EXAMPLE_NAME: "CAPTION X"})
    assert sm.images == []
    assert sm.prompt_text == (
        "Select the option that best explains the underlying intention of the speaker's utterance based on the "
        "description of the scene.\n\nMake sure any possible situation outside of the scene SHOULD NOT affect "
        "your choice.\n\nWe assume that the speaker wants the listener to take a specific action appropriate to "
        "the situation.\n\nScene Description: CAPTION X\n\n"
        f"Utterance: {UTT}\n\n[Choices]\n\n{OPTS}\n\n"
        "Your answer: (Output only the letter among A, B, C, and D)")
    (cot,) = BENCHMARK.requests(example, "vlm_cot")
    assert cot.prompt_text.endswith(
        "Also, explain reasoning process of your answer.\n\n"
        f"Utterance: {UTT}\n\n[Choices]\n\n{OPTS}\n\n"
        "Your answer1 (reasoning): (Output your reasoning process in 2~3 sentences, which starts with "
        "\"Let's think step by step.\")\n\nYour answer2 (intention): (Output only the letter among A, B, C, "
        "and D)")
    (smcot,) = BENCHMARK.requests(example, "sm_cot", captions="dataset")
    assert f"Scene Description: {CAP}\n\nUtterance: {UTT}" in smcot.prompt_text


def test_example_prompt_free_form_paper(example):
    (ff,) = BENCHMARK.requests(example, "lm_ff")
    assert ff.prompt_text == (
        "What do you think is the underlying intention of the speaker's utterance?\n"
        "We assume that the speaker wants the listener to take a specific action.\n"
        "Your answer SHOULD NOT exceed 15 words.\n\n"
        f"Utterance: {UTT}\n\n"
        "Your answer: (Start your sentence with \"The speaker wants person1 to...\")")
    (vff,) = BENCHMARK.requests(example, "vlm_cot_ff")
    assert vff.prompt_text.endswith(
        "Your answer\u2082 (intention): (Start your sentence with \"The speaker wants person1 to...\" and do "
        "not exceed 15 words.)")


def test_example_prompt_code_wording(example):
    (lm,) = BENCHMARK.requests(example, "lm", wording="code")
    assert lm.prompt_text == (
        "\nSelect the option that best explains the intention of the speaker's utterance. \n"
        "We assume that the speaker wants the listener to take a specific action. \n\n"
        f"Utterance : {UTT}  \n[Choices]\n{OPTS}\n\n"
        "Your answer : (Output only the letter among A,B,C and D)\n    ")
    (sm,) = BENCHMARK.requests(example, "sm_cot_ff", wording="code", captions="dataset")
    # the released SM+CoT free-form template starts with the MCQ wording (kept as released)
    assert sm.prompt_text.startswith("\nSelect the option that best explains")
    assert f"Scene Description : {CAP}\nUtterance : {UTT}  \n\nYour answer1 (reasoning) :" in sm.prompt_text


def test_all_settings_build_requests(example):
    for s in SETTINGS:
        reqs = BENCHMARK.requests(example, s, captions="dataset")
        assert len(reqs) == 1 and reqs[0].id == f"{EXAMPLE_NAME}::{s}"
        assert reqs[0].meta["item_id"] == EXAMPLE_NAME
        assert bool(reqs[0].images) == s.startswith("vlm")


def test_prompt_errors(example):
    with pytest.raises(SettingError, match="wording"):
        BENCHMARK.requests(example, "lm", wording="fancy")
    with pytest.raises(SettingError, match="unknown vague setting"):
        BENCHMARK.requests(example, "vlm_cot_cot")
    with pytest.raises(SettingError, match="needs captions"):
        BENCHMARK.requests(example, "sm")
    with pytest.raises(SettingError, match="MCQ settings only"):
        BENCHMARK.requests(example, "lm_ff", reading="loglik")


def test_missing_image_is_a_clear_error(shared_data):
    src = shared_data / "vague" / "example_record.json"
    items = BENCHMARK.load(src)
    BENCHMARK.requests(items, "lm")  # text-only settings need no image
    with pytest.raises(ImageError, match=EXAMPLE_NAME):
        BENCHMARK.requests(items, "vlm")


# -- parser -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,letter", [
    ("C", "C"), (" c ", None), ("C.", "C"), ("(C)", "C"), ("C)", "C"), ("C: The speaker wants person1 to move", "C"),
    ("(B) The speaker wants", "B"), ("**D**", "D"), ("The answer is B.", "B"), ("Answer: (A)", "A"),
    ("Option D is the best fit.", "D"), ("I think C: the sedan one.", "C"),
    ("A man is standing near the car.", None), ("A or B", None), ("", None),
])
def test_parse_letter_forms(text, letter):
    out = parse_letter(text)
    assert out["letter"] == letter
    assert out["valid"] is (letter is not None)


@pytest.mark.parametrize("text", ["I don't know.", "I cannot determine the intention from this.",
                                  "Sorry, I am unable to answer.", "None of the options fit."])
def test_refusals_are_invalid(text):
    out = parse_letter(text)
    assert out == {"letter": None, "valid": False, "parse": "refusal"}


def test_parse_cot_answer2():
    text = ("Your answer1 (reasoning): Let's think step by step. Option A mentions a motorcycle, but the "
            "image shows a sedan in a handicapped spot (option C).\nYour answer2 (intention): C")
    assert parse_letter(text, cot=True)["letter"] == "C"
    # the reasoning names A and C; without the answer2 marker nothing is certain
    assert parse_letter(text.split("\nYour answer2")[0], cot=True)["letter"] is None
    assert parse_letter("answer1 (reasoning): Let's think step by step. ...\nanswer2 (intention): (D)",
                        cot=True)["letter"] == "D"
    assert parse_letter("Let's think step by step. It is about parking.\nD", cot=True)["letter"] == "D"


def test_parse_option_text_and_category(example):
    item = example.iloc[0].copy()
    item["setting"] = "vlm"
    out = BENCHMARK.parse("The speaker wants person1 to move the sedan because it's in a handicapped parking "
                          "spot.", item)
    assert out["letter"] == "C" and out["category"] == "correct"
    for letter, cat in (("A", "FS"), ("B", "SU"), ("D", "NE")):
        assert BENCHMARK.parse(letter, item)["category"] == cat
    assert BENCHMARK.parse("\x00\ufffd<|fill_1|>", item)["valid"] is False  # garbage from a random model


def test_parse_free_form():
    out = parse_free_form("Sure! The speaker wants person1 to move the car. It is blocking the spot.")
    assert out["answer"] == "The speaker wants person1 to move the car."
    cot = parse_free_form("Your answer1 (reasoning): Let's think. The speaker wants fun.\n"
                          "Your answer2 (intention): The speaker wants person1 to park elsewhere.", cot=True)
    assert cot["answer"] == "The speaker wants person1 to park elsewhere."
    assert parse_free_form("   ")["valid"] is False


# -- metrics against the published counts -------------------------------------------------------------
def test_half_up_rounding_matches_table2():
    # Table 2 prints 44.3 / 60.3 / 62.3 / 72.3; Python's round() gives 44.2 for the first
    assert [accuracy_pct(k, 400) for k in (177, 241, 249, 289)] == [44.3, 60.3, 62.3, 72.3]
    assert round(100 * 177 / 400, 1) == 44.2
    assert round_half_up(0.05, 1) == 0.1
    assert accuracy_pct(3, 0) != accuracy_pct(3, 0)  # NaN for an empty denominator


def test_j5_j6_accuracies_from_counts():
    pc = vague_audit.published_counts()
    assert len(pc) == 72
    ok = pc[~pc["model"].eq("InternVL-3 (38B)")]
    recomputed = [accuracy_pct(c, n) for c, n in zip(ok["correct"], ok["N"], strict=True)]
    assert recomputed == ok["printed_acc"].tolist()
    gem = pc[(pc["model"] == "Gemini-1.5-Pro") & (pc["subset"] == "Ego4D") & (pc["type"] == "SM")].iloc[0]
    assert gem["valid"] == 528 and accuracy_pct(gem["correct"], 533) == gem["printed_acc"]  # refusals stay in N


def test_combined_counts_are_j5_plus_j6():
    f4 = vague_audit.fig4_data().set_index(["model", "type"])
    phi = f4.loc[("Phi3.5-Vision-Instruct (4B)", "SM")]
    assert (phi["FS"], phi["SU"], phi["NE"], phi["correct"], phi["accuracy"]) == (292, 678, 137, 570, 34.0)
    gpt = f4.loc[("GPT-4o", "SM")]
    assert (gpt["correct"], gpt["accuracy"]) == (1155, 68.9)


def test_audit_surfaces_the_known_inconsistencies():
    findings = vague_audit.audit()
    bad = {(f.table, f.row, f.column) for f in findings if not f.ok}
    expected = {
        ("Table 1", "Ovis2 (16B)", "VCR VLM gain"), ("Table 1", "GPT-4o", "Ego4D VLM gain"),
        ("Table 1", "Qwen2.5-VL-Instruct (72B)", "VCR SM"),
        ("Table 2", "Human", "Acc"), ("Table 2", "Human", "FS+SU+NE+Correct"),
    }
    for subset_table, types in (("Table J5", ("SM", "LM")), ("Table J6", ("VLM", "SM", "LM"))):
        for t in types:
            expected |= {(subset_table, f"InternVL-3 (38B) | {t}", "Acc"),
                         (subset_table, f"InternVL-3 (38B) | {t}", "Valid")}
    assert bad == expected
    by_key = {(f.table, f.row, f.column): f for f in findings}
    f = by_key[("Table J5", "InternVL-3 (38B) | SM", "Acc")]
    assert (f.published, f.recomputed, f.kind) == (47.6, 47.2, "denominator") and "540/1135" in f.note
    assert by_key[("Table 1", "Ovis2 (16B)", "VCR VLM gain")].recomputed == 2.6
    assert by_key[("Table G4", "Phi3.5-Vision-Instruct (4B) | SM", "FS")].ok
    assert len(findings) > 350


def test_bleu1():
    assert bleu1("the speaker wants x", "the speaker wants x") == pytest.approx(1.0)
    assert bleu1("open the window", "close the window") == pytest.approx(2 / 3)
    assert bleu1("", "anything") == 0.0


# -- loader --------------------------------------------------------------------------------------------
def test_generated_parquet_has_hub_layout(tmp_path):
    import pyarrow.parquet as pq

    root = BENCHMARK.make_sample(tmp_path, n=6)
    shard = root / "data" / "train-00000-of-00001.parquet"
    schema = pq.read_schema(shard)
    assert str(schema.field("image").type) == "struct<bytes: binary, path: string>"
    assert "ordering" in [f.name for f in schema.field("mcq").type]
    assert b"huggingface" in schema.metadata


def test_parquet_loader_and_images(sample):
    assert len(sample) == 9
    assert sample.attrs["subset_counts"] == {"VCR": 6, "Ego4D": 3}
    for _, item in sample.iterrows():
        assert sorted(item["ordering"]) == ["A", "B", "C", "D"]
        assert item["letter_category"][item["gold"]] == "correct"
        img = vague_data.item_image(item)
        assert img.size == (320, 200)
        assert len(item["person_bbox"]) >= 1


def test_hub_and_local_go_through_the_same_loader(tmp_path, monkeypatch):
    import huggingface_hub

    root = BENCHMARK.make_sample(tmp_path / "snap", n=4)
    calls = []

    def fake_snapshot(repo_id, **kw):
        calls.append((repo_id, kw.get("repo_type")))
        return str(root)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot)
    hub = BENCHMARK.load()  # default source: the hub id
    local = BENCHMARK.load(root)
    assert calls == [("HazelNam/vague-bench", "dataset")]
    assert hub.drop(columns=["image"]).equals(local.drop(columns=["image"]))


def test_hub_offline_is_a_clear_error(monkeypatch):
    import huggingface_hub

    def offline(*a, **k):
        raise OSError("offline")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    from vlamb_nb.errors import NotAvailableError

    with pytest.raises(NotAvailableError, match="local parquet"):
        BENCHMARK.load("HazelNam/vague-bench")


def test_json_release_and_v1_keys(tmp_path):
    root = BENCHMARK.make_sample(tmp_path, n=6, fmt="json")
    items = BENCHMARK.load(root)
    assert items.attrs["subset_counts"] == {"VCR": 4, "Ego4D": 2}
    assert vague_data.item_image(items.iloc[0]).size == (320, 200)
    # 1.0 key names
    recs = json.loads((root / "vcr_1144_final.json").read_text())
    for r in recs:
        m = r["mcq"]
        m["2_incorrect_fake_scene"] = m.pop("2_fake_scene")
        m["3_incorrect_surface_understanding"] = m.pop("3_surface_understanding")
        m["4_incorrect_entity"] = m.pop("4_wrong_entity")
    v1 = tmp_path / "v1.json"
    v1.write_text(json.dumps(recs))
    old = BENCHMARK.load(v1, image_dir=root / "images")
    assert old["options"].tolist() == items[items["subset"] == "VCR"]["options"].tolist()


@pytest.mark.parametrize("mutate,field", [
    (lambda r: r["mcq"].update(ordering=["A", "A", "B", "C"]), "mcq.ordering"),
    (lambda r: r["mcq"].pop("ordering"), "mcq.ordering"),
    (lambda r: r["mcq"].pop("4_wrong_entity"), "mcq.4_wrong_entity"),
    (lambda r: r.update(solution="person1 moves the car"), "solution"),
    (lambda r: r.pop("indirect"), "indirect"),
])
def test_bad_records_name_file_row_field(tmp_path, mutate, field):
    recs = [rec for rec, _ in vague_data.sample_records(3, seed=1)]
    mutate(recs[2])
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(recs))
    with pytest.raises(DataError) as e:
        BENCHMARK.load(p)
    assert "bad.json" in str(e.value) and "row 3," in str(e.value) and field in str(e.value)  # the third record


def test_corrupt_embedded_image(tmp_path):
    recs = vague_data.sample_records(2, seed=0)
    recs[1] = (recs[1][0], b"not a jpeg")
    vague_data.write_hub_parquet(recs, tmp_path / "x.parquet")
    items = BENCHMARK.load(tmp_path / "x.parquet")
    with pytest.raises(ImageError, match=items.iloc[1]["id"]):
        BENCHMARK.requests(items, "vlm")


def test_full_release_counts_are_checked(tmp_path, monkeypatch):
    monkeypatch.setattr(vague_data, "EXPECTED_COUNTS", {"VCR": 2, "Ego4D": 2})
    recs = [rec for rec, _ in vague_data.sample_records(4, seed=0)]  # 3 VCR-style, 1 Ego4D-style
    p = tmp_path / "r.json"
    p.write_text(json.dumps(recs))
    with pytest.raises(DataError, match="expected"):
        BENCHMARK.load(p)
    assert len(BENCHMARK.load(p, strict_counts=False)) == 4


def test_data_stats(sample):
    st = BENCHMARK.data_stats(sample)
    assert st["subset_counts"] == {"VCR": 6, "Ego4D": 3}
    vcr = sample[sample["subset"] == "VCR"]
    assert st["table_b1"]["VAGUE-VCR"]["Average people counts"] == pytest.approx(
        vcr["person_bbox"].map(len).mean(), abs=0.005)
    assert sum(c for _, c in st["top_verbs"]["VCR"]) == 6


# -- pipeline ------------------------------------------------------------------------------------------
def _gold_model(items, pick="correct"):
    """Answers with the letter of the option of category ``pick`` (found from the prompt's options)."""
    lookup = {row["id"]: row for _, row in items.iterrows()}

    def respond(req):
        if req.id.endswith("::caption"):
            return f"A scene for {req.meta['item_id']}."
        item = lookup[req.meta["item_id"]]
        letter = next(k for k, v in item["letter_category"].items() if v == pick)
        return f"answer2 (intention): {letter}" if "cot" in req.setting else letter

    return ScriptedModel(respond)


@pytest.mark.parametrize("setting", ["lm", "vlm", "sm", "sm_cot", "vlm_cot"])
def test_pipeline_counts_every_category(sample, tmp_path, setting):
    for pick in ("correct", "FS"):
        scored = BENCHMARK.evaluate(_gold_model(sample, pick), sample, setting, store=tmp_path / f"{pick}.jsonl",
                                    progress=False)
        assert len(scored) == len(sample)
        assert scored["correct"].all() == (pick == "correct")
        assert (scored["category"] == pick).all()
    b = BENCHMARK.breakdown(scored)
    allrow = b[b["subset"] == "All"].iloc[0]
    assert (allrow["FS"], allrow["correct"], allrow["accuracy"]) == (9, 0, 0.0)


def test_sm_captions_come_from_the_model_and_resume(sample, tmp_path):
    model = _gold_model(sample)
    store = tmp_path / "s.jsonl"
    gens = BENCHMARK.run(model, sample, "sm", store=store, progress=False)
    assert model.calls == 2 * len(sample)
    caps = gens[gens["request_id"].str.endswith("::caption")]
    assert len(caps) == len(sample)
    reqs = BENCHMARK.requests(sample, "sm", captions={i: f"A scene for {i}." for i in sample["id"]})
    assert f"Scene Description: A scene for {sample.iloc[0]['id']}." in reqs[0].prompt_text
    BENCHMARK.run(model, sample, "sm", store=store, progress=False)  # all cached
    assert model.calls == 2 * len(sample)


def test_external_captions_file(sample, tmp_path):
    p = tmp_path / "caps.json"
    p.write_text(json.dumps({f"{i}_annot.jpg": f"gpt caption {k}" for k, i in enumerate(sample["id"])}))
    assert read_captions(p)[sample.iloc[1]["id"]] == "gpt caption 1"
    reqs = BENCHMARK.requests(sample, "sm_ext", captions=str(p))
    assert "Scene Description: gpt caption 0\n" in reqs[0].prompt_text
    p.write_text(json.dumps({"nobody_annot.jpg": "x"}))
    with pytest.raises(DataError, match="no caption"):
        BENCHMARK.requests(sample, "sm_ext", captions=str(p))


def test_failed_and_garbage_generations_count_as_wrong(sample, tmp_path):
    def respond(req):
        if sample.iloc[0]["id"] in req.id:
            raise RuntimeError("backend down")
        return "\ufffd<|fill|> lett"

    scored = BENCHMARK.evaluate(ScriptedModel(respond), sample, "lm", progress=False)
    assert len(scored) == len(sample) and not scored["correct"].any() and not scored["valid"].any()
    assert BENCHMARK.breakdown(scored).query("subset == 'All'")["accuracy"].iloc[0] == 0.0


def test_loglik_reading(sample):
    def score(req, options):
        item = sample.set_index("id").loc[req.meta["item_id"]]
        return [0.0 if o == item["gold"] else -5.0 for o in options]

    model = ScriptedModel(lambda r: "Z", score=score)
    scored = BENCHMARK.evaluate(model, sample, "vlm", reading="loglik", progress=False)
    assert scored["correct"].all()
    assert any(d.what == "answer reading" for d in scored.attrs["deviations"])


def test_free_form_scores_bleu_against_correct_option(sample):
    model = ScriptedModel(lambda r: "The speaker wants person1 to do something. Extra.")
    scored = BENCHMARK.evaluate(model, sample, "lm_ff", bertscore=None, progress=False)
    assert scored["valid"].all()
    ref0 = sample.iloc[0]["options"]["correct"]
    assert scored.iloc[0]["bleu1"] == pytest.approx(bleu1("The speaker wants person1 to do something.", ref0))
    assert "BLEU-1" in BENCHMARK.breakdown(scored).columns


# -- CLI ------------------------------------------------------------------------------------------------
def _cli(*args):
    return subprocess.run([sys.executable, "-m", "vlamb_nb.cli", *args], capture_output=True, text=True,
                          timeout=300)


def test_cli_reference_check():
    r = _cli("reference", "check", "vague", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["mismatches"] == 15 and out["checked"] > 350
    bad = [f for f in out["findings"] if not f["ok"]]
    assert {"table", "row", "column", "published", "recomputed"} <= set(bad[0])


def test_cli_data_stats_and_score(tmp_path):
    root = BENCHMARK.make_sample(tmp_path / "d", n=6)
    r = _cli("data", "stats", "vague", "--source", str(root), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["subset_counts"] == {"VCR": 4, "Ego4D": 2}
    items = BENCHMARK.load(root)
    # the released inference script's output format and file name
    preds = {f"{row['id']}_annot.jpg": {"model_output": row["gold"] if k % 2 == 0 else "I don't know",
                                        "true_answer": row["gold"]} for k, (_, row) in enumerate(items.iterrows())}
    pf = tmp_path / "mymodel_VLM_mcq.json"
    pf.write_text(json.dumps(preds))
    r = _cli("score", "vague", "--predictions", str(pf), "--source", str(root), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["setting"], out["scored"], out["invalid"]) == ("vlm", 6, 3)
    assert out["metrics"] == {"accuracy": 50.0}
    assert {(x["slice"], x["n"]) for x in out["by_slice"]} == {("all", 6), ("VCR", 4), ("Ego4D", 2)}
    bad = tmp_path / "noformat.json"
    bad.write_text(json.dumps(preds))
    r = _cli("score", "vague", "--predictions", str(bad), "--source", str(root))
    assert r.returncode != 0 and "setting" in r.stderr


def test_reference_csv_is_well_formed():
    from vlamb_nb import reference

    ref = reference.load("vague")
    assert set(ref["table"]) == {"Table 1", "Table 2", "Table 3", "Table B1", "Table F3", "Table G4", "Table J5",
                                 "Table J6"}
    assert ref["value_num"].notna().all()
    assert reference.cell("vague", "Table G4", "InternVL-2.5-MPO (26B) | VLM+CoT", "FS") == 17
    assert Path(reference.__file__).parent.joinpath("vague.csv").is_file()


@pytest.mark.slow
def test_bertscore_minilm_substitute():
    from vlamb_nb.benchmarks.vague.score import MINILM_LABEL, bertscore_f1, bertscore_label

    same, opposite, unrelated = bertscore_f1(
        ["The speaker wants person1 to move the car.", "open the window", "bananas are yellow"],
        ["The speaker wants person1 to move the car.", "close the window", "The speaker wants person1 to sit."],
        model="minilm")
    assert same == pytest.approx(1.0, abs=1e-4)
    assert 0 < unrelated < opposite < same
    assert "substitute" in bertscore_label("minilm") and bertscore_label("minilm") == MINILM_LABEL


def test_score_file_counts_missing_predictions_as_invalid(tmp_path, sample):
    ids = list(sample["id"])
    pf = tmp_path / "m_LLM_mcq.json"
    pf.write_text(json.dumps({f"{i}_annot.jpg": {"model_output": sample.set_index("id").loc[i, "gold"],
                                                 "true_answer": sample.set_index("id").loc[i, "gold"]}
                              for i in ids[:3]}))
    src = tmp_path / "src"
    vague_data.write_hub_parquet(vague_data.sample_records(9, seed=3), src / "data" / "train-00000-of-00001.parquet")
    out = BENCHMARK.score_file(pf, source=src)
    assert (out["model"], out["setting"], out["coverage"]["missing"]) == ("m", "lm", 6)
    assert (out["scored"], out["invalid"], out["metrics"]["accuracy"]) == (9, 6, 33.33)
    skipped = BENCHMARK.score_file(pf, source=src, missing="skip")
    assert skipped["metrics"]["accuracy"] == 100.0 and skipped["scored"] == 3
    with pytest.raises(SettingError, match="missing"):
        BENCHMARK.score_file(pf, source=src, missing="maybe")


def test_human_subset_approximation(sample):
    sub = vague_data.human_subset_approximation(sample, n=4, seed=0)
    score = sample["rating_direct"] + sample["rating_indirect"]
    assert len(sub) == 4
    assert (sub["rating_direct"] + sub["rating_indirect"]).min() >= sorted(score, reverse=True)[3]
    assert sub["id"].tolist() == vague_data.human_subset_approximation(sample, n=4, seed=0)["id"].tolist()


def test_paper_templates_equal_the_paper_figures(shared_data):
    """Every paper-wording template equals the prompt box of its figure (J15–J24) in the paper text."""
    from vlamb_nb.benchmarks.vague.prompts import PAPER

    txt = shared_data.parent / "papers" / "vague.txt"
    if not txt.is_file():
        pytest.skip("the paper text is not beside the released data")
    lines = txt.read_text(encoding="utf-8").split("\n")
    heads = {"VLM Multiple-Choice Question Answering": "vlm", "SM Multiple-Choice Question Answering": "sm",
             "LM Multiple-Choice Question Answering": "lm", "VLM Free-form Answering": "vlm_ff",
             "SM Free-form Answering": "sm_ff", "LM Free-form Answering": "lm_ff",
             "VLM+CoT Multiple-Choice Question Answering": "vlm_cot",
             "SM+CoT Multiple-Choice Question Answering": "sm_cot", "VLM+CoT Free-form Answering": "vlm_cot_ff",
             "SM+CoT Free-form Answering": "sm_cot_ff"}
    seen = set()
    for i, line in enumerate(lines):
        key = heads.get(line.removeprefix("Prompt for "))
        if key is None or not line.startswith("Prompt for "):
            continue
        j = i + 2
        while not lines[j].startswith("Figure J"):
            j += 1
        assert "\n".join(lines[i + 2: j]).strip("\n") == PAPER[key], key
        seen.add(key)
    assert seen == set(PAPER)


def test_all_settings_tables_cis_and_paired_tests(sample, tmp_path):
    from vlamb_nb.benchmarks.vague import report

    lookup = sample.set_index("id")

    def respond(req):  # right with the image, wrong (SU) without it
        if req.id.endswith("::caption"):
            return "A caption."
        item = lookup.loc[req.meta["item_id"]]
        want = "correct" if req.setting.startswith("vlm") else "SU"
        letter = next(k for k, v in item["letter_category"].items() if v == want)
        return "The speaker wants person1 to go." if req.setting.endswith("_ff") else letter

    scored, _, runs = report.evaluate_settings(ScriptedModel(respond), None, sample, report.parse_settings("all"),
                                               store_dir=tmp_path, bertscore=None, progress=False)
    assert set(runs) == set(SETTINGS) and all("deviations" in r.attrs for r in runs.values())
    assert sum(map(len, runs.values())) == len(scored)
    stores = sorted(p.name for p in tmp_path.rglob("*.jsonl"))  # one store per setting, by Benchmark.store_path
    assert stores == sorted(f"vague__{s}.jsonl" for s in SETTINGS)
    tables = BENCHMARK.tables(scored)
    assert {"Table 1", "Table J5", "Table J6", "Table 3/G4", "Table F3", "Fig. 4"} <= set(tables)
    t1 = tables["Table 1"]
    assert t1[("VCR", "vlm")].iloc[0] == 100.0 and t1[("VCR", "vlm gain")].iloc[0] == 100.0
    assert t1[("Ego4D", "sm gain")].iloc[0] == 0.0
    fig4 = tables["Fig. 4"].set_index("setting")
    assert fig4.loc["lm", "SU"] == len(sample) and fig4.loc["vlm", "SU"] == 0
    ci = report.breakdown_with_ci(scored, n_resamples=500)
    row = ci[(ci["setting"] == "lm") & (ci["subset"] == "All")].iloc[0]
    assert row["ci_low"] == pytest.approx(0.0, abs=1e-9) and 20 < row["ci_high"] < 40  # Wilson: never [0, 0]
    tests = report.paired_tests(scored, n_resamples=500).set_index(["a", "b"])
    assert tests.loc[("vlm", "lm"), "diff_pts"] == 100.0 and tests.loc[("vlm", "lm"), "p_mcnemar"] < 0.01
    assert tests.loc[("sm", "lm"), "diff_pts"] == 0.0
    assert len(tests) == len(report.PAIRS)


def test_paper_vs_ours_matches_paper_rows():
    import pandas as pd

    from vlamb_nb.benchmarks.vague import report

    bd = pd.DataFrame([{"model": "m", "setting": "vlm", "subset": "VCR", "N": 1144, "valid": 1144, "correct": 535,
                        "FS": 134, "SU": 438, "NE": 37, "accuracy": accuracy_pct(535, 1144), "ci_low": 44.0,
                        "ci_high": 50.0}])
    cmp = report.paper_vs_ours(bd, "Qwen/Qwen2.5-VL-7B-Instruct")
    acc = cmp[(cmp["table"] == "Table J5") & (cmp["column"] == "Acc")].iloc[0]
    assert acc["row"] == "Qwen2.5-VL-Instruct (7B) | VLM" and acc["paper"] == 46.8 and acc["match"]
    assert cmp[cmp["table"] == "Table 1"].iloc[0]["paper"] == 46.8
    assert cmp[cmp["column"] == "WE"].iloc[0]["paper"] == 37


@pytest.mark.slow
def test_free_form_bertscore_substitute_is_labelled_in_the_table(sample):
    model = ScriptedModel(lambda r: "The speaker wants person1 to do something.")
    scored = BENCHMARK.evaluate(model, sample, "vlm_ff", bertscore="minilm", progress=False)
    row = BENCHMARK.breakdown(scored).query("subset == 'All'").iloc[0]
    assert 0 < row["BERT F1"] < 1 and "substitute" in row["BERTScore model"]
    assert any(d.what == "BERTScore model" for d in scored.attrs["deviations"])


def _official_file(tmp_path, sample, name="m_VLM_mcq.json", outputs=None, truth=None):
    by = sample.set_index("id")
    outputs = outputs or {i: by.loc[i, "gold"] for i in sample["id"]}
    pf = tmp_path / name
    pf.write_text(json.dumps({f"{i}_annot.jpg": {"model_output": o, "true_answer": (truth or {}).get(i, by.loc[i, "gold"])}
                              for i, o in outputs.items()}))
    return pf


def _sample_source(tmp_path):
    src = tmp_path / "src"
    vague_data.write_hub_parquet(vague_data.sample_records(9, seed=3), src / "data" / "train-00000-of-00001.parquet")
    return src


def test_score_file_rejects_true_answers_from_other_data(tmp_path, sample):
    """An official result file whose true_answer letters disagree with the source was made on other data."""
    first = sample["id"].iloc[0]
    other = next(x for x in "ABCD" if x != sample.set_index("id").loc[first, "gold"])
    pf = _official_file(tmp_path, sample, truth={first: other})
    with pytest.raises(DataError, match="true_answer"):
        BENCHMARK.score_file(pf, source=_sample_source(tmp_path))
    ok = _official_file(tmp_path, sample, name="ok_VLM_mcq.json")
    assert BENCHMARK.score_file(ok, source=_sample_source(tmp_path))["metrics"]["accuracy"] == 100.0


def test_score_file_needs_the_source_even_with_the_files_true_answers(tmp_path, sample):
    """Scoring reads each item's subset and option ordering from the data: a file alone is refused in one line
    (its own malformed rows are still named first)."""
    pf = _official_file(tmp_path, sample)
    with pytest.raises(SettingError, match="--source"):
        BENCHMARK.score_file(pf)
    store = tmp_path / "s.jsonl"
    store.write_text(json.dumps({"key": "k0", "request_id": f"{sample['id'].iloc[0]}::vlm", "setting": "vlm",
                                 "text": "A"}) + "\n")
    with pytest.raises(SettingError, match="--source"):
        BENCHMARK.score_file(store)


@pytest.mark.slow
def test_the_image_budget_follows_the_declared_family_not_the_name():
    """A Qwen2.5-VL checkpoint gets the released code's budget from its config's family, whatever it is called;
    another family loaded with the same options keeps its processor's default."""
    from vlamb_nb.benchmarks.vague.report import official_model_options
    from vlamb_nb.models import load_model

    qwen = load_model("tiny:qwen2_5_vl", **official_model_options("tiny:qwen2_5_vl"))
    assert qwen.info.family == "qwen2_5_vl" and qwen.max_pixels == OFFICIAL_QWEN_MAX_PIXELS
    other = load_model("tiny:llava", **official_model_options("tiny:llava"))
    assert other.info.family == "llava" and other.max_pixels is None
    assert "image resolution" not in {d.what for d in BENCHMARK.deviations(qwen, "vlm")}


def test_qwen25_image_budget_is_the_released_codes_or_a_deviation():
    from vlamb_nb.benchmarks.vague.report import official_model_options
    from vlamb_nb.models import ModelSpec
    from vlamb_nb.models.base import ModelInfo

    # the budget goes with the checkpoint's declared family, applied when it loads: no name is read here
    by_family = {"family_max_pixels": {"qwen2_5_vl": 1280 * 28 * 28}}
    assert official_model_options("Qwen/Qwen2.5-VL-7B-Instruct") == by_family
    assert official_model_options(ModelSpec.parse("tiny:qwen2_5_vl")) == by_family
    assert OFFICIAL_QWEN_MAX_PIXELS == 1280 * 28 * 28
    assert official_model_options("openai:Qwen/Qwen2.5-VL-7B-Instruct") == {}  # the server's setting
    assert official_model_options("replay:qwen2.5-vl.jsonl") == {}
    qwen = ModelInfo("Qwen/Qwen2.5-VL-7B-Instruct", family="qwen2_5_vl")
    default = {d.what: d for d in BENCHMARK.deviations(qwen, "vlm")}
    assert "the processor default" in default["image resolution"].ours
    assert "image resolution" not in {d.what for d in BENCHMARK.deviations(qwen, "vlm", max_pixels=1003520)}
    ext = {d.what: d for d in BENCHMARK.deviations(qwen, "sm_ext", captions="dataset")}
    assert "leak the answer" in ext["external captions"].ours


def test_table_b2_ocr_check_on_the_released_images(shared_data):
    """Table B2's OCR sanity test runs on the three released images; a model naming the colour passes."""
    from vlamb_nb.benchmarks.vague.report import ocr_check
    from vlamb_nb.models import ScriptedModel

    asked = []

    def respond(req):
        asked.append(req.prompt_text)
        return "Person1 is wearing a red shirt." if "person1" in req.prompt_text else "Blue."

    table = ocr_check(ScriptedModel(respond), shared_data / "vague" / "ocr_test")
    assert table["image"].tolist() == ["(a) ocr_1.jpg", "(b) ocr_2.jpg", "(c) ocr_3.jpg"]
    assert table["names_expected"].tolist() == [True, True, False]  # person5 answered "Blue."
    assert "person5" in asked[2] and table["error"].isna().all()


# -- Table B1 / Fig. B1 from every source, and Table 2's subset approximation ---------------------------------------
def test_table_b1_and_fig_b1_add_the_real_example_record_beside_a_generated_sample(sample, shared_data, monkeypatch):
    """With only the README record beside the checkout, B1 shows it (labelled, n=1) next to the generated sample."""
    import pandas as pd

    from vlamb_nb.benchmarks.vague import report

    if report.example_record_path() is None:
        pytest.skip("the VAGUE example record is not in the released data folder")
    sources = report.statistics_sources(sample, "generated sample (9 items, seed 3)")
    assert list(sources) == ["generated sample", "the one released example record, n=1"]
    assert "not VAGUE" in sources["generated sample"][1]
    example, what = sources["the one released example record, n=1"]
    assert len(example) == 1 and EXAMPLE_NAME in what and "real VAGUE data" in what
    table = report.table_b1_by_source(sources, report.published_tables()["Table B1"])
    real = table["VAGUE-VCR: the one released example record, n=1"]
    # the README record: 7 RAM objects, 2 tagged people, 12 words direct, 13 words indirect (trailing spaces cut)
    assert real.to_dict() == {"Average object counts": 7.0, "Average people counts": 2.0,
                              "Average word counts (direct)": 12.0, "Average word counts (indirect)": 13.0,
                              "Items": 1.0}
    assert "VAGUE-Ego4D: the one released example record, n=1" not in table  # a VCR record only
    assert table.loc["Items", "VAGUE-VCR: paper (Table B1)"] == 1144
    assert table.loc["Average people counts", "VAGUE-Ego4D: paper (Table B1)"] == 2.59
    assert table.loc["Items", "VAGUE-VCR: generated sample"] == 6
    verbs = report.verbs_by_source(sources)
    assert verbs["the one released example record, n=1"] == {"VCR": [("move", 1)]}  # no empty Ego4D panel
    assert sum(c for _, c in verbs["generated sample"]["VCR"]) == 6
    assert [report.is_example_source(k) for k in verbs] == [False, True]
    # the released data needs no stand-in record; the record itself as the source is not shown twice
    assert list(report.statistics_sources(sample, "released data")) == ["released data"]
    assert len(report.statistics_sources(example, str(report.example_record_path()))) == 1
    with_it = pd.concat([sample, example], ignore_index=True)  # e.g. a user's copy of the release
    assert list(report.statistics_sources(with_it, "my.parquet")) == ["my.parquet"]
    monkeypatch.setattr(report, "example_record_path", lambda: None)
    assert list(report.statistics_sources(sample, "generated sample")) == ["generated sample"]


def test_human_subset_beside_table_2_says_what_the_selection_could_use(sample, tmp_path):
    from vlamb_nb.benchmarks.vague import report

    scored = BENCHMARK.evaluate(_gold_model(sample), sample, "vlm", store=tmp_path / "s.jsonl", progress=False)
    out = report.human_subset(sample, scored, description="generated sample (9 items, seed 3)", n=4, seed=0)
    want = vague_data.human_subset_approximation(sample, n=4, seed=0)["id"].tolist()
    assert out["selection"]["id"].tolist() == want
    table = out["table"]
    assert table.loc["Human", "Acc"] == 94.0 and table.loc["Human", "N"] == 400  # the paper's rows, as printed
    ours = table[table["source"] == "ours"]
    assert len(ours) == 1 and ours.iloc[0][["Acc", "Correct", "N"]].tolist() == [100.0, 4, 4]
    notes = " ".join(out["notes"])
    assert "not released" in notes and "ratings are generated, not human" in notes
    assert "fewer than" not in notes  # 9 items >= 4
    full = report.human_subset(sample, scored.head(5), description="generated sample (9 items, seed 3)", seed=0)
    notes = " ".join(full["notes"])
    assert "Only 9 items are loaded" in notes and "not comparable to Table 2" in notes
    assert "4 of the 9 selected items have no VLM answer" in notes
    assert full["table"].iloc[-1]["N"] == 5
    none = report.human_subset(sample, None, description="x")
    assert "No VLM MCQ answers" in " ".join(none["notes"]) and (none["table"]["source"] == "paper (Table 2)").all()


def test_the_notebook_calls_the_human_subset_and_the_example_record(repo_root):
    """Stored without outputs, parameters cell kept; Table 2's approximation and the B1 sources are wired in."""
    nb = json.loads((repo_root / "notebooks" / "vague.ipynb").read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)
    assert code[0]["metadata"].get("tags") == ["parameters"]
    text = "\n".join("".join(c["source"]) for c in nb["cells"])
    assert "report.human_subset(items, scored" in text and "report.statistics_sources(items" in text
    assert "report.verbs_by_source(b1_sources)" in text and "report.EXAMPLE_STAMP" in text


def test_evaluate_runs_an_already_loaded_model_without_loading_another(tmp_path, monkeypatch):
    """The notebook loads its model once (Table B2 and the run share it): evaluate() takes the loaded model and
    never calls load_model, so a 34B checkpoint is not loaded twice on one GPU."""
    import vlamb_nb.models as models
    from vlamb_nb.benchmarks.vague import report
    from vlamb_nb.models import ScriptedModel

    items = BENCHMARK.load(BENCHMARK.make_sample(tmp_path, n=3, seed=0))
    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("evaluate loaded a second model"))
    model = ScriptedModel(lambda req: "A")
    scored, model_id, _ = report.evaluate_settings(model, "none", items, ["lm"], store_dir=tmp_path,
                                          bertscore=None, progress=False)
    assert model_id == model.info.model_id and len(scored) == 3
