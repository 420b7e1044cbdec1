"""Tiny random checkpoints, built offline, for tests and demos of the real model path.

A tiny checkpoint is a real Hugging Face folder (``config.json``, ``model.safetensors``,
tokenizer, processor and chat template) whose weights are random and whose sizes are small,
so ``HFModel`` loads it through exactly the code path it uses for a hub model. Each family
gets its real config class, its real processor and image processor, a byte-level BPE tokenizer
trained on the fly with the family's special tokens, and a chat template that places the
family's image tokens. A text-only family (``llama_text``, a Llama-3-style chat LM for judge
tests) has a tokenizer instead of a processor. Hidden sizes are multiples of 64 so bitsandbytes 4-bit quantization
(block size 64) applies to every linear layer.

Builds are atomic (written to a temporary folder, then renamed), so concurrent builders of
the same family never see a half-written checkpoint. Tiny zero-shot detectors (Grounding DINO, OWLv2) for the
grounding scorer are built here the same way (:func:`build_tiny_detector`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vlamb_nb.errors import SettingError

TINY_VERSION = 4  # bump when a builder changes, so cached checkpoints are rebuilt
VOCAB_SIZE = 512  # multiple of 64; the BPE vocabulary is padded up to it
_INIT_LOCK = threading.Lock()  # random init uses torch's global generator: one seeded init at a time

# A few sentences in the style of the benchmarks' prompts and answers, so the BPE merges are plausible.
_CORPUS = [
    "Answer with the option's letter from the given choices directly.",
    "What does the person in the image mean? (A) yes (B) no (C) maybe (D) not sure",
    "Does the image entail or contradict the claim? Answer: Entailment. Explanation: the sky is dark.",
    '{"bbox_2d": [12, 34, 56, 78], "label": "the red cup on the left"}',
    "The object is on the table next to the window. It is small, round and blue.",
    "Please ask a clarifying question about the ambiguous referent in the picture.",
    "0123456789 ,.;:!?'\"()[]{}<>/-_=+*&%$#@ abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ",
]


def default_cache_dir() -> Path:
    """``$VLAMB_CACHE`` or ``~/.cache/vlamb_nb``: a per-user folder, never inside the repository."""
    env = os.environ.get("VLAMB_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "vlamb_nb"


def _train_tokenizer(special_tokens: list[str], *, bos: str | None, eos: str, pad: str | None,
                     extra: dict[str, Any] | None = None):
    """A byte-level BPE tokenizer trained on ``_CORPUS``, padded to exactly ``VOCAB_SIZE`` tokens.

    ``pad=None`` leaves the pad token unset, as in Llama-3 releases (the wrapper falls back to EOS).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    n_fill = 8  # room for filler tokens so the total lands exactly on VOCAB_SIZE
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE - len(special_tokens) - n_fill,
                                  special_tokens=[], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    tok.add_special_tokens(special_tokens)
    fill = VOCAB_SIZE - tok.get_vocab_size()
    if fill < 0:
        raise AssertionError(f"tiny tokenizer too large: {tok.get_vocab_size()} > {VOCAB_SIZE}")
    tok.add_tokens([f"<|fill_{i}|>" for i in range(fill)])
    kw: dict[str, Any] = {"eos_token": eos}
    if pad is not None:
        kw["pad_token"] = pad
    if bos is not None:
        kw["bos_token"] = bos
    kw.update(extra or {})
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, **kw)
    fast.padding_side = "left"
    return fast


def text_size(width: int = 64, layers: int = 2) -> dict[str, Any]:
    """Language-model sizes: head size 16, grouped-query attention with half as many KV heads."""
    if width % 64 or width < 64 or layers < 1:
        raise SettingError(f"text width must be a positive multiple of 64 and layers >= 1, got {width}, {layers}")
    heads = width // 16
    return dict(vocab_size=VOCAB_SIZE, hidden_size=width, intermediate_size=2 * width, num_hidden_layers=layers,
                num_attention_heads=heads, num_key_value_heads=heads // 2, max_position_embeddings=2048,
                initializer_range=0.25)


# --------------------------------------------------------------------------------------------------
# Qwen2.5-VL
# --------------------------------------------------------------------------------------------------
QWEN_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}"
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}"
    "{% endfor %}<|im_end|>\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def qwen2_5_vl_parts(text_size: dict[str, Any], vision: dict[str, Any], pixels: dict[str, int], *,
                     mrope_section: list[int], tie_word_embeddings: bool) -> tuple[Any, Any, Any]:
    """(config, processor, tokenizer) of a Qwen2.5-VL checkpoint of the given sizes: the tiny builder's and the
    real-size performance script's one recipe (tokenizer, chat template and special tokens are the same)."""
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                "<|image_pad|>", "<|video_pad|>"]
    tok = _train_tokenizer(specials, bos=None, eos="<|im_end|>", pad="<|endoftext|>")
    ids = {t: tok.convert_tokens_to_ids(t) for t in specials}
    text = dict(**text_size, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                                              "mrope_section": mrope_section},
                bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"],
                pad_token_id=ids["<|endoftext|>"])
    config = Qwen2_5_VLConfig(text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
                              video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
                              vision_end_token_id=ids["<|vision_end|>"], tie_word_embeddings=tie_word_embeddings)
    processor = Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessor(size=pixels),
                                    video_processor=Qwen2VLVideoProcessor(size=pixels),
                                    tokenizer=tok, chat_template=QWEN_TEMPLATE)
    return config, processor, tok


def _build_qwen2_5_vl(out: Path, seed: int, size: dict[str, Any]) -> None:
    from transformers import Qwen2_5_VLForConditionalGeneration

    vision = dict(depth=2, hidden_size=64, intermediate_size=128, num_heads=4, out_hidden_size=size["hidden_size"],
                  patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=56,
                  fullatt_block_indexes=[1])
    pixels = {"shortest_edge": 28 * 28 * 4, "longest_edge": 28 * 28 * 16}  # 56x56 .. 112x112 pixels
    config, processor, _ = qwen2_5_vl_parts(size, vision, pixels, mrope_section=[2, 3, 3], tie_word_embeddings=True)
    _save(Qwen2_5_VLForConditionalGeneration, config, processor, out, seed)


# --------------------------------------------------------------------------------------------------
# LLaVA-1.5 (CLIP vision tower + Llama), LLaVA-OneVision (SigLIP + Qwen2, any-resolution), Idefics3
# --------------------------------------------------------------------------------------------------
_VISION = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4)

LLAVA_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] != 'system' %}{{ message['role'].upper() + ': ' }}{% endif %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\n' }}{% endfor %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{{ content['text'] + ' ' }}"
    "{% endfor %}{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)


def _llava_parts(size: dict[str, Any]) -> tuple[Any, dict[str, int], Any, Any]:
    """(tokenizer, special token ids, Llama text config, CLIP vision config) shared by LLaVA-1.5 and LLaVA-NeXT."""
    from transformers import CLIPVisionConfig, LlamaConfig

    tok = _train_tokenizer(["<unk>", "<s>", "</s>", "<pad>", "<image>"], bos="<s>", eos="</s>", pad="<pad>",
                           extra={"unk_token": "<unk>"})
    ids = {t: tok.convert_tokens_to_ids(t) for t in ["<s>", "</s>", "<pad>", "<image>"]}
    text = LlamaConfig(**size, bos_token_id=ids["<s>"], eos_token_id=ids["</s>"], pad_token_id=ids["<pad>"])
    vision = CLIPVisionConfig(**_VISION, image_size=56, patch_size=14, projection_dim=size["hidden_size"])
    return tok, ids, text, vision


def _build_llava(out: Path, seed: int, size: dict[str, Any]) -> None:
    from transformers import CLIPImageProcessor, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    tok, ids, text, vision = _llava_parts(size)
    config = LlavaConfig(vision_config=vision, text_config=text, image_token_index=ids["<image>"],
                         image_seq_length=16, vision_feature_select_strategy="default", vision_feature_layer=-2)
    image_processor = CLIPImageProcessor(size={"shortest_edge": 56}, crop_size={"height": 56, "width": 56})
    processor = LlavaProcessor(image_processor=image_processor, tokenizer=tok, patch_size=14,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1,
                               chat_template=LLAVA_TEMPLATE)
    _save(LlavaForConditionalGeneration, config, processor, out, seed)


def _build_llava_next(out: Path, seed: int, size: dict[str, Any]) -> None:
    """LLaVA-NeXT (v1.6): LLaVA-1.5's CLIP tower and Llama, with any-resolution tiling over grid pinpoints."""
    from transformers import (
        LlavaNextConfig,
        LlavaNextForConditionalGeneration,
        LlavaNextImageProcessor,
        LlavaNextProcessor,
    )

    tok, ids, text, vision = _llava_parts(size)
    pinpoints = [[56, 56], [56, 112], [112, 56], [112, 112]]
    config = LlavaNextConfig(vision_config=vision, text_config=text, image_token_index=ids["<image>"],
                             image_grid_pinpoints=pinpoints, vision_feature_select_strategy="default",
                             vision_feature_layer=-2, image_seq_length=16)
    image_processor = LlavaNextImageProcessor(size={"shortest_edge": 56}, crop_size={"height": 56, "width": 56},
                                              image_grid_pinpoints=pinpoints)
    processor = LlavaNextProcessor(image_processor=image_processor, tokenizer=tok, patch_size=14,
                                   vision_feature_select_strategy="default", num_additional_image_tokens=1,
                                   chat_template=LLAVA_TEMPLATE)
    _save(LlavaNextForConditionalGeneration, config, processor, out, seed)


def _chatml_template(image_token: str) -> str:
    """A ChatML chat template with ``image_token`` on its own line for each image of a turn, text after."""
    return ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
            "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '" + image_token
            + "\n' }}{% endfor %}"
            "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{{ content['text'] }}"
            "{% endfor %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


INTERNVL_TEMPLATE = _chatml_template("<IMG_CONTEXT>")


def _build_internvl(out: Path, seed: int, size: dict[str, Any]) -> None:
    """InternVL as transformers ports it (the ``-hf`` checkpoints): InternViT, pixel shuffle, Qwen2."""
    from transformers import (
        GotOcr2ImageProcessor,
        InternVLConfig,
        InternVLForConditionalGeneration,
        InternVLProcessor,
        InternVLVideoProcessor,
        InternVLVisionConfig,
        Qwen2Config,
    )

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<img>", "</img>", "<IMG_CONTEXT>", "<video>"]
    tok = _train_tokenizer(special, bos=None, eos="<|im_end|>", pad="<|endoftext|>",
                           extra={"extra_special_tokens": {"start_image_token": "<img>", "end_image_token": "</img>",
                                                           "context_image_token": "<IMG_CONTEXT>",
                                                           "video_token": "<video>"}})
    ids = {t: tok.convert_tokens_to_ids(t) for t in special}
    text = Qwen2Config(**size, bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"],
                       pad_token_id=ids["<|endoftext|>"])
    vision = InternVLVisionConfig(**_VISION, image_size=[56, 56], patch_size=[14, 14])
    config = InternVLConfig(vision_config=vision, text_config=text, image_token_id=ids["<IMG_CONTEXT>"],
                            downsample_ratio=0.5, vision_feature_layer=-1, vision_feature_select_strategy="default")
    pixels = {"height": 56, "width": 56}
    tiles = GotOcr2ImageProcessor(size=pixels, crop_to_patches=True, min_patches=1, max_patches=1)  # one 56-px tile
    processor = InternVLProcessor(image_processor=tiles,
                                  tokenizer=tok, video_processor=InternVLVideoProcessor(size=pixels),
                                  image_seq_length=4, chat_template=INTERNVL_TEMPLATE)
    _save(InternVLForConditionalGeneration, config, processor, out, seed)


ONEVISION_TEMPLATE = _chatml_template("<image>")


def _build_llava_onevision(out: Path, seed: int, size: dict[str, Any]) -> None:
    from transformers import (
        LlavaOnevisionConfig,
        LlavaOnevisionForConditionalGeneration,
        LlavaOnevisionImageProcessor,
        LlavaOnevisionProcessor,
        LlavaOnevisionVideoProcessor,
        Qwen2Config,
        SiglipVisionConfig,
    )

    tok = _train_tokenizer(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>", "<video>"], bos=None,
                           eos="<|im_end|>", pad="<|endoftext|>")
    ids = {t: tok.convert_tokens_to_ids(t) for t in ["<|endoftext|>", "<|im_end|>", "<image>", "<video>"]}
    text = Qwen2Config(**size, bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"],
                       pad_token_id=ids["<|endoftext|>"])
    vision = SiglipVisionConfig(**_VISION, image_size=56, patch_size=14)
    pinpoints = [[56, 56], [56, 112], [112, 56], [112, 112]]
    config = LlavaOnevisionConfig(vision_config=vision, text_config=text, image_token_index=ids["<image>"],
                                  video_token_index=ids["<video>"], image_grid_pinpoints=pinpoints,
                                  vision_feature_select_strategy="full", vision_feature_layer=-1,
                                  vision_aspect_ratio="anyres_max_9")
    pixels = {"height": 56, "width": 56}
    processor = LlavaOnevisionProcessor(
        image_processor=LlavaOnevisionImageProcessor(size=pixels, image_grid_pinpoints=pinpoints),
        video_processor=LlavaOnevisionVideoProcessor(size=pixels), tokenizer=tok, num_image_tokens=16,
        vision_feature_select_strategy="full", chat_template=ONEVISION_TEMPLATE)
    _save(LlavaOnevisionForConditionalGeneration, config, processor, out, seed)


IDEFICS3_TEMPLATE = (
    "<|begin_of_text|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)


def _build_idefics3(out: Path, seed: int, size: dict[str, Any]) -> None:
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessor,
        Idefics3Processor,
        Idefics3VisionConfig,
        LlamaConfig,
    )

    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<fake_token_around_image>", "<image>",
                "<end_of_utterance>", "<global-img>"]
    tok = _train_tokenizer(specials, bos="<|begin_of_text|>", eos="<end_of_utterance>", pad="<|end_of_text|>")
    ids = {t: tok.convert_tokens_to_ids(t) for t in specials}
    text = LlamaConfig(**size, bos_token_id=ids["<|begin_of_text|>"], eos_token_id=ids["<end_of_utterance>"],
                       pad_token_id=ids["<|end_of_text|>"])
    vision = Idefics3VisionConfig(**_VISION, image_size=56, patch_size=14)
    config = Idefics3Config(vision_config=vision, text_config=text, image_token_id=ids["<image>"], scale_factor=2,
                            pad_token_id=ids["<|end_of_text|>"])
    image_processor = Idefics3ImageProcessor(size={"longest_edge": 112}, max_image_size={"longest_edge": 56})
    processor = Idefics3Processor(image_processor=image_processor, tokenizer=tok, image_seq_len=4,
                                  chat_template=IDEFICS3_TEMPLATE)
    _save(Idefics3ForConditionalGeneration, config, processor, out, seed)


# --------------------------------------------------------------------------------------------------
# Llama-3-style text-only chat LM (stands in for an LLM judge such as Meta-Llama-3-70B-Instruct)
# --------------------------------------------------------------------------------------------------
# The chat template of Meta-Llama-3-8B/70B-Instruct as released: content is a string, BOS comes from the template.
LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)


def _build_llama_text(out: Path, seed: int, size: dict[str, Any]) -> None:
    from tokenizers import processors
    from transformers import LlamaConfig, LlamaForCausalLM

    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    # like the released tokenizer: no pad token, only input ids and attention mask, BOS added on plain encode
    tok = _train_tokenizer(specials, bos="<|begin_of_text|>", eos="<|eot_id|>", pad=None,
                           extra={"model_input_names": ["input_ids", "attention_mask"],
                                  "chat_template": LLAMA3_TEMPLATE})
    ids = {t: tok.convert_tokens_to_ids(t) for t in specials}
    bos = "<|begin_of_text|>"
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, ids[bos])])
    size = {**size, "max_position_embeddings": 8192}  # Llama-3's context: the RACQUET judge prompt is ~2k tokens
    config = LlamaConfig(**size, bos_token_id=ids[bos], eos_token_id=[ids["<|end_of_text|>"], ids["<|eot_id|>"]],
                         rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
    _save(LlamaForCausalLM, config, tok, out, seed,
          eos_token_id=[ids["<|end_of_text|>"], ids["<|eot_id|>"]])


# --------------------------------------------------------------------------------------------------
# shared saving and the public entry points
# --------------------------------------------------------------------------------------------------
def _save(model_cls: Any, config: Any, processor: Any, out: Path, seed: int, *,
          eos_token_id: int | list[int] | None = None) -> None:
    """Save weights, processor (or, for text-only families, tokenizer) and the completion marker."""
    import torch

    with _INIT_LOCK:
        torch.manual_seed(seed)
        model = model_cls(config).eval()
    tok = getattr(processor, "tokenizer", processor)
    gen = model.generation_config
    gen.eos_token_id = tok.eos_token_id if eos_token_id is None else eos_token_id
    gen.pad_token_id = tok.pad_token_id
    gen.do_sample = False
    gen.max_new_tokens = 16
    model.save_pretrained(out)
    processor.save_pretrained(out)
    text = config.get_text_config()
    (out / "vlamb_tiny.json").write_text(json.dumps({"tiny_version": TINY_VERSION, "seed": seed,
                                                     "text_width": text.hidden_size,
                                                     "text_layers": text.num_hidden_layers}))


BUILDERS: dict[str, Callable[[Path, int, dict[str, Any]], None]] = {
    "qwen2_5_vl": _build_qwen2_5_vl,
    "llava": _build_llava,
    "llava_next": _build_llava_next,
    "internvl": _build_internvl,
    "llava_onevision": _build_llava_onevision,
    "idefics3": _build_idefics3,
    "llama_text": _build_llama_text,
}


def families() -> list[str]:
    return sorted(BUILDERS)


def build_tiny(family: str, directory: str | os.PathLike, *, seed: int = 0, overwrite: bool = False,
               text_width: int = 64, text_layers: int = 2) -> Path:
    """Build a tiny random checkpoint of ``family`` into ``directory`` (atomically); return the folder.

    ``text_width``/``text_layers`` grow the language model (e.g. to make linear layers dominate
    the weights when measuring quantization); the defaults keep load + generation to seconds.
    """
    if family not in BUILDERS:
        raise SettingError(f"no tiny builder for family {family!r}; available: {', '.join(families())}")
    size = text_size(text_width, text_layers)
    want = {"seed": seed, "text_width": text_width, "text_layers": text_layers}
    out = Path(directory)
    if out.exists() and _is_complete(out, want):
        if not overwrite:
            return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.building-", dir=out.parent))
    try:
        BUILDERS[family](tmp, seed, size)
        if out.exists():
            if not overwrite and _is_complete(out, want):  # another builder finished first
                shutil.rmtree(tmp, ignore_errors=True)
                return out
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.replace(out, old / "ckpt")
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.replace(tmp, out)
        except OSError:  # a concurrent builder renamed its copy into place first
            if not _is_complete(out, want):
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _is_complete(path: Path, want: dict[str, Any]) -> bool:
    """A finished build of the wanted version and sizes (the marker is the last file written)."""
    marker = path / "vlamb_tiny.json"
    try:
        meta = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return meta.get("tiny_version") == TINY_VERSION and all(meta.get(k) == v for k, v in want.items())


def tiny_path(family: str, *, seed: int = 0, cache_dir: str | os.PathLike | None = None) -> Path:
    """The cached tiny checkpoint of ``family``, built on first use."""
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    name = family if seed == 0 else f"{family}-seed{seed}"
    return build_tiny(family, root / "tiny" / f"v{TINY_VERSION}" / name, seed=seed)


# -- tiny zero-shot detectors, for the grounding scorer ---------------------------------------------------
TINY_DETECTOR_VERSION = 3
_TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "'", "the", "a", "is", "are", "on", "in", "of",
               "and", "left", "right", "middle", "center", "red", "blue", "green", "yellow", "white", "black", "bus",
               "car", "dog", "person", "man", "woman", "umbrella", "wearing", "color", "shirt", "t", "-", "one",
               "other", "two", "there", "which"]


def _tiny_grounding_dino(out: Path) -> None:
    from transformers import (
        BertConfig,
        BertTokenizerFast,
        GroundingDinoConfig,
        GroundingDinoForObjectDetection,
        GroundingDinoImageProcessor,
        GroundingDinoProcessor,
        SwinConfig,
    )

    # the vocabulary is passed as a mapping: transformers 5 ignores a ``vocab_file`` keyword (every word
    # would become [UNK])
    tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(_TINY_VOCAB)})
    proc = GroundingDinoProcessor(image_processor=GroundingDinoImageProcessor(
        size={"shortest_edge": 64, "longest_edge": 96}), tokenizer=tok)
    backbone = SwinConfig(image_size=64, patch_size=4, embed_dim=8, depths=[1, 1, 1, 1], num_heads=[1, 1, 1, 1],
                          window_size=2, out_features=["stage2", "stage3", "stage4"])
    text = BertConfig(vocab_size=len(_TINY_VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=32, max_position_embeddings=64)
    # decoder_layers >= 2: the box heads of layers 1.. are tied to layer 0's
    cfg = GroundingDinoConfig(backbone_config=backbone, text_config=text, d_model=32, encoder_layers=1,
                              decoder_layers=2, encoder_ffn_dim=32, decoder_ffn_dim=32, encoder_attention_heads=2,
                              decoder_attention_heads=2, num_queries=10, num_feature_levels=4, encoder_n_points=2,
                              decoder_n_points=2, max_text_len=32, use_timm_backbone=False)
    GroundingDinoForObjectDetection(cfg).save_pretrained(out)
    proc.save_pretrained(out)


def _tiny_owlv2(out: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        Owlv2Config,
        Owlv2ForObjectDetection,
        Owlv2ImageProcessor,
        Owlv2Processor,
        PreTrainedTokenizerFast,
    )

    words = ["<|startoftext|>", "<|endoftext|>", *[w for w in _TINY_VOCAB if not w.startswith("[")]]
    tk = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(words)}, unk_token="<|endoftext|>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<|startoftext|>", eos_token="<|endoftext|>",
                                  pad_token="<|endoftext|>", model_max_length=16)
    proc = Owlv2Processor(image_processor=Owlv2ImageProcessor(size={"height": 64, "width": 64}), tokenizer=tok)
    cfg = Owlv2Config(text_config=dict(vocab_size=len(words), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                       num_attention_heads=2, max_position_embeddings=16, bos_token_id=0,
                                       eos_token_id=1, pad_token_id=1),
                      vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, image_size=64, patch_size=16), projection_dim=32)
    Owlv2ForObjectDetection(cfg).save_pretrained(out)
    proc.save_pretrained(out)


_TINY_BUILDERS = {"grounding-dino": _tiny_grounding_dino, "owlv2": _tiny_owlv2}


def build_tiny_detector(directory: str | os.PathLike, *, kind: str = "grounding-dino", seed: int = 0) -> Path:
    """A tiny random zero-shot detector (real config, processor and tokenizer classes), built offline.

    ``kind`` is ``grounding-dino`` (what lang-sam uses) or ``owlv2``. It exercises exactly the code
    path of the hub checkpoints; its boxes are random, so it demonstrates the pipeline and never
    measures anything. Written atomically, so concurrent builders never see half a checkpoint.
    """
    import torch

    if kind not in _TINY_BUILDERS:
        raise SettingError(f"no tiny detector {kind!r}; choose one of {', '.join(_TINY_BUILDERS)}")
    out = Path(directory)
    marker = out / "vlamb_tiny.json"
    want = {"version": TINY_DETECTOR_VERSION, "seed": seed, "kind": kind}
    if marker.is_file() and json.loads(marker.read_text()) == want:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.building-", dir=out.parent))
    try:
        torch.manual_seed(seed)
        _TINY_BUILDERS[kind](tmp)
        (tmp / "vlamb_tiny.json").write_text(json.dumps(want))
        if out.exists():
            shutil.rmtree(out, ignore_errors=True)
        try:
            os.replace(tmp, out)
        except OSError:  # a concurrent builder finished first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def tiny_detector_path(kind: str = "grounding-dino", *, seed: int = 0,
                       cache_dir: str | os.PathLike | None = None) -> Path:
    """The cached tiny detector (built on first use) under the package's per-user cache."""
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return build_tiny_detector(root / "tiny" / f"{kind}-v{TINY_DETECTOR_VERSION}-seed{seed}", kind=kind, seed=seed)
