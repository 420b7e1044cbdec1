"""V-FLUTE items as fine-tuning data: the official conversations (:func:`training_examples`), masked token
batches (:func:`encode_batch`: loss on the assistant's tokens only, as LLaVA's ``preprocess_v1``), and the
notebook's train/test splits (:func:`demo_splits`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlamb_nb.benchmarks.vflute.finetune_recipe import ALL_SETTINGS, LABELS
from vlamb_nb.errors import DataError, SettingError

IGNORE_INDEX = -100


@dataclass
class Example:
    """One training conversation: a user turn (image + instruction) and the target answer."""

    id: str
    instruction: str
    target: str
    image: Any


def training_examples(items, *, setting: str = "full", prompt_source: str = "released",
                      target: str = "multi_task") -> list[Example]:
    """The official fine-tuning conversations of ``items`` (a loaded V-FLUTE split, e-SNLI-VE, or both: see
    :func:`stage_items`); ``target``: the explanation and the label, or App. J's label alone."""
    from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK
    from vlamb_nb.benchmarks.vflute.data import item_image
    from vlamb_nb.benchmarks.vflute.prompts import fill_claim, target_text, white_image

    if setting not in ALL_SETTINGS:
        raise SettingError(f"unknown fine-tuning setting {setting!r}; choose one of {', '.join(ALL_SETTINGS)}")
    if items is None or len(items) == 0:
        raise DataError("no training items")
    out = []
    for row_no, (_, row) in enumerate(items.iterrows()):
        iid = str(row.get("id", row_no))
        label = str(row.get("label", "")).strip().lower()
        if label not in LABELS:
            raise DataError(f"label must be one of {LABELS}, got {row.get('label')!r}", row=iid, field="label")
        expl = row.get("explanation")
        if not isinstance(expl, str) or not expl.strip():
            raise DataError("empty explanation: the target needs one", row=iid, field="explanation")
        claim = row.get("claim")
        if not isinstance(claim, str) or not claim.strip():
            raise DataError("empty claim", row=iid, field="claim")
        instruction = fill_claim(BENCHMARK.instruction(row, prompt_source), claim)
        image = white_image() if setting == "hypothesis_only" else item_image(row)
        out.append(Example(iid, instruction, target_text(expl, label, target), image))
    return out


def stage_items(setting: str, vflute=None, esnlive=None, *, seed: int = 42):
    """The training items of a recipe setting: V-FLUTE's train split (``full``, ``hypothesis_only``), e-SNLI-VE
    without neutral (``evil``: :func:`vlamb_nb.benchmarks.vflute.data.load_esnlive`), or both shuffled together
    (``evil_vflute``, as the official ``evil_vflute_train.json``: ``df.sample(frac=1, random_state=42)``)."""
    import pandas as pd

    if setting not in ALL_SETTINGS:
        raise SettingError(f"unknown fine-tuning setting {setting!r}; choose one of {', '.join(ALL_SETTINGS)}")
    need = {"full": ("V-FLUTE",), "hypothesis_only": ("V-FLUTE",), "evil": ("e-SNLI-VE",),
            "evil_vflute": ("e-SNLI-VE", "V-FLUTE")}[setting]
    given = {"V-FLUTE": vflute, "e-SNLI-VE": esnlive}
    missing = [n for n in need if given[n] is None or len(given[n]) == 0]
    if missing:
        raise DataError(f"the {setting} setting trains on {' + '.join(need)}: no {' or '.join(missing)} items given")
    if setting != "evil_vflute":
        return given[need[0]].reset_index(drop=True)
    both = pd.concat([esnlive, vflute], ignore_index=True)
    if both["id"].duplicated().any():
        raise DataError(f"an id is in both e-SNLI-VE and V-FLUTE: {both.loc[both['id'].duplicated(), 'id'].iloc[0]!r}")
    return both.sample(frac=1, random_state=seed).reset_index(drop=True)


def example_requests(example: Example):
    from vlamb_nb.models.base import IMAGE_SLOT, Request, assistant_message, user_message

    user = user_message(IMAGE_SLOT, example.instruction)
    prompt = Request(id=example.id, messages=[user], images=[example.image])
    full = Request(id=example.id, messages=[user, assistant_message(example.target)], images=[example.image])
    return prompt, full


def conversation_texts(hf, example: Example) -> tuple[str, str]:
    """(prompt, prompt + answer) as the model's chat template renders them.

    The full text must start with the prompt; a template that rewrites earlier turns when an
    answer follows falls back to prompt + target + end-of-sequence token.
    """
    prompt_req, full_req = example_requests(example)
    prompt = hf.prompt(prompt_req, add_generation_prompt=True)
    full = hf.prompt(full_req, add_generation_prompt=False)
    eos = hf.tokenizer.eos_token or ""
    if not full.startswith(prompt) or example.target not in full[len(prompt):]:
        full = prompt + example.target + eos
    elif eos and eos not in full[len(prompt) + len(example.target):]:
        full = full.rstrip() + eos  # the model must learn to stop after LABEL: ...
    return prompt, full


def encode_batch(hf, examples: Sequence[Example], *, max_length: int = 2048) -> dict[str, Any]:
    """Processor inputs for ``examples`` with ``labels``: -100 on the prompt, image tokens and padding.

    Prompt lengths come from tokenizing each prompt (with its image, so image tokens are counted)
    and comparing with the full sequence; where a token merges across the boundary the shared
    prefix is masked. A prompt longer than ``max_length`` is an error (cutting image tokens would
    break the model input); answers are cut at ``max_length`` as LLaVA's collator does.
    """
    from vlamb_nb.images import load_image

    texts, prompts, images = [], [], []
    for ex in examples:
        p, f = conversation_texts(hf, ex)
        prompts.append(p)
        texts.append(f)
        images.append(load_image(ex.image))
    tok = hf.tokenizer
    side = tok.padding_side
    tok.padding_side = "right"  # training: sequences start at position 0, padding at the end
    try:
        batch = hf.processor(**_processor_args(hf, texts, images), return_tensors="pt", padding=True)
    finally:
        tok.padding_side = side
    ids = batch["input_ids"]
    labels = ids.clone()
    mask = batch.get("attention_mask")
    if mask is not None:
        labels[mask == 0] = IGNORE_INDEX
    for i, (ex, p, img) in enumerate(zip(examples, prompts, images, strict=True)):
        p_ids = hf.processor(**_processor_args(hf, [p], [img]), return_tensors="pt")["input_ids"][0]
        n = int(p_ids.shape[0])
        if n > max_length:
            raise DataError(f"prompt is {n} tokens, longer than max_length={max_length}", row=ex.id)
        same = (ids[i, :n] == p_ids[: ids.shape[1]]).tolist()
        shared = same.index(False) if False in same else n
        labels[i, :shared] = IGNORE_INDEX
        if not (labels[i] != IGNORE_INDEX).any():
            raise DataError("no answer tokens left to learn from after masking the prompt", row=ex.id)
    out = dict(batch)
    out["labels"] = labels
    if ids.shape[1] > max_length:
        for key in ("input_ids", "attention_mask", "labels", "token_type_ids", "mm_token_type_ids"):
            if key in out:
                out[key] = out[key][:, :max_length]
    return out


def esnlive_items(source: str | os.PathLike | None = None, *, profile: str = "offline", n: int = 12, seed: int = 0,
                  images: str | os.PathLike | None = None) -> tuple[Any, str] | tuple[None, str]:
    """(e-SNLI-VE train items without neutral, label) for the e-ViL stages: the e-ViL release's files given as
    ``source`` (checked as :func:`~vlamb_nb.benchmarks.vflute.data.load_esnlive` checks them, the paper's counts
    included), else, offline, a generated sample in the same layout; under the paper profile without ``source``,
    ``(None, why)``: the stages are not run on generated data."""
    from vlamb_nb.benchmarks.vflute.data import load_esnlive, write_esnlive_sample
    from vlamb_nb.paths import sample_dir

    if source is not None:
        return load_esnlive(source, images=images), "given e-SNLI-VE files"
    if profile != "offline":
        return None, ("not run: the e-ViL rows train on e-SNLI-VE (give esnlive=, the e-ViL release's "
                      "esnlive_{train,dev}.csv with flickr30k_images/); a generated sample belongs to the offline profile")
    folder = write_esnlive_sample(sample_dir("vflute", n, seed, kind="esnlive-sample"), n=n, seed=seed)
    return load_esnlive(folder, allow_mismatch=True), f"generated e-SNLI-VE sample (seed={seed})"


def _processor_args(hf, texts: list[str], images: list[Any]) -> dict[str, Any]:
    ims = [[im] for im in images] if hf.family.nested_images else list(images)
    return {"text": texts, "images": ims}


def demo_splits(source: str | os.PathLike | None = None, *, n_train: int | None = 8, n_test: int | None = 4,
                seed: int = 0, profile: str = "offline") -> tuple[Any, Any, str]:
    """(train items, test items, label): the given V-FLUTE files, else, under the offline profile only, a generated
    sample with images (the released data beside the checkout holds only the test split). Under the paper profile
    a run without ``source`` is refused in one line: a model trained on a generated sample is no paper row."""
    from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK
    from vlamb_nb.paths import sample_dir

    if source is None and profile != "offline":
        raise SettingError("the paper's fine-tuning trains on V-FLUTE's train split: give source= (a folder with "
                           "vflute-v2-{train,valid,test}.{json,csv} and the images); a generated sample belongs to "
                           "the offline profile")
    if source is None:
        n = max(4, n_test or 4)
        folder = BENCHMARK.make_sample(sample_dir("vflute", n, seed, kind="qlora-sample"), n=n, seed=seed)
        label = f"generated sample (seed={seed})"
    else:
        folder, label = Path(source), "given files"
    train_items = BENCHMARK.load(folder, split="train")
    test_items = BENCHMARK.load(folder, split="test")
    if n_train is not None:
        train_items = train_items.head(n_train)
    if n_test is not None:
        test_items = test_items.head(n_test)
    train_items, test_items = train_items.reset_index(drop=True), test_items.reset_index(drop=True)
    if source is None:  # a generated sample says so wherever its numbers go (never compared with the paper's)
        from vlamb_nb.datahome import sample_identity, tag

        test_items = tag(test_items, sample_identity("vflute", n_items=len(test_items), seed=seed))
    return train_items, test_items, label
