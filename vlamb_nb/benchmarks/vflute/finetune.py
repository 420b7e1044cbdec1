"""QLoRA fine-tuning of a vision-language model on V-FLUTE, with the paper's LoRA recipe.

Read top to bottom::

    items  = BENCHMARK.load(folder, split="train")
    result = train("llava-hf/llava-1.5-7b-hf", items, "runs/vf")      # 4-bit base + LoRA, paper settings
    model  = finetune_eval.load_finetuned(result.adapter_dir)          # base + adapter, a vlamb_nb model
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

This module is the model setup and the training loop with its checkpoints; the recipe is
:mod:`.finetune_recipe`, the data :mod:`.finetune_data`, reading an adapter back and scoring it
:mod:`.finetune_eval`, and the loss figure :func:`~vlamb_nb.benchmarks.vflute.plots.plot_losses`.
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

from vlamb_nb.benchmarks.vflute.finetune_data import IGNORE_INDEX, Example, encode_batch, training_examples
from vlamb_nb.benchmarks.vflute.finetune_recipe import (
    NOT_LORA,
    PAPER_RECIPE,
    PROJECTOR_NAMES,
    RECIPE_FILE,
    QLoRAConfig,
    deviations,
)
from vlamb_nb.errors import SettingError
from vlamb_nb.meta import Deviation

STATE_FILE = "trainer_state.pt"


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
    examples = training_examples(items, setting=config.setting, prompt_source=config.prompt_source,
                                 target=config.target)
    eval_examples = (training_examples(eval_items, setting=config.setting, prompt_source=config.prompt_source,
                                       target=config.target)
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
    from vlamb_nb.progress import bar

    return bar(total=total, initial=initial, desc="qlora", enabled=enabled, unit="step")


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
