"""The one table of per-family quirks, so the model wrapper has no scattered ``if family == ...``.

A family is found from the checkpoint's config (hub id or local folder alike): its ``model_type``
first, then, for types not in the table, whether the config describes a text-only causal LM.
Each row says which transformers classes load it, how the family wants its prompt built (chat
template or plain text, system role, image placement, string or list message content), how its
processor expresses a pixel budget, how to read the resized image size back from the processor
output, and whether it needs ``trust_remote_code``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

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
    # text-only language models (LLM judges) load through the same wrapper with other classes
    accepts_images: bool = True  # False: a request with images fails (counted) instead of reaching the model
    string_content: bool = False  # the chat template wants each message's content as one string
    auto_model: str = "AutoModelForImageTextToText"  # transformers auto class of the weights
    auto_processor: str = "AutoProcessor"  # transformers auto class of the processor (or tokenizer)
    encode_kwargs: dict[str, Any] = field(default_factory=dict)  # for the processor call on templated prompts
    # a row kept so its checkpoints are recognised and refused in one line: its remote code is not what this
    # package drives (an image-text-to-text class with a chat template); ``why_not`` says what it is instead
    runs_here: bool = True
    why_not: str = ""


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
    Family("qwen3_5", ("qwen3_5", "qwen3_5_moe"), ("Qwen/Qwen3.5-27B", "Qwen/Qwen3.5-35B-A3B"),
           max_pixels_kwarg="longest_edge", size_rule="grid_thw",
           notes="the Qwen3-VL processor; boxes on a 0-1000 relative grid (as the official Ref-Adv config reads them)"),
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
    Family("glm4v", ("glm4v", "glm4v_moe"), ("THUDM/GLM-4.1V-9B-Thinking", "zai-org/GLM-4.5V"), size_rule="none"),
    Family("ovis2", ("ovis2",), ("thisisiron/Ovis2-2B-hf",), size_rule="none"),
    # families whose checkpoints need code from the hub: recognised, never loaded without trust_remote_code=True,
    # and refused even with it, in one line: their remote code is another interface than the one driven here
    Family("phi3_v", ("phi3_v",), ("microsoft/Phi-3.5-vision-instruct",), trust_remote_code=True, runs_here=False,
           why_not="remote code registering AutoModelForCausalLM with its own image processor"),
    Family("molmo", ("molmo",), ("allenai/Molmo-7B-D-0924",), trust_remote_code=True, runs_here=False,
           why_not="remote code registering AutoModelForCausalLM with its own processor and generate_from_batch"),
    Family("minicpmv", ("minicpmv", "minicpmo"), ("openbmb/MiniCPM-V-2_6", "openbmb/MiniCPM-o-2_6"),
           trust_remote_code=True, runs_here=False, why_not="remote code registering AutoModel with its own chat()"),
    Family("mplug_owl3", ("mplug_owl3",), ("mPLUG/mPLUG-Owl3-7B-240728",), trust_remote_code=True, runs_here=False,
           why_not="remote code registering AutoModel with its own processor (init_processor) and generate"),
)

# Text-only causal LMs (LLM judges such as Llama-3-70B-Instruct). Their chat templates take string
# content and already write the special tokens, so the tokenizer must not add a second BOS.
_TEXT_LM = dict(accepts_images=False, string_content=True, auto_model="AutoModelForCausalLM",
                auto_processor="AutoTokenizer", size_rule="none",
                encode_kwargs={"add_special_tokens": False, "return_token_type_ids": False})

TEXT_FAMILIES: tuple[Family, ...] = (
    Family("text", ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "phi3", "olmo2",
                    "granite", "cohere", "cohere2", "gemma3_text", "smollm3"),
           ("meta-llama/Meta-Llama-3-70B-Instruct", "Qwen/Qwen2.5-72B-Instruct"), **_TEXT_LM,
           notes="text-only causal LM; unknown text-only configs (no vision part, *ForCausalLM) land here too"),
    Family("text_gemma", ("gemma", "gemma2"), ("google/gemma-2-27b-it",), system_role=False, **_TEXT_LM,
           notes="text-only Gemma: the chat template rejects a system turn, so it is merged into the first user turn"),
)

GENERIC = Family("generic", (), size_rule="none", notes="unknown model_type: transformers defaults")

_BY_TYPE = {t: f for f in (*FAMILIES, *TEXT_FAMILIES) for t in f.model_types}
_BY_NAME = {f.name: f for f in (*FAMILIES, *TEXT_FAMILIES)}
TEXT = _BY_NAME["text"]

# config attributes that mean "this model has a vision part", in native and remote-code configs
_VISION_KEYS = ("vision_config", "vision_tower", "mm_vision_tower", "visual", "img_processor", "vision_encoder")


def family_for_config(config: Any) -> Family:
    """The family row for a loaded config: by ``model_type``, else text-only LM or generic VLM.

    A config whose type is not in the table is a text-only causal LM when it has no vision part
    and transformers maps it (or its ``architectures``) to a causal LM but not to an
    image-text-to-text model; anything else keeps the generic VLM row.
    """
    model_type = getattr(config, "model_type", None)
    if model_type in _BY_TYPE:
        return _BY_TYPE[model_type]
    return TEXT if is_text_only_config(config) else GENERIC


def is_text_only_config(config: Any) -> bool:
    """True when the config describes a causal LM without any vision part."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
    )

    model_type = getattr(config, "model_type", None)
    if model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES:
        return False
    if any(getattr(config, k, None) is not None for k in _VISION_KEYS):
        return False
    archs = list(getattr(config, "architectures", None) or [])
    if archs:
        return all(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs)
    return model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES


# -- every model the five papers evaluated, and how each runs here -------------------------------------------------
@dataclass(frozen=True)
class PaperModel:
    """A model a paper evaluated: its checkpoint's config ``model_type`` (which names its family above), or the
    provider of an API model. How it runs here is read from the family registry (:func:`how_it_runs`)."""

    papers: tuple[str, ...]
    name: str  # as the paper names it
    checkpoint: str  # the hub id (inferred where the paper gives none) or the API model
    model_type: str = ""  # of the checkpoint's config.json; "" for an API model
    api: str = ""  # the provider of an API model
    why_not: str = ""  # why a checkpoint of no family row is not loaded here
    note: str = ""


_INTERNVL_CHAT = ("the released checkpoint is remote code (internvl_chat, its own chat()); an -hf port, where "
                  "OpenGVLab publishes one, loads as family internvl")
PAPER_MODELS: tuple[PaperModel, ...] = (
    # VAGUE (§5, App. C)
    PaperModel(("VAGUE",), "Phi3.5-Vision-Instruct", "microsoft/Phi-3.5-vision-instruct", "phi3_v"),
    PaperModel(("VAGUE", "MUCAR"), "LLaVA-OneVision", "llava-hf/llava-onevision-qwen2-7b-ov-hf", "llava_onevision"),
    PaperModel(("VAGUE", "MUCAR", "Ref-Adv"), "Qwen2.5-VL-7B-Instruct", "Qwen/Qwen2.5-VL-7B-Instruct", "qwen2_5_vl"),
    PaperModel(("VAGUE", "Ref-Adv"), "Qwen2.5-VL-72B-Instruct", "Qwen/Qwen2.5-VL-72B-Instruct", "qwen2_5_vl"),
    PaperModel(("VAGUE", "MUCAR"), "InternVL-2.5-MPO 8B / 26B (and MUCAR's AWQ build)", "OpenGVLab/InternVL2_5-8B-MPO",
               "internvl_chat", why_not=_INTERNVL_CHAT + "; the AWQ build also needs autoawq kernels"),
    PaperModel(("VAGUE", "Ref-Adv"), "InternVL-3 (8B, 14B, 38B, 78B)", "OpenGVLab/InternVL3-38B-hf", "internvl",
               note="the -hf port of InternVL3; Ref-Adv's 'InternVL-3-7B' is read as 8B"),
    PaperModel(("VAGUE",), "Idefics2-8B", "HuggingFaceM4/idefics2-8b", "idefics2",
               note="the released code only loads Idefics3; which was run is unclear"),
    PaperModel(("VAGUE", "MUCAR", "V-FLUTE", "RACQUET"), "LLaVA-NeXT (v1.6): Vicuna 7B/13B, Mistral 7B, 34B",
               "llava-hf/llava-v1.6-vicuna-13b-hf", "llava_next"),
    PaperModel(("VAGUE",), "Ovis2-16B", "thisisiron/Ovis2-16B-hf", "ovis2", note="the transformers port of AIDC-AI/Ovis2-16B"),
    PaperModel(("VAGUE", "MUCAR", "V-FLUTE", "Ref-Adv", "RACQUET"), "GPT-4o", "gpt-4o", api="OpenAI"),
    PaperModel(("VAGUE", "V-FLUTE", "RACQUET"), "Gemini 1.5 Pro", "gemini-1.5-pro", api="Google"),
    # MUCAR (Table 11)
    PaperModel(("MUCAR", "V-FLUTE"), "GPT-4V / GPT-4 (vision preview)", "gpt-4-1106-vision-preview", api="OpenAI"),
    PaperModel(("MUCAR",), "Gemini-2.0-flash", "gemini-2.0-flash", api="Google"),
    PaperModel(("MUCAR", "Ref-Adv"), "Claude-3.5-Sonnet", "claude-3-5-sonnet-20240620", api="Anthropic"),
    PaperModel(("MUCAR",), "Deepseek-VL-Tiny", "deepseek-ai/deepseek-vl2-tiny", "deepseek_vl_v2",
               why_not="DeepSeek-VL2 is remote code of its own (transformers ports only DeepSeek-VL v1)"),
    PaperModel(("MUCAR",), "Kimi-VL", "moonshotai/Kimi-VL-A3B-Instruct", "kimi_vl",
               why_not="remote code registering AutoModelForCausalLM (no transformers class)"),
    PaperModel(("MUCAR",), "Llama-3.2-Vision-11B", "meta-llama/Llama-3.2-11B-Vision-Instruct", "mllama"),
    PaperModel(("MUCAR",), "MiniCPM-o 2.6", "openbmb/MiniCPM-o-2_6", "minicpmo"),
    PaperModel(("MUCAR",), "Idefics3-8B-Llama3", "HuggingFaceM4/Idefics3-8B-Llama3", "idefics3"),
    PaperModel(("MUCAR",), "InternVL2-8B", "OpenGVLab/InternVL2-8B", "internvl_chat", why_not=_INTERNVL_CHAT),
    PaperModel(("MUCAR", "Ref-Adv"), "Qwen2.5-VL-3B-Instruct", "Qwen/Qwen2.5-VL-3B-Instruct", "qwen2_5_vl"),
    PaperModel(("MUCAR",), "mPLUG-Owl3 7B / 2B", "mPLUG/mPLUG-Owl3-7B-240728", "mplug_owl3"),
    # V-FLUTE (§4, App. D, H)
    PaperModel(("V-FLUTE",), "LLaVA-1.5-7B (+ LoRA: VF, -Image, eViL, eViL+VF)", "llava-hf/llava-1.5-7b-hf", "llava",
               note="fine-tuned by the QLoRA recipe; the released eViL+VF checkpoint is in the original LLaVA format"),
    PaperModel(("V-FLUTE",), "InstructBLIP-Vicuna-7B", "Salesforce/instructblip-vicuna-7b", "instructblip"),
    PaperModel(("V-FLUTE",), "Claude-3 Opus", "claude-3-opus-20240229", api="Anthropic"),
    # Ref-Adv (Table 6, the official Ref-Adv-s runs)
    PaperModel(("Ref-Adv",), "Qwen2.5-VL-32B-Instruct", "Qwen/Qwen2.5-VL-32B-Instruct", "qwen2_5_vl"),
    PaperModel(("Ref-Adv",), "Qwen3-VL (2B to 235B, Instruct and Thinking)", "Qwen/Qwen3-VL-8B-Instruct", "qwen3_vl"),
    PaperModel(("Ref-Adv",), "Qwen3.5 (27B to 397B)", "Qwen/Qwen3.5-27B", "qwen3_5"),
    PaperModel(("Ref-Adv",), "Gemini 2.5 Flash / Pro", "gemini-2.5-flash", api="Google"),
    PaperModel(("Ref-Adv",), "GLM-4.5V", "zai-org/GLM-4.5V", "glm4v_moe"),
    PaperModel(("Ref-Adv",), "CogVLM-Grounding", "THUDM/cogvlm-grounding-generalist-hf", "cogvlm",
               why_not="remote code registering AutoModelForCausalLM with its own conversation builder"),
    PaperModel(("Ref-Adv",), "LLaVA-OneVision-1.5 4B / 8B", "lmms-lab/LLaVA-OneVision-1.5-8B-Instruct",
               "llavaonevision1_5", why_not="remote code of its own (no transformers class)"),
    # RACQUET (§4, App. J)
    PaperModel(("RACQUET",), "Molmo 7B-D / MolmoE 1B", "allenai/Molmo-7B-D-0924", "molmo"),
    PaperModel(("RACQUET",), "Qwen-VL-Chat", "Qwen/Qwen-VL-Chat", "qwen",
               why_not="remote code registering AutoModelForCausalLM with its own tokenizer-side image handling"),
    PaperModel(("RACQUET",), "Meta-Llama-3-70B-Instruct (the judge)", "meta-llama/Meta-Llama-3-70B-Instruct", "llama"),
)


def how_it_runs(model: PaperModel) -> tuple[str, str]:
    """``(how, detail)``: ``here`` (a family of this registry loads it; ``detail`` names it), ``api`` (an
    OpenAI-compatible endpoint of its provider) or ``server`` (not loaded here, ``detail`` says why: serve it
    behind an OpenAI-compatible server and run ``openai:MODEL``)."""
    if model.api:
        return "api", model.api
    fam = _BY_TYPE.get(model.model_type)
    if fam is not None and fam.runs_here:
        return "here", fam.name
    return "server", (fam.why_not if fam is not None else model.why_not) or "no family row"
