"""The annotator's state machine: resume, skip, never overwrite, files from other tools."""

from __future__ import annotations

import pandas as pd
import pytest

from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.interactive.annotate import AlreadyLabelledError, Annotator, read_labels


def _rows(n=4):
    return pd.DataFrame({"id": [f"bias-{i}" for i in range(1, n + 1)], "model": "m", "setting": "direct",
                         "question": "What is the tidy person wearing?", "response": [f"r{i}" for i in range(n)]})


def test_labels_append_and_resume_where_it_stopped(tmp_path):
    path = tmp_path / "labels.csv"
    a = Annotator(_rows(), path, annotator="ann1")
    assert a.current["id"] == "bias-1"
    a.label("Stereotypical")
    a.label("Explicit")
    assert a.progress() == (2, 4)
    # a new annotator on the same file (a kernel restart) starts at the first unlabelled row
    b = Annotator(_rows(), path)
    assert b.current["id"] == "bias-3" and b.progress() == (2, 4)
    b.label("Anti-stereotypical")
    b.label("Stereotypical")
    assert b.finished and b.current is None
    df = read_labels(path)
    assert list(df["label"]) == ["Stereotypical", "Explicit", "Anti-stereotypical", "Stereotypical"]
    assert list(df["annotator"]) == ["ann1", "ann1", "", ""]
    with pytest.raises(SettingError):
        b.label("Explicit")


def test_never_overwrites_a_label_written_elsewhere(tmp_path):
    path = tmp_path / "labels.csv"
    a = Annotator(_rows(2), path)
    other = Annotator(_rows(2), path)  # a second window on the same file
    a.label("Explicit")
    with pytest.raises(AlreadyLabelledError):
        other.label("Stereotypical")  # other still shows bias-1, which a labelled meanwhile
    assert other.current["id"] == "bias-2"
    assert read_labels(path)["label"].tolist() == ["Explicit"]
    before = path.read_text()
    other.label("Anti-stereotypical")
    assert path.read_text().startswith(before)  # appended, nothing rewritten


def test_skip_comes_back_and_bad_labels_refused(tmp_path):
    a = Annotator(_rows(3), tmp_path / "l.csv")
    a.skip()
    assert a.current["id"] == "bias-2"
    a.label("Explicit")
    a.label("Explicit")
    assert a.current["id"] == "bias-1"  # the skipped row returns at the end
    with pytest.raises(SettingError):
        a.label("Neutral")
    labels = a.frame()["label"]
    assert labels.isna().tolist() == [True, False, False] and labels.iloc[1] == "Explicit"


def test_files_from_other_tools(tmp_path):
    p = tmp_path / "other.csv"
    p.write_text("id,label\nbias-1,Stereotypical\nbias-2,Explicit")  # no model/setting, no final newline
    df = read_labels(p, labels=("Explicit", "Stereotypical", "Anti-stereotypical"))
    assert df["key"].tolist() == ["bias-1||", "bias-2||"]
    rows = _rows(3).assign(model="", setting="")
    a = Annotator(rows, p)
    assert a.current["id"] == "bias-3"
    a.label("Anti-stereotypical")
    assert read_labels(p)["label"].tolist() == ["Stereotypical", "Explicit", "Anti-stereotypical"]
    bad = tmp_path / "bad.csv"
    bad.write_text("id,label\nbias-1,Stereotypical\nbias-1,Explicit\n")
    with pytest.raises(DataError, match="two different labels"):
        read_labels(bad)
    with pytest.raises(DataError, match="row 2"):
        p2 = tmp_path / "bad2.csv"
        p2.write_text("id,label\nbias-1,Maybe\n")
        read_labels(p2, labels=("Explicit",))
    with pytest.raises(DataError, match="'label'"):
        p3 = tmp_path / "bad3.csv"
        p3.write_text("id,answer\nbias-1,x\n")
        read_labels(p3)


def test_widget_buttons_drive_the_state_machine(tmp_path):
    pytest.importorskip("ipywidgets")
    from PIL import Image

    img = tmp_path / "a.png"
    Image.new("RGB", (8, 8), (255, 0, 0)).save(img)
    rows = _rows(2).assign(image=[str(img), str(tmp_path / "missing.png")])
    a = Annotator(rows, tmp_path / "l.csv")
    box = a.widget()
    assert box.children[1].value[:4] == b"\x89PNG"
    box.buttons["Stereotypical"].click()
    assert "missing" in box.children[2].value  # an unavailable image is reported, not a crash
    box.buttons["Explicit"].click()
    assert a.finished and box.buttons["Explicit"].disabled
    assert read_labels(tmp_path / "l.csv")["label"].tolist() == ["Stereotypical", "Explicit"]


def test_extra_key_columns_resume_and_are_stored(tmp_path):
    """Sampled responses (several per item) are keyed by a sample index too: resume must see them."""
    rows = pd.DataFrame({"id": ["1", "1", "2"], "model": ["m"] * 3, "setting": ["sampling"] * 3, "sample": [0, 1, 0],
                         "question": ["q"] * 3, "response": ["a", "b", "c"]})
    path = tmp_path / "labels.csv"
    keys = ("id", "model", "setting", "sample")
    first = Annotator(rows, path, key_columns=keys)
    first.label("Explicit")
    again = Annotator(rows, path, key_columns=keys)
    assert again.progress() == (1, 3) and again.current["sample"] == 1
    again.label("Stereotypical")
    assert "sample" in path.read_text().splitlines()[0].split(",")
    labels = read_labels(path, key_columns=keys)
    assert dict(zip(labels["key"], labels["label"], strict=True)) == {"1|m|sampling|0": "Explicit",
                                                                     "1|m|sampling|1": "Stereotypical"}


def test_the_annotator_shows_the_stereotype_target_of_a_bias_row():
    from vlamb_nb.interactive.annotate import hint_html

    html = hint_html({"adjective": "tidy", "stereotype_target": "white"})
    assert "tidy" in html and "white" in html and "Stereotypical" in html
    assert hint_html({"question": "What is it?"}) == ""  # GENERAL rows: no hint
