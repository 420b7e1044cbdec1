"""The V-FLUTE fine-tuning recipe as data: the paper's hyperparameters with their provenance, one run's
:class:`QLoRAConfig`, and every way a run deviates from the paper (:func:`deviations`).

Kept apart from the training loop (:mod:`.finetune`) so a notebook shows the recipe, and a run's record is read
back (:mod:`.finetune_eval`), without loading torch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from vlamb_nb.errors import SettingError
from vlamb_nb.meta import Deviation

LABELS = ("entailment", "contradiction")
#: what a run trains on: V-FLUTE (``full``), V-FLUTE with white images (``hypothesis_only``, the −Image row),
SETTINGS = ("full", "hypothesis_only")
#: or e-SNLI-VE without neutral (``evil``), or both shuffled together (``evil_vflute``, the best model)
EVIL_SETTINGS = ("evil", "evil_vflute")
ALL_SETTINGS = SETTINGS + EVIL_SETTINGS
#: Table 4's row of each setting
TABLE4_ROWS = {"full": "LLaVA-7B → VF", "hypothesis_only": "LLaVA-7B → VF − Image", "evil": "LLaVA-7B → eViL",
               "evil_vflute": "LLaVA-7B → eViL + VF"}
#: Table 4's e-ViL rows as the recipe's two stages: the literal stage alone, then literal + figurative. The
#: official eViL+VF run trains from the base on the union (evil_vflute_train.json: 280,393 = 275,815 + 4,578)
EVIL_STAGES = EVIL_SETTINGS
#: the training target: the explanation then the label (the paper's multi-task target), or the label alone (App. J)
TARGETS = ("multi_task", "label_only")
RECIPE_FILE = "vlamb_qlora.json"  # the run record saved with every adapter and checkpoint

# Projector (vision → language) module names across families; trained in full like LLaVA's mm_projector.
PROJECTOR_NAMES = ("multi_modal_projector", "merger", "connector")
# Modules that never get LoRA: the vision tower, the projector, the output head (LLaVA find_all_linear_names).
NOT_LORA = ("visual", "vision", "multi_modal_projector", "merger", "connector", "image_newline", "lm_head")


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
    Hyperparameter("epochs_evil", 1, f"{_APP_D} prose; scripts/vflute/finetune_task_lora_evil_v15.sh"),
    Hyperparameter("epochs_evil_vflute", 2, f"{_APP_D} prose; scripts/vflute/finetune_task_lora_evil_vflute.sh"),
    Hyperparameter("evil_data", "e-SNLI-VE without neutral: 275,815 train / 10,897 valid", _APP_D),
    Hyperparameter("evil_vflute_data", "e-SNLI-VE without neutral + V-FLUTE train, 280,393, shuffled",
                   "official evil_vflute_train.json (LFS; 275,815 + 4,578)"),
    Hyperparameter("checkpoints_evil", "checkpoint-4310 (eViL, end of epoch 1); checkpoint-4380 (eViL + VF)",
                   "released run names; 275,815 / 64 = 4,310 steps per epoch (inferred)"),
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
    Hyperparameter("target_label_only", "the label alone (App. J's ablation: F1 80.85 vs 83.26, p < 0.1)",
                   "paper App. J (the target's text is not given; ours: \"LABEL: {label}\")"),
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
    setting: str = "full"  # hypothesis_only (white squares: the −Image run), evil or evil_vflute (ALL_SETTINGS)
    target: str = "multi_task"  # or "label_only": App. J's ablation (TARGETS)
    prompt_source: str = "released"  # the released instruction of each item, or the official seeded draw
    max_steps: int | None = None  # stop early (demos, smoke tests); None = the epochs
    save_steps: int | None = None  # checkpoint every n optimizer steps; None = every epoch (as the paper)
    quantization: str | None = "4bit"

    def __post_init__(self) -> None:
        if self.setting not in ALL_SETTINGS:
            raise SettingError(f"unknown fine-tuning setting {self.setting!r}; choose one of "
                               f"{', '.join(ALL_SETTINGS)}")
        if self.target not in TARGETS:
            raise SettingError(f"unknown target {self.target!r}; choose one of {', '.join(TARGETS)}")
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
        """The paper's run of ``setting`` (its epochs: 3, 10 for hypothesis-only, 1 for e-ViL, 2 for e-ViL + VF),
        with ``overrides``."""
        overrides.setdefault("epochs", paper_epochs(setting))
        return cls(setting=setting, **overrides)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def paper_epochs(setting: str) -> int:
    """The epochs the paper trained ``setting`` for (the official scripts, which agree with App. D's prose)."""
    paper = recipe()
    return {"hypothesis_only": paper["epochs_hypothesis_only"], "evil": paper["epochs_evil"],
            "evil_vflute": paper["epochs_evil_vflute"]}.get(setting, paper["epochs"])


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
    want_epochs = paper_epochs(config.setting)
    if config.target == "label_only":
        out.append(Deviation("label-only target", "App. J: the label alone (its text not given)",
                             '"LABEL: {label}" (the marker the official parser reads)', "App. J"))
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


def with_overrides(config: QLoRAConfig, **overrides: Any) -> QLoRAConfig:
    """A copy of ``config`` with some settings changed (``None`` values are ignored)."""
    return replace(config, **{k: v for k, v in overrides.items() if v is not None})
