"""The one table of per-family quirks, so the model wrapper has no scattered ``if family == ...``.

A family is found from the checkpoint's ``config.model_type`` (hub id or local folder alike).
Each row says how the family wants its prompt built (chat template or plain text, system role,
image placement), how its processor expresses a pixel budget, how to read the resized image
size back from the processor output, and whether it needs ``trust_remote_code``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from vlamb_nb.errors import SettingError

SizeRule = Literal["grid_thw", "pixel_values", "none"]


@dataclass(frozen=True)
class Family:
    """Quirks of one model family."""

    name: str
    model_types: tuple[str, ...]
    examples: tuple[str, ...] = ()
    # prompt construction
    chat_template: bool = True  # False: the processor takes plain text (InstructBLIP, PaliGemma)
    system_role: bool = True  # False: a system turn is merged into the first user turn's text
    images_first: bool = False  # True: image slots move to the start of their turn (trained that way)
    nested_images: bool = False  # the processor wants one list of images per sample (Idefics, Mllama)
    # pixel budget and resized size
    max_pixels_kwarg: str | None = None  # size key the image processor reads a pixel budget from
    size_rule: SizeRule = "none"
    # loading
    trust_remote_code: bool = False
    bnb_skip_modules: tuple[str, ...] = ()  # modules kept unquantized in 4/8-bit (known to break otherwise)
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


FAMILIES: tuple[Family, ...] = (
    Family("qwen2_vl", ("qwen2_vl",), ("Qwen/Qwen2-VL-7B-Instruct",),
           max_pixels_kwarg="longest_edge", size_rule="grid_thw",
           notes="boxes in absolute pixels of the resized image (multiples of 28)"),
    Family("qwen2_5_vl", ("qwen2_5_vl",), ("Qwen/Qwen2.5-VL-7B-Instruct", "Qwen/Qwen2.5-VL-3B-Instruct"),
           max_pixels_kwarg="longest_edge", size_rule="grid_thw",
           notes="boxes in absolute pixels of the resized image (multiples of 28)"),
    Family("qwen3_vl", ("qwen3_vl", "qwen3_vl_moe"), ("Qwen/Qwen3-VL-8B-Instruct",),
           max_pixels_kwarg="longest_edge", size_rule="grid_thw",
           notes="boxes on a 0-1000 relative grid"),
    Family("llava", ("llava",), ("llava-hf/llava-1.5-7b-hf",),
           images_first=True, size_rule="pixel_values",
           notes="LLaVA-1.5 was trained with the image before the question"),
    Family("llava_next", ("llava_next",), ("llava-hf/llava-v1.6-mistral-7b-hf",),
           images_first=True, size_rule="none",
           notes="any-resolution tiling; no single resized size"),
    Family("llava_onevision", ("llava_onevision",), ("llava-hf/llava-onevision-qwen2-7b-ov-hf",),
           images_first=True, size_rule="none",
           notes="any-resolution tiling; no single resized size"),
    Family("idefics2", ("idefics2",), ("HuggingFaceM4/idefics2-8b",),
           system_role=False, nested_images=True, max_pixels_kwarg=None, size_rule="none"),
    Family("idefics3", ("idefics3", "smolvlm"), ("HuggingFaceM4/Idefics3-8B-Llama3",
                                                 "HuggingFaceTB/SmolVLM-Instruct"),
           system_role=False, nested_images=True, size_rule="none",
           notes="image split into tiles plus a global view"),
    Family("internvl", ("internvl",), ("OpenGVLab/InternVL3-8B-hf",), size_rule="none"),
    Family("mllama", ("mllama",), ("meta-llama/Llama-3.2-11B-Vision-Instruct",),
           images_first=True, nested_images=True, size_rule="none",
           bnb_skip_modules=("vision_model", "multi_modal_projector", "lm_head"),
           notes="cross-attention vision; one image per prompt works best"),
    Family("instructblip", ("instructblip",), ("Salesforce/instructblip-vicuna-7b",),
           chat_template=False, size_rule="pixel_values",
           notes="no chat template: the processor takes the plain prompt text"),
    Family("gemma3", ("gemma3",), ("google/gemma-3-12b-it",), size_rule="pixel_values"),
    Family("paligemma", ("paligemma",), ("google/paligemma2-3b-mix-448",),
           chat_template=False, size_rule="pixel_values"),
    Family("mistral3", ("mistral3",), ("mistralai/Mistral-Small-3.1-24B-Instruct-2503",), size_rule="none"),
    Family("glm4v", ("glm4v",), ("THUDM/GLM-4.1V-9B-Thinking",), size_rule="none"),
    Family("ovis2", ("ovis2",), ("thisisiron/Ovis2-2B-hf",), size_rule="none"),
    # families whose checkpoints need code from the hub: only behind trust_remote_code=True
    Family("phi3_v", ("phi3_v",), ("microsoft/Phi-3.5-vision-instruct",), trust_remote_code=True),
    Family("molmo", ("molmo",), ("allenai/Molmo-7B-D-0924",), trust_remote_code=True),
    Family("minicpmv", ("minicpmv",), ("openbmb/MiniCPM-V-2_6",), trust_remote_code=True),
    Family("mplug_owl3", ("mplug_owl3",), ("mPLUG/mPLUG-Owl3-7B-240728",), trust_remote_code=True),
)

GENERIC = Family("generic", (), size_rule="none", notes="unknown model_type: transformers defaults")

_BY_TYPE = {t: f for f in FAMILIES for t in f.model_types}
_BY_NAME = {f.name: f for f in FAMILIES}


def family_for(model_type: str | None) -> Family:
    """The family row for a config ``model_type`` (the generic row when unknown)."""
    return _BY_TYPE.get(model_type or "", GENERIC)


def get_family(name: str) -> Family:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise SettingError(f"unknown model family {name!r}; known: {', '.join(sorted(_BY_NAME))}") from None


def family_names() -> list[str]:
    return [f.name for f in FAMILIES]
