"""QLoRA fine-tuning of a vision-language model on V-FLUTE, with the paper's LoRA recipe.

Read top to bottom::

    items  = BENCHMARK.load(folder, split="train")
    result = train("llava-hf/llava-1.5-7b-hf", items, "runs/vf")      # 4-bit base + LoRA, paper settings
    model  = load_finetuned(result.adapter_dir)                        # base + adapter, a vlamb_nb model
    scored = BENCHMARK.evaluate(model, test_items, "zero_shot")

The paper (App. D, and the official LLaVA scripts ``scripts/vflute/*.sh``) trained LLaVA-1.5-7B
with LoRA r=128, alpha=256 on a bf16 base over 4 GPUs. Here the base is 4-bit NF4 (QLoRA: the
recipe the same LLaVA training code offers with ``--bits 4``), so a 7B model trains on one GPU.
Every hyperparameter is data (:data:`PAPER_RECIPE`, with its provenance), every difference
between a run and the paper is a :class:`~vlamb_nb.meta.Deviation` saved next to the adapter.

Training examples are the official conversation: a user turn with the image and the
Table-8 instruction (claim in double quotes), and the assistant target
``"{explanation}\\nLABEL: {label}"``. Only the assistant's tokens carry loss (the prompt,
image tokens and padding are masked with -100), as in LLaVA's ``preprocess_v1``.

Long runs survive interruption: a checkpoint (adapter, optimizer, scheduler, losses) is written
every epoch (or every ``save_steps``), and ``train`` resumes from the latest one.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.meta import Deviation

IGNORE_INDEX = -100
RECIPE_FILE = "vlamb_qlora.json"
STATE_FILE = "trainer_state.pt"
LABELS = ("entailment", "contradiction")
SETTINGS = ("full", "hypothesis_only")

# Projector (vision → language) module names across families; trained in full like LLaVA's mm_projector.
PROJECTOR_NAMES = ("multi_modal_projector", "merger", "connector")
# Modules that never get LoRA: the vision tower, the projector, the output head (LLaVA find_all_linear_names).
NOT_LORA = ("visual", "vision", "multi_modal_projector", "merger", "connector", "image_newline", "lm_head")


# --------------------------------------------------------------------------------------------------
# the recipe, as data
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hyperparameter:
    """One setting of the paper's fine-tuning run and where it comes from."""

    name: str
    value: Any
    provenance: str


_APP_D = "paper App. D"
_SCRIPT = "official LLaVA fork, scripts/vflute/ft_lora_vflute_v2.sh"
_LLAVA = "LLaVA llava/train/train.py default (the V-FLUTE scripts do not set it)"

PAPER_RECIPE: tuple[Hyperparameter, ...] = (
    Hyperparameter("base_model", "liuhaotian/llava-v1.5-7b", f"{_SCRIPT} --model_name_or_path (inferred)"),
    Hyperparameter("vision_tower", "openai/clip-vit-large-patch14-336", _SCRIPT),
    Hyperparameter("lora_r", 128, f"{_APP_D}; {_SCRIPT}"),
    Hyperparameter("lora_alpha", 256, f"{_APP_D}; {_SCRIPT}"),
    Hyperparameter("lora_dropout", 0.05, _LLAVA),
    Hyperparameter("lora_bias", "none", _LLAVA),
    Hyperparameter("lora_targets", "every linear layer of the language model (not vision tower, projector, "
                                   "lm_head)", "LLaVA find_all_linear_names"),
    Hyperparameter("train_projector", True, "LLaVA initialize_vision_modules re-enables mm_projector gradients "
                                            "after LoRA; mm_projector_lr is set"),
    Hyperparameter("learning_rate", 2e-5, f"{_APP_D}; {_SCRIPT}"),
    Hyperparameter("projector_lr", 2e-5, f"{_APP_D} (mm_projector_lr); {_SCRIPT}"),
    Hyperparameter("weight_decay", 0.0, _SCRIPT),
    Hyperparameter("warmup_ratio", 0.03, f"{_APP_D}; {_SCRIPT}"),
    Hyperparameter("lr_scheduler", "cosine", f"{_APP_D}; {_SCRIPT}"),
    Hyperparameter("optimizer", "adamw_torch", "LLaVA TrainingArguments default"),
    Hyperparameter("max_grad_norm", 1.0, "transformers Trainer default (LLaVA uses the Trainer)"),
    Hyperparameter("epochs", 3, f"{_APP_D} prose; {_SCRIPT} (the App. D list also says 3 and '10 for VFLUTE')"),
    Hyperparameter("epochs_hypothesis_only", 10, f"{_APP_D} prose; scripts/vflute/ft_lora_vflute_noImage.sh"),
    Hyperparameter("checkpoint_used", "checkpoint-144 (end of epoch 2 of 3, picked on validation)",
                   "released run names; 4,578 / 64 = 72 steps per epoch (inferred)"),
    Hyperparameter("per_device_batch", 16, _SCRIPT),
    Hyperparameter("devices", 4, "paper App. D (4x A100 40GB)"),
    Hyperparameter("gradient_accumulation", 1, _SCRIPT),
    Hyperparameter("effective_batch", 64, "16 per device x 4 GPUs x 1 (inferred)"),
    Hyperparameter("seed", 42, _SCRIPT),
    Hyperparameter("model_max_length", 2048, _SCRIPT),
    Hyperparameter("gradient_checkpointing", True, _SCRIPT),
    Hyperparameter("precision", "bf16 weights and compute, tf32", _SCRIPT),
    Hyperparameter("quantization", "none (16-bit LoRA)", "paper never mentions quantization; --bits 16 default"),
    Hyperparameter("image_aspect_ratio", "pad (to a square in the image mean colour)", _SCRIPT),
    Hyperparameter("conversation", "llava_v1 (--version v1)", _SCRIPT),
    Hyperparameter("target", '"{explanation}\\nLABEL: {label}"', "official convert_to_llava_format.ipynb"),
    Hyperparameter("loss_on", "assistant tokens only", "LLaVA preprocess_v1 masks the human turns"),
)


def recipe() -> dict[str, Any]:
    """The paper's settings by name."""
    return {h.name: h.value for h in PAPER_RECIPE}


def recipe_table():
    """The paper's recipe as a DataFrame (``name, value, provenance``) for notebooks and reports."""
    import pandas as pd

    return pd.DataFrame([{"name": h.name, "value": str(h.value), "provenance": h.provenance} for h in PAPER_RECIPE])


@dataclass(frozen=True)
class QLoRAConfig:
    """One run's settings. Defaults are the paper's; ``batch_size * grad_accum`` = its effective batch 64."""

    lora_r: int = 128
    lora_alpha: int = 256
    lora_dropout: float = 0.05
    learning_rate: float = 2e-5
    projector_lr: float = 2e-5
    weight_decay: float = 0.0
    warmup_ratio: float = 0.03
    lr_scheduler: str = "cosine"
    max_grad_norm: float = 1.0
    epochs: int = 3
    batch_size: int = 16
    grad_accum: int = 4  # one device instead of the paper's four
    seed: int = 42
    max_length: int = 2048
    gradient_checkpointing: bool = True
    train_projector: bool = True
    setting: str = "full"  # or "hypothesis_only": a white square instead of every image (the −Image run)
    prompt_source: str = "released"  # the released instruction of each item, or the official seeded draw
    max_steps: int | None = None  # stop early (demos, smoke tests); None = the epochs
    save_steps: int | None = None  # checkpoint every n optimizer steps; None = every epoch (as the paper)
    quantization: str | None = "4bit"

    def __post_init__(self) -> None:
        if self.setting not in SETTINGS:
            raise SettingError(f"unknown fine-tuning setting {self.setting!r}; choose one of {', '.join(SETTINGS)}")
        if self.lr_scheduler not in ("cosine", "constant"):
            raise SettingError(f"lr_scheduler must be 'cosine' or 'constant', got {self.lr_scheduler!r}")
        for name in ("lora_r", "epochs", "batch_size", "grad_accum", "max_length"):
            if int(getattr(self, name)) < 1:
                raise SettingError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if self.max_steps is not None and self.max_steps < 1:
            raise SettingError(f"max_steps must be >= 1 or None, got {self.max_steps!r}")
        if not 0 <= self.warmup_ratio < 1:
            raise SettingError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio!r}")
        if self.quantization not in ("4bit", "8bit", None):
            raise SettingError(f"unknown quantization {self.quantization!r}; use '4bit', '8bit' or None")

    @classmethod
    def paper(cls, setting: str = "full", **overrides: Any) -> QLoRAConfig:
        """The paper's run (10 epochs for the hypothesis-only ablation), with ``overrides``."""
        if setting == "hypothesis_only":
            overrides.setdefault("epochs", recipe()["epochs_hypothesis_only"])
        return cls(setting=setting, **overrides)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def deviations(config: QLoRAConfig, *, base_model: str = "", device: str = "cpu",
               compute_dtype: str = "float32", chat_template: str = "the checkpoint's chat template",
               trained_projector: bool | None = None) -> list[Deviation]:
    """Every way a run with ``config`` differs from the paper's fine-tuning."""
    paper = recipe()
    out: list[Deviation] = []
    affects = "fine-tuned rows of Table 4"
    if config.quantization is not None:
        ours = "4-bit NF4 base with double quantization (QLoRA)" if config.quantization == "4bit" else "8-bit base"
        out.append(Deviation("fine-tuning precision", "16-bit base (bf16) + LoRA", ours, affects))
    if base_model and base_model != paper["base_model"]:
        out.append(Deviation("base model", paper["base_model"], base_model, affects))
    if device != "cuda" or compute_dtype != "bfloat16":
        out.append(Deviation("hardware", "4x A100 40GB, bf16 compute", f"{device}, {compute_dtype} compute", affects))
    eff = config.batch_size * config.grad_accum
    if eff != paper["effective_batch"]:
        out.append(Deviation("effective batch", "64 (16 per device x 4 GPUs)",
                             f"{eff} ({config.batch_size} x {config.grad_accum} accumulation)", affects))
    want_epochs = paper["epochs_hypothesis_only"] if config.setting == "hypothesis_only" else paper["epochs"]
    for name, paper_value in (("lora_r", paper["lora_r"]), ("lora_alpha", paper["lora_alpha"]),
                              ("lora_dropout", paper["lora_dropout"]), ("learning_rate", paper["learning_rate"]),
                              ("projector_lr", paper["projector_lr"]), ("weight_decay", paper["weight_decay"]),
                              ("warmup_ratio", paper["warmup_ratio"]), ("lr_scheduler", paper["lr_scheduler"]),
                              ("max_grad_norm", paper["max_grad_norm"]), ("epochs", want_epochs),
                              ("seed", paper["seed"]), ("max_length", paper["model_max_length"])):
        ours = getattr(config, name)
        if ours != paper_value:
            out.append(Deviation(name, str(paper_value), str(ours), affects))
    if config.max_steps is not None:
        out.append(Deviation("training length", f"{want_epochs} epochs (checkpoint picked on validation)",
                             f"stopped after {config.max_steps} optimizer steps", affects))
    projector = config.train_projector if trained_projector is None else trained_projector
    if not projector:
        out.append(Deviation("projector", "trained in full (mm_projector_lr 2e-5)", "frozen", affects))
    out.append(Deviation("prompt format", "llava_v1 conversation, image padded to a square", chat_template
                         + ", the processor's own image resizing", affects))
    return out


# --------------------------------------------------------------------------------------------------
# data: V-FLUTE items → conversations → masked token batches
# --------------------------------------------------------------------------------------------------
@dataclass
class Example:
    """One training conversation: a user turn (image + instruction) and the target answer."""

    id: str
    instruction: str
    target: str
    image: Any


def training_examples(items, *, setting: str = "full", prompt_source: str = "released") -> list[Example]:
    """The official fine-tuning conversations of ``items`` (a loaded V-FLUTE split)."""
    from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK
    from vlamb_nb.benchmarks.vflute.data import item_image
    from vlamb_nb.benchmarks.vflute.prompts import fill_claim, target_text, white_image

    if setting not in SETTINGS:
        raise SettingError(f"unknown fine-tuning setting {setting!r}; choose one of {', '.join(SETTINGS)}")
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
        out.append(Example(iid, instruction, target_text(expl, label), image))
    return out


def _requests(example: Example):
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
    prompt_req, full_req = _requests(example)
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


def _processor_args(hf, texts: list[str], images: list[Any]) -> dict[str, Any]:
    ims = [[im] for im in images] if hf.family.nested_images else list(images)
    return {"text": texts, "images": ims}


# --------------------------------------------------------------------------------------------------
# model: 4-bit base + LoRA (+ the projector trained in full)
# --------------------------------------------------------------------------------------------------
def projector_skip_patterns() -> tuple[str, ...]:
    """bitsandbytes skip patterns that keep every family's projector unquantized (so it can train)."""
    return tuple(rf"(?:.*\.)?{name}" for name in PROJECTOR_NAMES)


def load_base(spec: str, config: QLoRAConfig | None = None, **kwargs: Any):
    """The base model through ``vlamb_nb.models`` (4-bit by default), the projector left unquantized."""
    from vlamb_nb.models import load_model

    config = config or QLoRAConfig()
    skip = projector_skip_patterns() if config.train_projector and config.quantization else ()
    return load_model(spec, quantization=config.quantization, skip_modules=skip, **kwargs)


def lora_target_modules(model) -> list[str]:
    """Full names of the language model's linear layers (LLaVA's ``find_all_linear_names`` rule)."""
    import torch

    names = [n for n, m in model.named_modules()
             if isinstance(m, torch.nn.Linear) and not any(k in n for k in NOT_LORA)]
    if not names:
        raise SettingError("no linear layers of a language model found to put LoRA on")
    return names


def projector_modules(model) -> list[str]:
    """Names (suffixes, as peft's ``modules_to_save`` wants) of the projector modules present."""
    present = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    return [p for p in PROJECTOR_NAMES if p in present]


def checkpointing_on(model) -> None:
    """Non-reentrant activation checkpointing, by the name this transformers gives it.

    transformers 5 renamed ``gradient_checkpointing_enable`` (now a deprecated alias that warns)
    to ``activation_checkpointing_enable``; older versions have only the first.
    """
    enable = getattr(model, "activation_checkpointing_enable", None)
    if enable is not None:
        enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


def attach_lora(hf, config: QLoRAConfig) -> dict[str, Any]:
    """Turn ``hf.model`` into a trainable peft model; return what was made trainable."""
    import torch
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training

    from vlamb_nb.models.hf import peft_quiet

    base = hf.model
    if config.quantization is not None:
        base = prepare_model_for_kbit_training(base, use_gradient_checkpointing=False)
        if config.gradient_checkpointing:  # what peft does with use_reentrant=False, by the current name
            checkpointing_on(base)
    else:
        for p in base.parameters():
            p.requires_grad_(False)
        if config.gradient_checkpointing:
            checkpointing_on(base)
            base.enable_input_require_grads()
    projector = projector_modules(base) if config.train_projector else []
    trainable_projector = bool(projector) and not any(
        type(m).__name__.startswith("Linear4bit") or type(m).__name__.startswith("Linear8bit")
        for n, m in base.named_modules() if any(n.endswith(p) or f".{p}." in n for p in projector))
    lora = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout, bias="none",
                      target_modules=lora_target_modules(base), task_type="CAUSAL_LM",
                      modules_to_save=projector if trainable_projector else None)
    torch.manual_seed(config.seed)  # LoRA A matrices are drawn here
    with peft_quiet():
        hf.model = get_peft_model(base, lora)
    hf.model.config.use_cache = False
    n_train = sum(p.numel() for p in hf.model.parameters() if p.requires_grad)
    return {"lora_targets": len(lora.target_modules), "projector": projector if trainable_projector else [],
            "trainable_parameters": int(n_train)}


def _param_groups(model, config: QLoRAConfig) -> list[dict[str, Any]]:
    lora, proj = [], []
    for n, p in model.named_parameters():
        if p.requires_grad:
            (lora if "lora_" in n else proj).append(p)
    groups = [{"params": lora, "lr": config.learning_rate, "weight_decay": config.weight_decay}]
    if proj:
        groups.append({"params": proj, "lr": config.projector_lr, "weight_decay": config.weight_decay})
    return groups


def lr_lambda(step: int, total: int, warmup: int, kind: str = "cosine") -> float:
    """The multiplier of the base learning rate at ``step`` (transformers' linear warmup + cosine)."""
    if step < warmup:
        return step / max(1, warmup)
    if kind == "constant":
        return 1.0
    progress = (step - warmup) / max(1, total - warmup)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))


def warmup_steps(total: int, ratio: float) -> int:
    """The Trainer's rule: ``ceil(warmup_ratio * total steps)``."""
    return math.ceil(ratio * total)


# --------------------------------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------------------------------
@dataclass
class TrainResult:
    """What a run produced: per-step losses and learning rates, the adapter folder, the trained model."""

    adapter_dir: Path
    history: list[dict[str, Any]]
    config: QLoRAConfig
    deviations: list[Deviation]
    model: Any = None  # the HFModel with the trained adapter attached (eval mode)
    eval_losses: list[dict[str, Any]] = field(default_factory=list)
    resumed_from: int | None = None

    @property
    def losses(self) -> list[float]:
        return [h["loss"] for h in self.history]

    def frame(self):
        import pandas as pd

        return pd.DataFrame(self.history)

    def summary(self) -> dict[str, Any]:
        ls = self.losses
        return {"steps": len(ls), "first_loss": ls[0] if ls else None, "last_loss": ls[-1] if ls else None,
                "loss_fell": bool(ls and ls[-1] < ls[0]), "adapter_dir": str(self.adapter_dir),
                "resumed_from": self.resumed_from, "eval_losses": self.eval_losses}


def _epoch_order(n: int, seed: int, epoch: int) -> list[int]:
    import numpy as np

    return np.random.default_rng([seed, epoch]).permutation(n).tolist()


def _schedule(n_examples: int, config: QLoRAConfig) -> tuple[int, int]:
    """(optimizer steps per epoch, total optimizer steps)."""
    per_step = config.batch_size * config.grad_accum
    per_epoch = math.ceil(n_examples / per_step)
    total = per_epoch * config.epochs
    if config.max_steps is not None:  # as the Trainer: max_steps overrides the epochs (and the schedule length)
        total = config.max_steps
    return per_epoch, total


def _micro_batches(order: list[int], config: QLoRAConfig, step_in_epoch: int) -> list[list[int]]:
    per_step = config.batch_size * config.grad_accum
    chunk = order[step_in_epoch * per_step:(step_in_epoch + 1) * per_step]
    return [chunk[i:i + config.batch_size] for i in range(0, len(chunk), config.batch_size)]


def train(model: Any, items, out_dir: str | os.PathLike, config: QLoRAConfig | None = None, *,
          eval_items=None, progress: bool = True, resume: bool = True) -> TrainResult:
    """Fine-tune ``model`` (a spec string, or an ``HFModel`` without an adapter) on V-FLUTE ``items``.

    Writes ``out_dir/checkpoint-N`` during training and ``out_dir/adapter`` at the end (the
    adapter, the config, the paper recipe, the deviations and the loss history). With
    ``resume=True`` a run continues from the newest checkpoint of the same config.
    """
    import torch

    config = config or QLoRAConfig()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    examples = training_examples(items, setting=config.setting, prompt_source=config.prompt_source)
    eval_examples = (training_examples(eval_items, setting=config.setting, prompt_source=config.prompt_source)
                     if eval_items is not None else None)
    hf = load_base(model, config) if isinstance(model, str) else model
    if getattr(hf, "adapter", None) is not None or hasattr(hf.model, "peft_config"):
        raise SettingError("train() needs a base model without an adapter")
    base_spec = hf.info.model_id
    made = attach_lora(hf, config)
    net = hf.model
    per_epoch, total = _schedule(len(examples), config)
    warm = warmup_steps(total, config.warmup_ratio)
    optimizer = torch.optim.AdamW(_param_groups(net, config), betas=(0.9, 0.999), eps=1e-8)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_lambda(s, total, warm, config.lr_scheduler))
    history: list[dict[str, Any]] = []
    eval_losses: list[dict[str, Any]] = []
    step = 0
    resumed_from = None
    ckpt = _latest_checkpoint(out, config) if resume else None
    if ckpt is not None:
        step, history, eval_losses = _load_checkpoint(ckpt, net, optimizer, scheduler)
        resumed_from = step
    else:
        torch.manual_seed(config.seed)  # dropout masks; a resumed run restores the saved generator state
    bar = _progress(total, step, progress)
    net.train()
    while step < total:
        epoch, in_epoch = divmod(step, per_epoch)
        order = _epoch_order(len(examples), config.seed, epoch)
        micro = _micro_batches(order, config, in_epoch)
        n_tokens = 0
        loss_sum = 0.0
        for idx in micro:
            batch = encode_batch(hf, [examples[i] for i in idx], max_length=config.max_length)
            batch = {k: v.to(hf.device) if hasattr(v, "to") else v for k, v in batch.items()}
            n = int((batch["labels"][:, 1:] != IGNORE_INDEX).sum())
            loss = net(**batch).loss  # mean over this micro-batch's answer tokens
            (loss / len(micro)).backward()
            loss_sum += float(loss.detach()) / len(micro)
            n_tokens += n
        grad_norm = torch.nn.utils.clip_grad_norm_([p for p in net.parameters() if p.requires_grad],
                                                   config.max_grad_norm)
        lrs = [g["lr"] for g in optimizer.param_groups]
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        history.append({"step": step, "epoch": epoch + 1, "loss": loss_sum, "lr": lrs[0],
                        "grad_norm": float(grad_norm), "tokens": n_tokens})
        bar.update(1)
        bar.set_postfix(loss=f"{loss_sum:.4f}")
        end_of_epoch = step % per_epoch == 0
        if eval_examples is not None and end_of_epoch:
            eval_losses.append({"epoch": epoch + 1, "step": step, "loss": evaluate_loss(hf, eval_examples, config)})
            net.train()
        if (config.save_steps and step % config.save_steps == 0) or (not config.save_steps and end_of_epoch):
            _save_checkpoint(out / f"checkpoint-{step}", net, optimizer, scheduler, step, history, eval_losses,
                             config)
    bar.close()
    net.eval()
    net.config.use_cache = True
    devs = deviations(config, base_model=base_spec, device=str(hf.device.type),
                      compute_dtype=str(hf.dtype).replace("torch.", ""),
                      chat_template=f"the {hf.family.name} chat template",
                      trained_projector=bool(made["projector"]))
    adapter_dir = out / "adapter"
    save_adapter(net, adapter_dir, {"base_model": base_spec, "quantization": config.quantization,
                                    "skip_modules": list(projector_skip_patterns()) if made["projector"] else [],
                                    "config": config.to_dict(), "made": made, "history": history,
                                    "eval_losses": eval_losses, "deviations": [asdict(d) for d in devs],
                                    "paper_recipe": [asdict(h) for h in PAPER_RECIPE]})
    _name_after_adapter(hf, adapter_dir)
    return TrainResult(adapter_dir, history, config, devs, hf, eval_losses, resumed_from)


def _name_after_adapter(hf, adapter_dir: Path) -> None:
    """Give the trained in-memory model the identity a reload gets, so cached outputs never mix with the base's."""
    from vlamb_nb.models.hf import adapter_digest

    digest = adapter_digest(adapter_dir)
    hf.adapter = {"path": str(adapter_dir), "digest": digest}
    hf.info = replace(hf.info, model_id=f"{hf.info.model_id}+adapter@{digest}")


def evaluate_loss(hf, examples: Sequence[Example], config: QLoRAConfig) -> float:
    """Mean answer-token loss on held-out examples (the paper picked its checkpoint on validation)."""
    import torch

    hf.model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(examples), config.batch_size):
            chunk = list(examples[i:i + config.batch_size])
            batch = encode_batch(hf, chunk, max_length=config.max_length)
            batch = {k: v.to(hf.device) if hasattr(v, "to") else v for k, v in batch.items()}
            n = int((batch["labels"][:, 1:] != IGNORE_INDEX).sum())
            total += float(hf.model(**batch).loss) * n
            count += n
    return total / max(1, count)


def _progress(total: int, initial: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc="qlora", disable=not enabled, unit="step")


# -- checkpoints and the adapter -------------------------------------------------------------------
def _config_key(config: QLoRAConfig) -> dict[str, Any]:
    d = config.to_dict()
    d.pop("max_steps")  # a longer run may continue a shorter one
    d.pop("save_steps")
    return d


def _save_checkpoint(path: Path, net, optimizer, scheduler, step: int, history, eval_losses,
                     config: QLoRAConfig) -> None:
    """Written to a temporary folder, then renamed: a crash never leaves a half checkpoint behind."""
    import torch

    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    net.save_pretrained(tmp)
    torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "step": step,
                "history": history, "eval_losses": eval_losses, "rng": torch.get_rng_state()}, tmp / STATE_FILE)
    (tmp / RECIPE_FILE).write_text(json.dumps({"config_key": _config_key(config)}, indent=1))
    shutil.rmtree(path, ignore_errors=True)
    os.replace(tmp, path)


def _latest_checkpoint(out: Path, config: QLoRAConfig) -> Path | None:
    found = []
    for p in out.glob("checkpoint-*"):
        if p.name.endswith(".tmp") or not (p / STATE_FILE).is_file():
            continue
        try:
            meta = json.loads((p / RECIPE_FILE).read_text())
            step = int(p.name.split("-", 1)[1])
        except (OSError, ValueError):
            continue
        if meta.get("config_key") == json.loads(json.dumps(_config_key(config))):
            found.append((step, p))
    return max(found)[1] if found else None


def _load_checkpoint(path: Path, net, optimizer, scheduler) -> tuple[int, list, list]:
    import torch
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    set_peft_model_state_dict(net, load_file(str(path / "adapter_model.safetensors")))
    state = torch.load(path / STATE_FILE, weights_only=False)
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
    return int(state["step"]), list(state["history"]), list(state["eval_losses"])


def save_adapter(net, directory: str | os.PathLike, meta: dict[str, Any]) -> Path:
    """The adapter (peft format) plus ``vlamb_qlora.json``: how to rebuild the base, and the run's record."""
    path = Path(directory)
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    net.save_pretrained(tmp)
    (tmp / RECIPE_FILE).write_text(json.dumps(meta, indent=1, default=str))
    shutil.rmtree(path, ignore_errors=True)
    os.replace(tmp, path)
    return path


def read_adapter_record(directory: str | os.PathLike) -> dict[str, Any]:
    """The run record saved with an adapter (base model, config, losses, deviations)."""
    path = Path(directory) / RECIPE_FILE
    if not path.is_file():
        raise SettingError(f"{Path(directory)}: no {RECIPE_FILE}; not an adapter saved by vlamb_nb.benchmarks.vflute.finetune")
    try:
        return json.loads(path.read_text())
    except ValueError as e:
        raise DataError(f"unreadable run record: {e}", source=str(path)) from None


def load_finetuned(adapter_dir: str | os.PathLike, *, base_model: str | None = None, **kwargs: Any):
    """The base model (quantized as in training) with the saved adapter: a ``vlamb_nb.models`` model."""
    from vlamb_nb.models import load_model

    rec = read_adapter_record(adapter_dir)
    return load_model(base_model or rec["base_model"], quantization=rec.get("quantization"),
                      skip_modules=tuple(rec.get("skip_modules") or ()), adapter=str(adapter_dir), **kwargs)


def finetuned_deviations(adapter_dir: str | os.PathLike) -> list[Deviation]:
    """The fine-tuning deviations recorded with an adapter (print them under the evaluation tables)."""
    return [Deviation(**d) for d in read_adapter_record(adapter_dir).get("deviations", [])]


def evaluate_adapter(adapter_dir: str | os.PathLike, items, *, setting: str | None = None, store=None,
                     scorer: Any = "auto", batch_size: int = 8, limit: int | None = None, progress: bool = True,
                     model: Any = None, **kwargs: Any):
    """Score a fine-tuned adapter on V-FLUTE (the −Image run is evaluated with white images too)."""
    from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK

    rec = read_adapter_record(adapter_dir)
    if setting is None:
        setting = "hypothesis_only" if rec.get("config", {}).get("setting") == "hypothesis_only" else "zero_shot"
    model = model if model is not None else load_finetuned(adapter_dir)
    scored = BENCHMARK.evaluate(model, items, setting, store=store, scorer=scorer, batch_size=batch_size,
                                limit=limit, progress=progress, **kwargs)
    scored.attrs["deviations"] = list(scored.attrs.get("deviations", [])) + \
        [asdict(d) for d in finetuned_deviations(adapter_dir)]
    return scored


def with_overrides(config: QLoRAConfig, **overrides: Any) -> QLoRAConfig:
    """A copy of ``config`` with some settings changed (``None`` values are ignored)."""
    return replace(config, **{k: v for k, v in overrides.items() if v is not None})


# --------------------------------------------------------------------------------------------------
# small helpers for the notebook
# --------------------------------------------------------------------------------------------------
def demo_splits(source: str | os.PathLike | None = None, *, n_train: int | None = 8, n_test: int | None = 4,
                seed: int = 0) -> tuple[Any, Any, str]:
    """(train items, test items, label): the given V-FLUTE files, else a generated sample with images.

    The released data beside the checkout holds only the test split, so the default is a sample.
    """
    from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK
    from vlamb_nb.paths import sample_dir

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
    return train_items.reset_index(drop=True), test_items.reset_index(drop=True), label


def plot_losses(result: TrainResult):
    """Training loss (and learning rate) per optimizer step."""
    from vlamb_nb.plots import new_figure

    fig, ax = new_figure(6, 3.2)
    df = result.frame()
    ax.plot(df["step"], df["loss"], marker="o", label="training loss")
    if result.eval_losses:
        ev = [e["step"] for e in result.eval_losses], [e["loss"] for e in result.eval_losses]
        ax.plot(*ev, marker="s", label="validation loss")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("loss (answer tokens)")
    lr = ax.twinx()
    lr.plot(df["step"], df["lr"], color="grey", linestyle=":", label="learning rate")
    lr.set_ylabel("learning rate")
    ax.legend(loc="upper right")
    fig.tight_layout()
    return fig


def reload_check(result: TrainResult, items, *, max_new_tokens: int = 8) -> dict[str, Any]:
    """Reload the saved adapter onto a fresh base and compare logits and greedy text with the trained model."""
    import torch

    from vlamb_nb.models import DecodingParams, Request

    hf = result.model
    example = training_examples(items.head(1), setting=result.config.setting)[0]
    batch = {k: v for k, v in encode_batch(hf, [example]).items() if k != "labels"}
    reloaded = load_finetuned(result.adapter_dir)
    with torch.no_grad():
        before = hf.model(**batch).logits
        after = reloaded.model(**batch).logits
    prompt = _requests(example)[0]
    req = Request(id=example.id, messages=prompt.messages, images=prompt.images,
                  params=DecodingParams(max_new_tokens=max_new_tokens))
    same_text = hf.generate([req])[0].text == reloaded.generate([req])[0].text
    return {"max_abs_logit_diff": float((before - after).abs().max()), "same_text": bool(same_text),
            "model_id": reloaded.info.model_id, "same_identity": reloaded.info.model_id == hf.info.model_id}
