"""Real data through the front door: each release fetched at its pinned revision through the real hub client's
listing (against a stand-in on 127.0.0.1) and plain HTTP, verified, recorded, resumed, refused; its known defects
and dead links left out as data; imported with ``--from``; listed by ``data status``; read by the paper profile.
Nothing here reaches the internet."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import hubstub
import pytest
import release_fixtures as rf
from chat_endpoint import ChatEndpoint

from vlamb_nb import cli
from vlamb_nb.datahome import DataIdentity, fetched, read_manifest, release_dir
from vlamb_nb.errors import FetchError, NotFetchedError
from vlamb_nb.releases import fetch, status

pytestmark = pytest.mark.shared  # the released records and runs beside the checkout are served as released

stand_in_hub = hubstub.stand_in_hub
static_server = hubstub.static_server


web = rf.web


def test_refadv_is_fetched_verified_recorded_and_read_by_the_paper_profile(web):
    from vlamb_nb.benchmarks.refadv.data import HUB_REVISION, PINNED_RUNS, RUNS_COMMIT

    hub, files = web
    m = fetch("refadv", progress=False)
    assert m["complete"] and m["counts"] == {"rows": 1142, "released runs": 30} and m["n_items"] == 1142
    # the pinned revision, asked for by name (the stand-in's main is that commit too)
    assert m["revision"] == HUB_REVISION == hub.repos[("dataset", "dddraxxx/ref-adv-s")].sha
    assert m["revisions"] == {"dddraxxx/ref-adv-s": HUB_REVISION, "dddraxxx/Ref-Adv": RUNS_COMMIT}
    assert set(m["pinning"].values()) == {"known-good (pinned in the release)"}
    assert hub.seen("GET", f"/api/datasets/dddraxxx/ref-adv-s/revision/{HUB_REVISION}")
    assert m["label"].startswith(f"hub:dddraxxx/ref-adv-s@{HUB_REVISION[:7]}")
    base = release_dir("refadv") / m["folder"]
    parquet = base / "files" / "data" / "train-00000-of-00001.parquet"
    assert parquet.read_bytes() == rf.refadv_repo()["data/train-00000-of-00001.parquet"]
    recorded = {f["path"]: f for f in m["files"]}
    assert recorded["data/train-00000-of-00001.parquet"]["verified"] == "hub listing sha256"
    runs = {p: f for p, f in recorded.items() if p.startswith("predictions/")}
    assert len(runs) == 30  # every released run, found by listing outputs/qwen/ at the pinned commit
    pinned = {p for p, f in runs.items() if f["verified"] == "pinned sha256"}
    assert pinned == {f"predictions/{n}" for n in PINNED_RUNS}
    others = {f["verified"] for p, f in runs.items() if p not in pinned}
    assert others == {"GitHub listing git object; sha256 recorded at first fetch, not pinned"}
    assert all(len(f["sha256"]) == 64 for f in runs.values())
    assert not (base / ".staging").exists()
    # the paper profile reads it, and says what it is
    choice = fetched("refadv")
    assert choice.identity == DataIdentity(kind="release", paper="refadv", release="hub:dddraxxx/ref-adv-s",
                                           revision=HUB_REVISION, n_items=1142, label=m["label"])
    from vlamb_nb.benchmarks.refadv import report

    data = report.notebook_data(None, profile="paper")
    assert len(data["pipeline"]) == 1142 and data["data"].kind == "release"
    assert data["pipeline"].attrs["data"]["revision"] == HUB_REVISION
    assert len(list(Path(data["predictions"]).glob("*_predictions.jsonl"))) == 30
    row = next(r for r in status() if r["paper"] == "refadv")
    assert row["state"] == "complete" and row["items"] == 1142 and row["revision"] == HUB_REVISION
    assert row["recorded"] == 25 and row["unverified"] == 0


def test_a_second_fetch_downloads_nothing_again(web):
    hub, files = web
    fetch("refadv", progress=False)
    gets = len(hub.file_requests("data/train-00000-of-00001.parquet"))
    url_gets = len([r for r in files.seen("GET") if r[1].endswith(".jsonl")])
    m = fetch("refadv", progress=False)
    assert len(hub.file_requests("data/train-00000-of-00001.parquet")) == gets == 1
    assert len([r for r in files.seen("GET") if r[1].endswith(".jsonl")]) == url_gets == 30
    # the sha256 recorded at first fetch is what the second checks the unpinned runs against
    assert {f["path"]: f["sha256"] for f in m["files"]} == {f["path"]: f["sha256"] for f in read_manifest("refadv")["files"]}


def test_a_cut_body_is_resumed_from_what_was_written(web):
    hub, _ = web
    name = "data/train-00000-of-00001.parquet"
    size = len(rf.refadv_repo()[name])
    hub.cut_after(name, size // 3, repo_id="dddraxxx/ref-adv-s", reset=True)  # the connection dies mid-file
    m = fetch("refadv", progress=False, backoff=0.01)
    (asked,) = [s[2] for s in hub.file_requests(name) if s[2]]  # the retry asked only for the rest
    start = int(asked.removeprefix("bytes=").removesuffix("-"))
    assert 0 < start <= size // 3  # from what the first attempt had written
    base = release_dir("refadv") / m["folder"]
    assert (base / "files" / name).read_bytes() == rf.refadv_repo()[name]


def test_a_file_with_the_wrong_sha256_is_refused(web, tmp_path, monkeypatch):
    hub, files = web
    name = "data/train-00000-of-00001.parquet"
    good = rf.refadv_repo()[name]
    hub.corrupt(name, good[:-1] + bytes([good[-1] ^ 1]), repo_id="dddraxxx/ref-adv-s")
    with pytest.raises(FetchError, match="sha256") as e:
        fetch("refadv", progress=False)
    assert "refused" in str(e.value) and "\n" not in str(e.value)
    assert not list(release_dir("refadv").rglob("train-00000-of-00001.parquet"))
    assert read_manifest("refadv") is None
    # a URL file whose bytes are not the released ones is refused the same way (in a fresh data home: the first
    # fetch placed the good runs already)
    monkeypatch.setenv("VLAMB_DATA", str(tmp_path / "other-home"))
    hub.corrupt(name, None, repo_id="dddraxxx/ref-adv-s")
    url = next(u for u in rf.url_files() if u.endswith("qwen25a3b_direct_predictions.jsonl"))
    good = rf.url_files()[url]
    files.corrupt(rf.url_path(url), good[:-2] + b"x\n")  # the pinned size, other bytes
    with pytest.raises(FetchError, match="qwen25a3b_direct_predictions.jsonl has sha256"):
        fetch("refadv", progress=False)
    # an unpinned run is checked against the git object id the listing gives
    monkeypatch.setenv("VLAMB_DATA", str(tmp_path / "third-home"))
    files.corrupt(rf.url_path(url), None)
    other = next(u for u in rf.url_files() if u.endswith("qwen3a235b_cot_predictions.jsonl"))
    files.corrupt(rf.url_path(other), rf.url_files()[other][:-2] + b"x\n")
    with pytest.raises(FetchError, match="qwen3a235b_cot_predictions.jsonl does not match the git object"):
        fetch("refadv", progress=False)


def test_gated_release_without_access_names_hf_token_and_the_page(web, monkeypatch):
    hub, _ = web
    with pytest.raises(FetchError) as e:
        fetch("vflute", progress=False)
    line = str(e.value)
    assert "\n" not in line and "HF_TOKEN" in line and f"{hub.endpoint}/datasets/ColumbiaNLP/V-FLUTE" in line
    m = fetch("vflute", token=hub.token, progress=False, models=False)
    assert m["complete"] and m["counts"] == {"rows": 723}
    from vlamb_nb.benchmarks.vflute.data import HUB_REVISION

    assert m["revision"] == HUB_REVISION
    assert [f["path"] for f in m["files"]] == ["data/test-00000-of-00001.parquet"]  # the test split only
    assert not hub.file_requests("data/train-00000-of-00001.parquet")
    from vlamb_nb.benchmarks.vflute import report

    data = report.notebook_data(None, profile="paper")
    assert len(data["pipeline"]) == 723 and data["pipeline"]["image"].notna().all()


def test_no_network_is_one_line_naming_from(tmp_path, monkeypatch):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    hubstub.point_client_at(monkeypatch, f"http://127.0.0.1:{port}", tmp_path / "hf")
    monkeypatch.setenv("VLAMB_DATA", str(tmp_path / "home"))
    monkeypatch.setenv("VLAMB_MIRRORS", f"*=http://127.0.0.1:{port}/")
    for paper in ("refadv", "racquet"):
        with pytest.raises(FetchError) as e:
            fetch(paper, progress=False)
        assert "cannot reach" in str(e.value) and "--from" in str(e.value) and "\n" not in str(e.value)


def test_a_dead_image_link_leaves_the_release_incomplete_until_accepted_and_is_retried_alone(web):
    _, files = web
    url = rf.racquet_urls()[3]
    files.remove(rf.url_path(url))  # a dead Flickr link: 404
    m = fetch("racquet", progress=False, models=False, backoff=0.01)
    assert not m["usable"] and not m["complete"] and m["missing"]["images"]["count"] == 1
    assert m["missing"]["images"]["first"] == ["general-5", "general-6"]  # the questions on that image
    assert "HTTP 404" in m["missing"]["images"]["why"]
    row = next(r for r in status() if r["paper"] == "racquet")
    assert row["state"] == "incomplete" and "general-5" in row["missing"]
    with pytest.raises(NotFetchedError, match="incomplete.*--accept-missing"):
        fetched("racquet")
    # accepted: the release is usable, its question left out and said so
    before = len(files.seen("GET"))
    m = fetch("racquet", progress=False, models=False, backoff=0.01, accept_missing=True)
    assert m["usable"] and not m["complete"] and not m["missing"]
    assert len(files.seen("GET")) == before + 1  # only the dead link was tried again
    (lo,) = m["left_out"]
    assert lo["kind"] == "missing" and lo["keys"] == [url] and lo["items"] == 2 and "accept-missing" in lo["why"]
    from vlamb_nb.benchmarks.racquet import report

    data = report.notebook_data(None, profile="paper")
    assert len(data["pipeline"]) == 738 and not {"general-5", "general-6"} & set(data["pipeline"]["id"])
    assert data["data"].n_loaded == 738 and data["data"].n_items == 740 and data["data"].left_out[0].items == 2
    # a later fetch (no flag) keeps the acceptance, retries only that image, and completes once it is back
    files.add(rf.url_path(url), rf.url_files()[url])
    before = len(files.seen("GET"))
    m = fetch("racquet", progress=False, models=False)
    assert m["complete"] and not m["left_out"]
    assert len(files.seen("GET")) == before + 1


def test_mucar_images_resolve_in_the_hub_layout_and_gaps_are_reported(stand_in_hub, static_server, tmp_path,
                                                                       monkeypatch, shared_data):
    from vlamb_nb.benchmarks.mucar.data import IMAGES_REVISION

    monkeypatch.setenv("VLAMB_DATA", str(tmp_path / "home"))
    repo = dict(rf.mucar_image_repo())
    repo.pop("1-1.jpg")
    stand_in_hub.add_repo("kevindragon221/MUCAR", repo, revision_sha=IMAGES_REVISION)
    for url, data in rf.url_files().items():
        static_server.add(rf.url_path(url), data)
    monkeypatch.setenv("VLAMB_MIRRORS", f"*={static_server.endpoint}/")
    m = fetch("mucar", progress=False)
    assert m["counts"] == {"queries": 1278, "pairs": 501}
    # an image the release does not declare missing: incomplete, named
    assert m["missing"]["images"]["keys"] == ["1-1"] and not m["usable"]
    assert m["missing"]["images"]["first"] == ["mucar-0"]  # the query that shows it
    # the known defect is data: named, left out, and not what makes it incomplete
    (lo,) = m["left_out"]
    assert lo["kind"] == "defect" and lo["n_keys"] == 22 and lo["items"] == 186
    assert m["revision"] == "c2410e1b3f229f6ebb3b0f46a3cdad80a8347a56"  # the records' commit


def test_counts_that_differ_are_an_error_unless_allowed(stand_in_hub, static_server, tmp_path, monkeypatch,
                                                        shared_data):
    from vlamb_nb.benchmarks.refadv.data import HUB_REVISION

    monkeypatch.setenv("VLAMB_DATA", str(tmp_path / "home"))
    stand_in_hub.add_repo("dddraxxx/ref-adv-s", rf.refadv_repo(1100), revision_sha=HUB_REVISION)
    for url, data in rf.url_files().items():
        static_server.add(rf.url_path(url), data)
    monkeypatch.setenv("VLAMB_MIRRORS", f"*={static_server.endpoint}/")
    with pytest.raises(FetchError, match="rows: expected 1,142, found 1,100"):
        fetch("refadv", progress=False)
    assert read_manifest("refadv") is None
    m = fetch("refadv", progress=False, allow_mismatch=True)
    assert m["n_items"] == 1100 and "1,100" in m["deviations"][0]
    assert fetched("refadv").identity.deviations == tuple(m["deviations"])


def test_from_imports_a_copy_and_verifies_it(web, tmp_path, shared_data):
    from huggingface_hub import snapshot_download

    from vlamb_nb.benchmarks.refadv.data import HUB_REVISION

    hub, _ = web
    # a hub cache made elsewhere, copied with the runs: the snapshot folder's name is the revision, each file a
    # link to a blob named by its sha256
    copy = tmp_path / "copy"
    snapshot_download("dddraxxx/ref-adv-s", repo_type="dataset", cache_dir=copy, revision=HUB_REVISION)
    (copy / "predictions").mkdir(parents=True)
    for name, data in rf.refadv_runs().items():
        (copy / "predictions" / name).write_bytes(data)
    gets = len(hub.seen("GET"))
    m = fetch("refadv", from_path=copy, progress=False)
    assert len(hub.seen("GET")) == gets  # nothing downloaded
    assert m["complete"] and m["revision"] == HUB_REVISION and m["how"].startswith("imported from")
    verified = {f["path"]: f["verified"] for f in m["files"]}
    assert verified["data/train-00000-of-00001.parquet"] == "the hub cache's blob name (sha256)"
    assert verified["predictions/qwen25a3b_direct_predictions.jsonl"] == "pinned sha256"
    assert verified["predictions/qwen3a2b_cot_predictions.jsonl"].startswith("unverified")  # nothing to check against
    # a link out of the copy is refused, and nothing is imported from outside it
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "racquet_general.jsonl").write_bytes((shared_data / "racquet" / "racquet_general.jsonl").read_bytes())
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "racquet_general.jsonl").symlink_to(outside / "racquet_general.jsonl")
    (linked / "racquet_bias.jsonl").write_bytes((shared_data / "racquet" / "racquet_bias.jsonl").read_bytes())
    with pytest.raises(FetchError, match="is a link out of") as e:
        fetch("racquet", from_path=linked, progress=False)
    assert "\n" not in str(e.value) and read_manifest("racquet") is None
    # released files that are not the released bytes are refused
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "racquet_general.jsonl").write_text("{}\n")
    (bad / "racquet_bias.jsonl").write_bytes((shared_data / "racquet" / "racquet_bias.jsonl").read_bytes())
    with pytest.raises(FetchError, match="racquet_general.jsonl has .* bytes|racquet_general.jsonl has sha256"):
        fetch("racquet", from_path=bad, progress=False)


def test_metric_models_go_to_the_hub_cache_one_weights_format(web, tmp_path):
    hub, _ = web
    m = fetch("vague", progress=False)
    assert m["counts"] == {"rows": 1677, "VCR": 1144, "Ego4D": 533} and m["complete"]
    (model,) = m["models"]
    assert model["repo"] == "roberta-large" and model["revision"] == hub.repos[("model", "roberta-large")].sha
    assert hub.file_requests("model.safetensors") and not hub.file_requests("pytorch_model.bin")
    from huggingface_hub import try_to_load_from_cache

    assert try_to_load_from_cache("roberta-large", "config.json") is not None


def test_a_metric_model_whose_commit_is_not_a_sha_is_recorded_as_an_error_not_a_revision(web):
    hub, _ = web
    hub.answer_sha("roberta-large", "main", repo_type="model")
    m = fetch("vague", progress=False)
    (model,) = m["models"]
    assert "revision" not in model and "not a 40-digit commit sha" in model["error"], model
    assert m["usable"]  # the data stays usable; the scorer's model is reported missing


def test_paper_profile_with_nothing_fetched_fails_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("VLAMB_DATA", str(tmp_path / "empty"))
    from vlamb_nb.benchmarks.mucar import report

    with pytest.raises(NotFetchedError, match=r"run `vlamb-nb data fetch mucar`"):
        report.notebook_data(None, profile="paper")
    # the offline profile still runs on a generated sample, and says so
    data = report.notebook_data(None, sample_dir=tmp_path / "s", profile="offline")
    assert data["data"].kind == "sample" and data["pipeline"].attrs["data"]["kind"] == "sample"


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vlamb_nb.cli", *args], env=env, capture_output=True, text=True,
                          timeout=300)


def test_cli_fetch_status_and_the_gated_line(web, tmp_path):
    hub, files = web
    env = {**os.environ, **hubstub.hub_env(hub.endpoint, tmp_path / "hf")}
    env.pop("HF_TOKEN", None)
    r = _cli(env, "data", "fetch", "vflute", "-q")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    (line,) = [x for x in r.stderr.splitlines() if x.strip()]
    assert "HF_TOKEN" in line and "ColumbiaNLP/V-FLUTE" in line
    r = _cli(env, "data", "fetch", "refadv", "-q")
    assert r.returncode == 0, r.stderr
    assert "complete" in r.stdout and "1,142 rows" in r.stdout
    assert "recorded at first fetch, not pinned: the sha256 of 25 files" in r.stdout
    r = _cli(env, "data", "status", "--json")
    rows = {x["paper"]: x for x in json.loads(r.stdout)["papers"]}
    assert rows["refadv"]["state"] == "complete" and rows["vflute"]["state"] == "not fetched"
    assert r.returncode == 0  # nothing fetched (V-FLUTE) is a state to report, not an error


@pytest.mark.slow
def test_reproduce_with_nothing_fetched_ranks_nothing_and_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("VLAMB_DATA", str(tmp_path / "empty"))
    monkeypatch.chdir(tmp_path)
    code = cli.main(["reproduce", "mucar", "--run-id", "r", "--runs-dir", str(tmp_path / "runs"),
                     "-p", "model=openai:acme/vlm-7b", "-p", "base_url=http://127.0.0.1:9/v1"])
    assert code == 1
    results = json.loads((tmp_path / "runs" / "r" / "results.json").read_text(encoding="utf-8"))
    assert "vlamb-nb data fetch mucar" in results["mucar"]["error"]
    from vlamb_nb import report_card

    card = report_card.from_run(tmp_path / "runs" / "r")
    assert card.papers["mucar"].startswith("failed") and "vlamb-nb data fetch mucar" in card.papers["mucar"]
    assert not [h for h in card.headlines if h.rank is not None]


@pytest.mark.slow
def test_two_served_models_on_the_fetched_release_every_item_sent_and_compared_with_the_mcnemar_p_they_imply(
        web, tmp_path, monkeypatch, capsys):
    """Fetch Ref-Adv-s and reproduce with a served model and no source (``--fetch``): every fetched item is sent
    and the report names the revision. A second served model on the first 40 rows, then `vlamb-nb compare
    --json`: the pair on the rows both answered has the McNemar p their answers imply."""
    import math

    n = 40
    rows = rf.refadv_rows()[:n]
    box = {r["normal_caption"]: (r["row_idx"], r["gt_bbox_xyxy"]) for r in rows}
    assert len(box) == n  # one expression per row, so the prompt names the row

    def answers(hit):
        def answer(prompt: str) -> str:
            row = next((v for e, v in box.items() if e in prompt), None)
            b = row[1] if row is not None and hit(row[0]) else [0, 0, 2, 2]
            return json.dumps([{"bbox_2d": [round(x) for x in b], "label": "target"}])
        return answer

    monkeypatch.chdir(tmp_path)
    runs, asked = {}, []
    for name, hit in (("a", lambda i: i % 2 == 0), ("b", lambda i: i % 3 == 0)):
        with ChatEndpoint(answers(hit)) as server:
            code = cli.main(["reproduce", "refadv", "--run-id", name, "--runs-dir", str(tmp_path / "runs"),
                             "-p", f"model=openai:acme/Qwen2.5-VL-7B-{name}", "-p", f"base_url={server.base_url}",
                             "-p", "settings=direct", "-p", "concurrency=32",
                             "-p", "n_resamples=200",  # the McNemar p checked here takes no resample
                             # the first run fetches the release itself and runs all of it
                             *(["--fetch"] if name == "a" else ["-p", f"limit={n}"])])
            asked = asked or server.prompts
        assert code == 0
        runs[name] = tmp_path / "runs" / name
    # the first run sent every fetched expression, and its report names the release's revision
    sha = web[0].repos[("dataset", "dddraxxx/ref-adv-s")].sha
    grounding = [p for p in asked if "bbox" in p.lower() or "bounding box" in p.lower()]
    expressions = {r["normal_caption"] for r in rf.refadv_rows()}
    assert {e for e in expressions if any(e in p for p in grounding)} == expressions
    report = (runs["a"] / "report.md").read_text(encoding="utf-8")
    assert f"hub:dddraxxx/ref-adv-s@{sha[:7]} · 1,142 of 1,142" in report
    # on the whole release all 30 released runs are compared row by row, the official table's rows beside them
    results = json.loads((runs["a"] / "results.json").read_text(encoding="utf-8"))
    overall = next(h for h in results["refadv"]["results"]["headline"] if h["slice"] == "overall")
    per_item = [c for c in overall["comparators"] if c["basis"] == "per-item"]
    assert len(per_item) == 30 and {c["n"] for c in per_item} == {1142}  # every released run
    # every published Ref-Adv-s model row has its released run now: none is left to a published value alone
    from vlamb_nb import reference

    published = set(reference.load("refadv", "Ref-Adv-s")["row"]) - {"Human Expert (High)", "Human Expert (Medium)"}
    assert {c["name"] for c in per_item} == published
    assert not [c for c in overall["comparators"] if c["basis"] == "published"]
    assert overall["rank"] is not None and overall["data"]["n_run"] == 1142
    # the two served models compared on the 40 rows both answered
    capsys.readouterr()
    assert cli.main(["compare", str(runs["a"]), str(runs["b"]), "--json", "--out", str(tmp_path / "cmp")]) == 0
    out = json.loads(capsys.readouterr().out)
    pairs = [p for p in out["pairs"] if p["paper"] == "refadv" and p["setting"] == "direct"]
    assert {p["slice"] for p in pairs} > {"overall"}  # each distractor bin is compared too
    pairs = [p for p in pairs if p["slice"] == "overall" and p["metric"] == "Acc@0.5"]
    assert len(pairs) == 1, out["pairs"]
    (pair,) = pairs
    a_hits = {r["row_idx"] for r in rows if r["row_idx"] % 2 == 0}
    b_hits = {r["row_idx"] for r in rows if r["row_idx"] % 3 == 0}
    only_a, only_b = len(a_hits - b_hits), len(b_hits - a_hits)  # 13 and 7 discordant rows
    assert pair["n"] == n and pair["diff"] == pytest.approx(100 * (len(a_hits) - len(b_hits)) / n)
    k, m = min(only_a, only_b), only_a + only_b
    exact = min(1.0, 2 * sum(math.comb(m, i) for i in range(k + 1)) / 2 ** m)
    assert pair["p"] == pytest.approx(exact)
    # both runs stood on the fetched release
    assert {(d or {}).get("revision") for m in out["models"] for d in m["data"].values()} == {sha}


# -- the "done when": MUCAR as really released ---------------------------------------------------------
def test_mucar_with_its_real_defect_is_fetched_usable_naming_the_22_ids_and_186_queries(web, tmp_path):
    """The stand-in image set has the real defect: no ``malay/N`` file for 22 ``image_id``s, both ``malay/N-1`` and
    ``malay/N-2``. The fetch exits 0 naming them; their queries are left out whole and the release is usable."""
    from vlamb_nb.benchmarks.mucar.data import AMBIGUOUS_IMAGE_IDS

    hub, _ = web
    env = {**os.environ, **hubstub.hub_env(hub.endpoint, tmp_path / "hf")}
    r = _cli(env, "data", "fetch", "mucar", "-q")
    assert r.returncode == 0, r.stderr
    assert "usable: 999 of 1,278 queries (279 left out)" in r.stdout
    assert "22 image_id values" in r.stdout and "186 queries name them" in r.stdout
    assert all(k in r.stdout for k in AMBIGUOUS_IMAGE_IDS)  # every one named
    m = read_manifest("mucar")
    (lo,) = m["left_out"]
    assert sorted(lo["keys"]) == sorted(AMBIGUOUS_IMAGE_IDS) and (lo["items"], lo["also"]) == (186, 93)
    assert lo["candidates"]["malay/42"] == {"malay/42-1": "images/malay/42-1.jpg", "malay/42-2": "images/malay/42-2.jpg"}
    row = next(x for x in status() if x["paper"] == "mucar")
    assert row["state"] == "usable: 999 of 1,278 queries" and "22 image_id values" in row["left_out"][0]
    # the paper profile runs the rest: statistics on every record, the pipeline without any query of a defect pair
    from vlamb_nb.benchmarks.mucar import report

    data = report.notebook_data(None, profile="paper")
    assert len(data["release"]) == 1278 and len(data["pipeline"]) == 999
    assert not set(data["pipeline"]["image_id"]) & set(AMBIGUOUS_IMAGE_IDS)
    assert data["data"].n_loaded == 999 and data["data"].n_items == 1278
    # a pair is left out whole under any grouping: by pair_id the 186 queries are their whole pairs
    from vlamb_nb.benchmarks.mucar.data import load_items
    from vlamb_nb.datahome import tag

    choice = fetched("mucar")
    by_pair = tag(load_items(choice.source, grouping="pair_id", images=choice.images), choice.identity)
    assert len(by_pair) == 1278 - 186


def _mucar_items():
    from vlamb_nb.benchmarks.mucar.data import load_items

    return load_items(rf.shared_file("mucar/data-all.json"))


def _publish_mucar_images(hub, files: dict[str, bytes]) -> None:
    from vlamb_nb.benchmarks.mucar.data import IMAGES_REVISION

    hub.add_repo("kevindragon221/MUCAR", files, revision_sha=IMAGES_REVISION)


def _usable_everywhere(m: dict) -> set[int]:
    """What the fetch, ``data status`` and the paper profile each say is usable."""
    from vlamb_nb.benchmarks.mucar.data import load_items
    from vlamb_nb.datahome import tag

    row = next(x for x in status() if x["paper"] == "mucar")
    choice = fetched("mucar")
    kept = tag(load_items(choice.source, images=choice.images), choice.identity)
    assert row["usable_items"] == m["n_usable"]
    return {m["n_usable"], int(row["state"].split(": ")[1].split(" of")[0].replace(",", "")), len(kept),
            kept.attrs["data"]["n_loaded"]}


def test_an_item_left_out_for_two_reasons_counts_once_in_fetch_status_and_the_paper_profile(web, capsys):
    """Images that only the 31 defect pairs use are dead and accepted as missing: their 54 queries are already left
    out with the defect's pairs, so fetch, ``data status`` and the paper profile all say 999 of 1,278 (not 945)."""
    from vlamb_nb.benchmarks.mucar.data import AMBIGUOUS_IMAGE_IDS

    hub, _ = web
    items = _mucar_items()
    in_defect_pairs = items["group"].isin(set(items.loc[items["image_id"].isin(AMBIGUOUS_IMAGE_IDS), "group"]))
    dead = sorted(set(items.loc[in_defect_pairs, "image_id"]) - set(items.loc[~in_defect_pairs, "image_id"])
                  - set(AMBIGUOUS_IMAGE_IDS))
    assert dead and items["image_id"].isin(dead).sum() == 54
    _publish_mucar_images(hub, {k: v for k, v in rf.mucar_image_repo().items() if k[:-4] not in dead})
    m = fetch("mucar", progress=False, models=False, accept_missing=True)
    assert m["state"] == "usable: 999 of 1,278 queries (279 left out)" and m["n_usable"] == 999
    defect, accepted = m["left_out"]
    assert (defect["kind"], defect["items"], defect["also"]) == ("defect", 186, 93)
    assert (accepted["kind"], accepted["items"], accepted["also"], sorted(accepted["keys"])) == ("missing", 0, 0, dead)
    assert _usable_everywhere(m) == {999}
    from vlamb_nb.cli import fetch_lines

    fetch_lines(m)
    out = capsys.readouterr().out
    assert "279 queries left out: 22 image_id values" in out
    assert f"no more queries left out: {len(dead)} image_id values" in out and "each counted once" in out


def test_a_new_ambiguous_id_is_a_defect_with_its_candidates_not_a_download_to_retry(web, capsys):
    """An ``image_id`` the release does not declare, with no file but two candidate files, is reported as a defect
    naming its candidates; its pairs are left out, and the release is usable without --accept-missing."""
    from vlamb_nb.benchmarks.mucar.data import AMBIGUOUS_IMAGE_IDS

    hub, _ = web
    items = _mucar_items()
    repo = dict(rf.mucar_image_repo())
    new = next(i for i in sorted(set(items["image_id"])) if i not in AMBIGUOUS_IMAGE_IDS and f"{i}-1.jpg" not in repo)
    del repo[f"{new}.jpg"]
    repo[f"{new}-1.jpg"], repo[f"{new}-2.jpg"] = rf.tiny_image(7_001), rf.tiny_image(7_002)
    _publish_mucar_images(hub, repo)
    m = fetch("mucar", progress=False, models=False)
    assert m["usable"] and not m["missing"], m["missing"]
    fresh = next(e for e in m["left_out"] if new in e["keys"])
    assert fresh["kind"] == "defect" and fresh["why"].startswith("new defect, not declared by the release")
    assert fresh["candidates"] == {new: {f"{new}-1": f"images/{new}-1.jpg", f"{new}-2": f"images/{new}-2.jpg"}}
    groups = set(items.loc[items["image_id"].isin({new, *AMBIGUOUS_IMAGE_IDS}), "group"])
    assert m["n_usable"] == 1278 - int(items["group"].isin(groups).sum()) < 999
    assert _usable_everywhere(m) == {m["n_usable"]}
    from vlamb_nb.cli import fetch_lines

    fetch_lines(m)
    out = capsys.readouterr().out
    assert f"left out: {m['n_items'] - m['n_usable'] - 279}" in out and f"1 image_id value ({new})" in out
    assert "could not be had" not in out and "--accept-missing" not in out


def test_a_declared_defect_absent_from_the_data_is_named_in_a_note(web, monkeypatch, capsys):
    import dataclasses

    from vlamb_nb.benchmarks.mucar.data import RELEASE

    (d,) = RELEASE.defects
    declared = dataclasses.replace(RELEASE, defects=(dataclasses.replace(
        d, keys={**d.keys, "malay/999": ("malay/999-1", "malay/999-2")}),))
    monkeypatch.setattr(sys.modules["vlamb_nb.releases.fetch"], "release", lambda paper: declared)
    m = fetch("mucar", progress=False, models=False)
    (note,) = [n for n in m["notes"] if "malay/999" in n]
    assert note.startswith("a known defect is not in this revision's items: 1 of its 23 image_id values (malay/999)")
    assert m["n_usable"] == 999  # the other 22 still leave their pairs out
    from vlamb_nb.cli import fetch_lines

    fetch_lines(m)
    assert "malay/999" in capsys.readouterr().out


@pytest.mark.slow
def test_reproduce_mucar_runs_the_rest_sends_no_guessed_image_and_the_report_says_what_was_left_out(
        web, tmp_path, monkeypatch):
    """The issue's "done when": after the fetch, ``reproduce mucar`` with a served model runs every usable query,
    sends no image for a query whose image_id names two files, and report.md says what was left out and why."""
    import hashlib

    from vlamb_nb.benchmarks.mucar.data import AMBIGUOUS_IMAGE_IDS

    assert cli.main(["data", "fetch", "mucar", "-q"]) == 0
    choice = fetched("mucar")
    from vlamb_nb.benchmarks.mucar import report as mucar_report

    data = mucar_report.notebook_data(None, profile="paper")
    kept, release = data["pipeline"], data["release"]
    left = release[~release["uid"].isin(set(kept["uid"]))]
    from vlamb_nb.images import load_image, model_image_bytes

    # what a model is sent for each file of the stand-in image set (MUCAR loads each image, then it is encoded)
    sha = {name.removesuffix(".jpg"): hashlib.sha256(model_image_bytes(load_image(b))[0]).hexdigest()
           for name, b in rf.mucar_image_repo().items()}
    kept_images = {sha[i] for i in kept["image_id"]}
    candidates = {sha[c] for cs in AMBIGUOUS_IMAGE_IDS.values() for c in cs}
    monkeypatch.chdir(tmp_path)
    with ChatEndpoint(lambda prompt: "Answer: A") as server:
        code = cli.main(["reproduce", "mucar", "--run-id", "r", "--runs-dir", str(tmp_path / "runs"),
                         "-p", "model=openai:acme/vlm-7b", "-p", f"base_url={server.base_url}", "-p", "settings=full",
                         "-p", "table4_settings=[]", "-p", "n_resamples=50", "-p", "concurrency=32"])
        prompts, images = list(server.prompts), list(server.images)
    results = json.loads((tmp_path / "runs" / "r" / "results.json").read_text(encoding="utf-8"))
    assert code == 0, results["mucar"]["error"]
    # every usable query was asked once, with its own image; none of a left-out pair, no candidate guessed
    sent = [h for imgs in images for h in imgs]
    assert len([i for i in images if i]) == len(kept) == 999
    assert set(sent) == kept_images and not (set(sent) & (candidates - kept_images))
    only_left = set(left["question"]) - set(kept["question"])
    assert only_left and not [q for q in only_left if any(q in p for p in prompts)]
    assert choice.identity.left_out[0].n_keys == 22
    # the report says what was left out and why, and the rank is on a subset
    report = (tmp_path / "runs" / "r" / "report.md").read_text(encoding="utf-8")
    assert "· 999 of 1,278 (279 left out)" in report
    assert "279 queries left out: 22 image_id values (malay/8, malay/9, malay/15, …): known defect of the release" in report
    assert "186 queries name them, 93 more are the rest of their groups" in report
    heads = results["mucar"]["results"]["headline"]
    assert {h["data"]["n_run"] for h in heads} == {999}
    assert all(h["data"]["left_out"][0]["items"] == 186 for h in heads)


@pytest.mark.slow
def test_the_example_card_and_comparison_take_every_released_run_present(web, tmp_path):
    """With the release fetched, the examples place the replayed run among all 30 released runs (the comparison: the
    20 direct ones) on the same rows; without it, the five beside the checkout (the committed figures)."""
    from vlamb_nb import compare
    from vlamb_nb.benchmarks.refadv.report import (
        EXAMPLE_COMPARISON,
        example_headlines,
        example_runs,
        predictions_dir,
    )

    before = compare.example(example_runs(), title=EXAMPLE_COMPARISON, n_resamples=100)
    assert len(before.models) == 4  # the four direct runs of the five beside the checkout
    fetch("refadv", progress=False)
    assert predictions_dir("paper").parent.parent == release_dir("refadv") / read_manifest("refadv")["folder"]
    after = compare.example(example_runs(), title=EXAMPLE_COMPARISON, n_resamples=100)
    assert len(after.models) == 20 and "refadv direct: 1142 items answered by every model" in after.notes
    rows, _ = example_headlines(n_resamples=100, workdir=tmp_path / "card")
    overall = next(h for h in rows if h.slice == "overall")
    per_item = [c for c in overall.comparators if c.basis == "per-item"]
    assert len(per_item) == 29 and {c.n for c in per_item} == {31}  # every other released run, on the demo's rows
