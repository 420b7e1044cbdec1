"""Figures say what they are drawn from, and ``--update-figures`` never lets a generated sample replace released data.

Also: an uncached metric model fails at once offline, and ``data status`` with nothing fetched is not an error.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pandas as pd
import pytest

from vlamb_nb.datahome import sample_identity, tag
from vlamb_nb.errors import NotAvailableError
from vlamb_nb.plots import FigureData, figure_data, new_figure, read_figure_data, save_figure
from vlamb_nb.reproduce import refresh_figures


def _fig(title: str = "x"):
    fig, ax = new_figure(2.0, 1.5)
    ax.plot([0, 1], [0, 1])
    ax.set_title(title)
    return fig


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.texts]


def test_a_release_figure_carries_its_data_in_the_image_and_the_file(tmp_path):
    fig = _fig()
    save_figure(fig, "vflute", "lengths", directory=tmp_path,
                data=FigureData("release", "V-FLUTE released test split, n = 723"))
    png = tmp_path / "vflute" / "lengths.png"
    assert png.is_file() and (tmp_path / "vflute" / "lengths.pdf").is_file()
    assert read_figure_data(png) == FigureData("release", "V-FLUTE released test split, n = 723")
    assert "data: V-FLUTE released test split, n = 723" in _texts(fig)
    assert b"V-FLUTE released test split" in (tmp_path / "vflute" / "lengths.pdf").read_bytes()


def test_a_figure_of_a_generated_sample_is_a_stamped_demo(tmp_path):
    items = tag(pd.DataFrame({"id": ["a", "b", "c"]}), sample_identity("mucar", n_items=3, seed=1))
    fig = _fig()
    save_figure(fig, "mucar", "fig3", directory=tmp_path, data=items)
    assert not (tmp_path / "mucar" / "fig3.png").exists()
    png = tmp_path / "mucar" / "demo" / "fig3.png"
    assert read_figure_data(png) == FigureData("sample", "generated sample, n = 3")
    assert "data: generated sample, n = 3" in _texts(fig)
    assert any("generated sample data" in t for t in _texts(fig))


def test_figure_data_reads_what_a_notebook_calls_its_data():
    frame = pd.DataFrame({"id": range(5)})
    assert figure_data(frame, described="released test split (beside the checkout)").kind == "release"
    assert figure_data(frame, described="generated sample (n=8, seed=0)") == FigureData("sample",
                                                                                       "generated sample, n = 5")
    assert figure_data(frame, described="data-all.json", kind="sample").sample
    assert figure_data(frame) is None and figure_data(None) is None


def _save(directory, name, kind, text, demo=False):
    save_figure(_fig(text), "p", name, directory=directory, data=FigureData(kind, text), demo=demo)


def test_update_figures_keeps_release_figures_a_sample_run_drew_or_could_not_draw(tmp_path):
    committed, run = tmp_path / "figures", tmp_path / "run"
    _save(committed, "from_release", "release", "the release, n = 723")
    _save(committed, "official_only", "release", "released runs (5)")
    _save(committed, "reference", "reference", "published counts")
    _save(committed, "stale", "reference", "published counts")
    before = {p.name: p.read_bytes() for p in (committed / "p").glob("*.png")}
    _save(run, "from_release", "sample", "generated sample, n = 8")  # lands in demo/
    _save(run, "reference", "reference", "published counts, redrawn")
    kept: list[str] = []
    copied = refresh_figures(["p"], run, committed, kept)
    names = sorted(p.name for p in (committed / "p").glob("*.png"))
    assert names == ["from_release.png", "official_only.png", "reference.png"]  # stale: no longer drawn, removed
    assert (committed / "p" / "from_release.png").read_bytes() == before["from_release.png"]
    assert (committed / "p" / "official_only.png").read_bytes() == before["official_only.png"]
    assert (committed / "p" / "reference.png").read_bytes() != before["reference.png"]  # redrawn: replaced
    assert copied == 2  # reference.{png,pdf}
    assert sorted(kept) == [
        "kept figures/p/from_release.png: drawn from the release, n = 723; this run drew it from generated "
        "sample, n = 8",
        "kept figures/p/official_only.png: drawn from released runs (5); this run did not draw it (its data was "
        "not there)"]


def test_update_figures_replaces_a_release_figure_redrawn_from_the_release(tmp_path):
    committed, run = tmp_path / "figures", tmp_path / "run"
    _save(committed, "f", "release", "the release, rev a")
    _save(run, "f", "release", "the release, rev b")
    kept: list[str] = []
    assert refresh_figures(["p"], run, committed, kept) == 2 and kept == []
    assert read_figure_data(committed / "p" / "f.png").text == "the release, rev b"


def test_an_uncached_metric_model_fails_at_once_offline(tmp_path, monkeypatch):
    from vlamb_nb.hubcache import require_model

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(NotAvailableError, match="not in the local Hugging Face cache and HF_HUB_OFFLINE is set"):
        require_model("no-such-org/no-such-model", what="BERTScore model")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    import socket

    with socket.socket() as s:  # a port nothing listens on: refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    t0 = time.perf_counter()
    with pytest.raises(NotAvailableError, match=f"127.0.0.1:{port} cannot be reached"):
        require_model("no-such-org/no-such-model", what="BERTScore model")
    assert time.perf_counter() - t0 < 5
    require_model(str(tmp_path), what="a local folder")  # a folder is always usable


def test_vague_bertscore_without_its_model_is_one_line_at_once(tmp_path, monkeypatch):
    from vlamb_nb.benchmarks.vague import score as S

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    with pytest.raises(NotAvailableError, match="roberta-large.*use bertscore='minilm'"):
        S.bertscore_f1(["a cat"], ["a dog"], model="roberta-large")
    assert time.perf_counter() - t0 < 5


def test_data_status_with_nothing_fetched_exits_0(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "vlamb_nb.cli", "data", "status"], capture_output=True, text=True,
                          env={"VLAMB_DATA": str(tmp_path / "empty"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert "not fetched" in proc.stdout and "Traceback" not in proc.stderr


def test_a_generated_sample_is_named_by_the_sha256_of_its_items(tmp_path):
    """A sample has no release files: its data identity names its items as loaded (a file an item names by its
    bytes), the same in any folder, another for another seed; the page's provenance block shows it."""
    from vlamb_nb.benchmarks.vague import report as vague
    from vlamb_nb.datahome import items_sha256
    from vlamb_nb.report_html import provenance_view

    a = vague.notebook_data(None, sample_dir=tmp_path / "a", seed=0, profile="offline")["data"]
    b = vague.notebook_data(None, sample_dir=tmp_path / "b", seed=0, profile="offline")["data"]
    c = vague.notebook_data(None, sample_dir=tmp_path / "c", seed=1, profile="offline")["data"]
    assert a.kind == "sample" and len(a.sha256) == 64
    assert a.sha256 == b.sha256 != c.sha256
    image = tmp_path / "x.png"
    image.write_bytes(b"one")
    frame = pd.DataFrame({"id": ["1"], "image": [str(image)]})
    before = items_sha256(frame)
    image.write_bytes(b"two")  # the file an item names changed: another sample
    assert items_sha256(frame) != before
    view = provenance_view({"environment": {"commit": "abc"}}, [("vague", a.to_dict())])
    assert view["data"] == [{"paper": "vague", "release": a.release, "revision": "–", "sha256": a.sha256}]


@pytest.mark.parametrize("paper", ["vague", "mucar", "vflute", "refadv", "racquet"])
def test_every_papers_sample_has_one_digest_in_any_run_folder(paper, tmp_path, monkeypatch):
    """Two runs of one configuration draw the same sample into their own run folders: its data identity is the
    same (an image root is named by its files, not by where it lies), so the runs compare as runs of one data."""
    from vlamb_nb import get_benchmark

    bench = get_benchmark(paper)
    digests = []
    for run in ("a", "b"):
        monkeypatch.setenv("VLAMB_RUN_DIR", str(tmp_path / run))
        digests.append(bench.notebook_items(None, profile="offline", n=4, seed=0).attrs["data"]["sha256"])
    assert digests[0] == digests[1] and len(digests[0]) == 64


def test_a_folder_an_item_names_is_digested_by_its_files(tmp_path):
    from vlamb_nb.datahome import items_sha256

    root = tmp_path / "images"
    root.mkdir()
    (root / "1.png").write_bytes(b"one")
    frame = pd.DataFrame({"id": ["1"], "image": ["1.png"], "image_root": [str(root)]})
    before = items_sha256(frame)
    moved = tmp_path / "elsewhere"
    root.rename(moved)
    assert items_sha256(frame.assign(image_root=str(moved))) == before  # the same files in another folder
    outside = tmp_path / "outside.txt"
    outside.write_text("one")
    (moved / "link").symlink_to(outside)  # a link out of the folder is not its content
    assert items_sha256(frame.assign(image_root=str(moved))) == before
    (moved / "1.png").write_bytes(b"two")
    assert items_sha256(frame.assign(image_root=str(moved))) != before  # another image: another sample
