"""Explanation scorers: the interface, the labelled offline substitute, the paper scorer failing clearly offline."""

from __future__ import annotations

import pytest

from vlamb_nb.errors import DataError, NotAvailableError, SettingError
from vlamb_nb.scorers import explanation as es


def test_none_scorer_passes_everything():
    s = es.get_scorer("none")
    assert s.score(["a", ""], ["b", "c"]) == [1.0, 1.0]
    assert isinstance(s, es.ExplanationScorer)
    with pytest.raises(DataError):
        s.score(["a"], ["b", "c"])


@pytest.mark.slow
def test_minilm_substitute_is_labelled_and_discriminates():
    s = es.get_scorer("minilm")
    info = es.scorer_info(s)
    assert info["substitute"] is True and "SUBSTITUTE" in info["description"]
    ref = "The image shows a man running through heavy rain, so the claim about a sunny day is contradicted."
    scores = s.score([ref, "A bowl of fruit on a kitchen table.", ""], [ref] * 3)
    assert scores[0] > 0.99
    assert scores[0] > scores[1] > scores[2] == 0.0  # empty explanation scores 0, as bert-score defines it
    assert scores[1] < 0.9


def test_paper_scorer_fails_clearly_offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty cache: nothing can be found, nothing is downloaded
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(NotAvailableError, match="deberta-xlarge-mnli|bleurt"):
        es.get_scorer("paper").score(["a"], ["b"])
    assert es.get_scorer("auto").substitute is True  # auto falls back to the labelled substitute


def test_unknown_scorer():
    with pytest.raises(SettingError):
        es.get_scorer("rouge")
    with pytest.raises(SettingError):
        es.get_scorer(object())
