"""VAGUE prompts, ported verbatim: the paper's figures (J15–J24) and the released code's wording.

``paper`` is the default and keeps each figure's text as printed: the MCQ figures put a blank line
between lines (possibly a typesetting artefact; the released code is single-spaced) and Figs. J23/J24
write "answer₁"/"answer₂" with subscripts. ``code`` reproduces ``utils/exp_prompts.py`` character for character
(leading newline, trailing spaces, ``Utterance :`` with a space, "the intention" in the LM
prompts, and the SM+CoT free-form template that begins with the MCQ wording).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

from vlamb_nb.benchmarks.vague.data import LETTERS, item_image, official_addressee, read_captions
from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.models.base import IMAGE_SLOT, DecodingParams, Request, user_message

WORDINGS = ("paper", "code")

CAPTION_PROMPT = "Describe the provided image in 2~3 sentences."

# -- paper wording (Figs. J15–J24) -----------------------------------------------------------------
_P_VLM_HEAD = (
    "Select the option that best explains the underlying intention of the speaker's utterance based on the "
    "given image.\n\n"
    "Make sure any possible situation outside of the image SHOULD NOT affect your choice.\n\n"
    "We assume that the speaker wants the listener to take a specific action appropriate to the situation.\n\n"
)
_P_SM_HEAD = (
    "Select the option that best explains the underlying intention of the speaker's utterance based on the "
    "description of the scene.\n\n"
    "Make sure any possible situation outside of the scene SHOULD NOT affect your choice.\n\n"
    "We assume that the speaker wants the listener to take a specific action appropriate to the situation.\n\n"
)
_P_ANSWER = "Your answer: (Output only the letter among A, B, C, and D)"
_P_COT_ANSWER = (
    "Your answer1 (reasoning): (Output your reasoning process in 2~3 sentences, which starts with "
    "\"Let's think step by step.\")\n\n"
    "Your answer2 (intention): (Output only the letter among A, B, C, and D)"
)
_P_COT_FF_ANSWER = (
    "Your answer\u2081 (reasoning): (Output your reasoning process in 2~3 sentences, which starts with "
    "\"Let's think step by step.\")\n\n"
    "Your answer\u2082 (intention): (Start your sentence with \"The speaker wants {p} to...\" and do not exceed "
    "15 words.)"
)
_P_FF_VLM_HEAD = (
    "What do you think is the underlying intention of the speaker's utterance based on the given image?\n"
    "Make sure any possible situation outside of the image SHOULD NOT affect your answer.\n"
    "We assume that the speaker wants the listener to take a specific action appropriate to the situation.\n"
)
_P_FF_SM_HEAD = (
    "What do you think is the underlying intention of the speaker's utterance based on the description of the "
    "scene?\n"
    "Make sure any possible situation outside of the scene SHOULD NOT affect your answer.\n"
    "We assume that the speaker wants the listener to take a specific action appropriate to the situation.\n"
)
_P_FF_ANSWER = "Your answer: (Start your sentence with \"The speaker wants {p} to...\")"

PAPER = {
    # Fig. J15
    "vlm": _P_VLM_HEAD + "Utterance: {utt}\n\n[Choices]\n\n{mcq}\n\n" + _P_ANSWER,
    # Fig. J16
    "sm": _P_SM_HEAD + "Scene Description: {cap}\n\nUtterance: {utt}\n\n[Choices]\n\n{mcq}\n\n" + _P_ANSWER,
    # Fig. J17
    "lm": ("Select the option that best explains the underlying intention of the speaker's utterance.\n\n"
           "We assume that the speaker wants the listener to take a specific action.\n\n"
           "Utterance: {utt}\n\n[Choices]\n\n{mcq}\n\n" + _P_ANSWER),
    # Fig. J21
    "vlm_cot": (_P_VLM_HEAD + "Also, explain reasoning process of your answer.\n\n"
                "Utterance: {utt}\n\n[Choices]\n\n{mcq}\n\n" + _P_COT_ANSWER),
    # Fig. J22
    "sm_cot": (_P_SM_HEAD + "Also, explain reasoning process of your answer.\n\n"
               "Scene Description: {cap}\n\nUtterance: {utt}\n\n[Choices]\n\n{mcq}\n\n" + _P_COT_ANSWER),
    # Fig. J18
    "vlm_ff": (_P_FF_VLM_HEAD + "Your answer SHOULD NOT exceed 15 words.\n\nUtterance: {utt}\n\n" + _P_FF_ANSWER),
    # Fig. J19
    "sm_ff": (_P_FF_SM_HEAD + "Your answer SHOULD NOT exceed 15 words.\n\nScene Description: {cap}\n\n"
              "Utterance: {utt}\n\n" + _P_FF_ANSWER),
    # Fig. J20
    "lm_ff": ("What do you think is the underlying intention of the speaker's utterance?\n"
              "We assume that the speaker wants the listener to take a specific action.\n"
              "Your answer SHOULD NOT exceed 15 words.\n\nUtterance: {utt}\n\n" + _P_FF_ANSWER),
    # Fig. J23
    "vlm_cot_ff": (_P_FF_VLM_HEAD + "Also, explain reasoning process of your answer.\n\nUtterance: {utt}\n\n"
                   + _P_COT_FF_ANSWER),
    # Fig. J24
    "sm_cot_ff": (_P_FF_SM_HEAD + "Also, explain reasoning process of your answer.\n\nScene Description: {cap}\n\n"
                  "Utterance: {utt}\n\n" + _P_COT_FF_ANSWER),
}

# -- released code wording (utils/exp_prompts.py) --------------------------------------------------
_C_TAIL = "\n    "
_C_ANSWER = "Your answer : (Output only the letter among A,B,C and D)"
_C_VLM_HEAD = (
    "\nSelect the option that best explains the underlying intention of the speaker's utterance based on the "
    "given image. \n"
    "Make sure any possible situation outside of the image SHOULD NOT affect your choice.\n"
    "We assume that the speaker wants the listener to take a specific action appropriate to the situation.\n"
)
_C_SM_HEAD = (
    "\nSelect the option that best explains the underlying intention of the speaker's utterance based on the "
    "description of the scene. \n"
    "Make sure any possible situation outside of the scene SHOULD NOT affect your choice.\n"
    "We assume that the speaker wants the listener to take a specific action appropriate to the situation.\n"
)
_C_COT = "Also, explain reasoning process of your answer.\n"
_C_COT_ANSWER = (
    "Your answer1 (reasoning) : (Output your reasoning process in 2~3 sentences, which starts with "
    "\"Let's think step by step.\")\nYour answer2 (intention) : (Output only the letter among A,B,C and D)"
)
_C_COT_FF_ANSWER = (
    "Your answer1 (reasoning) : (Output your reasoning process in 2~3 sentences, which starts with "
    "\"Let's think step by step.\")\nYour answer2 (intention): (Start your sentence with \"The speaker wants {p} "
    "to...\" and do not exceed 15 words.)"
)
_C_FF_ANSWER = "Your answer : (Start your sentence with \"The speaker wants {p} to...\")"
_C_FF_VLM_HEAD = (
    "\nWhat do you think is the underlying intention of the speaker's utterance based on the given image?\n"
    "Make sure any possible situation outside of the image SHOULD NOT affect your answer.\n"
    "We assume that the speaker wants the listener to take a specific action appropriate to the situation.\n"
)
_C_FF_SM_HEAD = (
    "\nWhat do you think is the underlying intention of the speaker's utterance based on the description of the "
    "scene?\n"
    "Make sure any possible situation outside of the scene SHOULD NOT affect your answer.\n"
    "We assume that the speaker wants the listener to take a specific action appropriate to the situation.\n"
)

CODE = {
    "vlm": _C_VLM_HEAD + "\nUtterance : {utt}\n[Choices]\n{mcq}\n\n" + _C_ANSWER + _C_TAIL,  # plain_mcq
    "lm": ("\nSelect the option that best explains the intention of the speaker's utterance. \n"  # text_mcq
           "We assume that the speaker wants the listener to take a specific action. \n"
           "\nUtterance : {utt}\n[Choices]\n{mcq}\n\n" + _C_ANSWER + _C_TAIL),
    "sm": (_C_SM_HEAD + "\nScene Description : {cap}\nUtterance : {utt}\n[Choices]\n{mcq}\n\n"  # caption_mcq
           + _C_ANSWER + _C_TAIL),
    "vlm_cot": (_C_VLM_HEAD + _C_COT + "\nUtterance : {utt}\n[Choices]\n{mcq}\n\n"  # zeroshot_cot_mcq
                + _C_COT_ANSWER + _C_TAIL),
    "sm_cot": (_C_SM_HEAD + _C_COT + "\nScene Description : {cap}\nUtterance : {utt}\n[Choices]\n{mcq}\n\n"
               + _C_COT_ANSWER + _C_TAIL),  # zeroshot_cot_sm_mcq
    "vlm_ff": (_C_FF_VLM_HEAD + "Your answer SHOULD NOT exceed 15 words.\n\nUtterance : {utt}\n\n"  # plain_da
               + _C_FF_ANSWER + _C_TAIL),
    "lm_ff": ("\nWhat do you think is the intention of the speaker's utterance?\n"  # text_da
              "We assume that the speaker wants the listener to take a specific action.\n"
              "Your answer SHOULD NOT exceed 15 words.\n\nUtterance : {utt}\n\n" + _C_FF_ANSWER + _C_TAIL),
    "sm_ff": (_C_FF_SM_HEAD + "Your answer SHOULD NOT exceed 15 words.\n\n"  # caption_da
              "Scene Description : {cap}\nUtterance : {utt}\n\n" + _C_FF_ANSWER + _C_TAIL),
    "vlm_cot_ff": (_C_FF_VLM_HEAD + _C_COT + "\nUtterance : {utt}\n\n" + _C_COT_FF_ANSWER + _C_TAIL),
    # zeroshot_cot_sm_da: the released template starts with the MCQ wording (kept as released)
    "sm_cot_ff": (_C_SM_HEAD + _C_COT + "\nScene Description : {cap}\nUtterance : {utt}\n\n"
                  + _C_COT_FF_ANSWER + _C_TAIL),
}


def shifted(ordering: list[str], shift: int) -> list[str]:
    """The letters shown for the options (key order: correct, FS, SU, NE) when every option moves ``shift``
    letters on, wrapping from D to A: what ``vlm_shiftK`` asks with, and what its answers are read against."""
    return [LETTERS[(LETTERS.index(letter) + shift) % len(LETTERS)] for letter in ordering]


def option_block(options: dict[str, str], ordering: list[str]) -> str:
    """``"A: text"`` lines sorted by letter, as the released ``get_prompt`` builds them."""
    texts = [options["correct"], options["FS"], options["SU"], options["NE"]]
    return "\n".join(sorted(ordering[i] + ": " + texts[i] for i in range(4)))


def template(prompt: str, wording: str = "paper") -> str:
    """The template for a prompt kind (``vlm``, ``sm_cot``, ``lm_ff``, ...) in the chosen wording."""
    table = {"paper": PAPER, "code": CODE}.get(wording)
    if table is None:
        raise SettingError(f"unknown VAGUE prompt wording {wording!r}; choose one of {', '.join(WORDINGS)}")
    if prompt not in table:
        raise SettingError(f"unknown VAGUE prompt {prompt!r}; choose one of {', '.join(table)}")
    return table[prompt]


def render(prompt: str, *, utt: str, options: dict[str, str], ordering: list[str], addressee: str,
           caption: str = "", wording: str = "paper") -> str:
    """Fill a template; placeholders are replaced literally so braces in the data stay as they are."""
    text = template(prompt, wording)
    fills = {"{utt}": utt, "{cap}": caption, "{p}": addressee}
    if "{mcq}" in text:
        fills["{mcq}"] = option_block(options, ordering)
    # one pass over the template, so data containing "{cap}" etc. is never substituted again
    import re

    return re.sub(r"\{(utt|cap|mcq|p)\}", lambda m: fills[m.group(0)], text)


BASE_SETTINGS = ("lm", "sm", "sm_ext", "vlm", "sm_cot", "vlm_cot")


SETTINGS = BASE_SETTINGS + tuple(f"{s}_ff" for s in BASE_SETTINGS)

#: prompt-sensitivity variants of the VLM setting, on the same items: ``vlm_shiftK`` moves every option K letters
#: on (the correct option's letter too; over the four runs each option is shown at every letter once), ``vlm_code``
#: asks with the released code's wording (the paper's own other wording). What each varies: ``order`` or
#: ``wording`` (:mod:`vlamb_nb.sensitivity` reads it).
VARIANTS = {"vlm_shift1": "order", "vlm_shift2": "order", "vlm_shift3": "order", "vlm_code": "wording"}
#: every setting a run may name: the paper's, then the variants (``"all"`` in the notebook is the paper's)
ALL_SETTINGS = SETTINGS + tuple(VARIANTS)
#: the setting each variant varies
VARIANT_OF = {v: "vlm" for v in VARIANTS}


READINGS = ("generate", "loglik")


# -- settings ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SettingSpec:
    """What a setting shows the model and which prompt it uses."""

    name: str
    prompt: str  # key in vague_prompts.PAPER / CODE
    image: bool  # the answer step sees the image
    captions: str  # "none" | "self" (the model captions first) | "external"
    cot: bool
    free_form: bool
    #: options moved this many letters on (a prompt-sensitivity variant)
    shift: int = 0
    #: the wording this setting asks in regardless of the run's (``vlm_code``); None: the run's
    wording: str | None = None


def setting_spec(setting: str) -> SettingSpec:
    if setting not in ALL_SETTINGS:
        raise SettingError(f"unknown vague setting {setting!r}; choose one of {', '.join(ALL_SETTINGS)}")
    if setting in VARIANTS:
        base = setting_spec(VARIANT_OF[setting])
        shift = int(setting[-1]) if setting.startswith("vlm_shift") else 0
        return replace(base, name=setting, shift=shift, wording="code" if setting == "vlm_code" else None)
    ff = setting.endswith("_ff")
    base = setting[:-3] if ff else setting
    prompt = "sm" if base == "sm_ext" else base
    captions = "self" if base in ("sm", "sm_cot") else "external" if base == "sm_ext" else "none"
    return SettingSpec(setting, prompt + ("_ff" if ff else ""), base.startswith("vlm"), captions,
                       base.endswith("_cot"), ff)


def decoding(setting: str, mode: str = "greedy", max_new_tokens: int | None = None) -> DecodingParams:
    """Greedy by default (the paper states none); ``code`` = the released vLLM temperature 0.2, 1024 tokens."""
    if mode == "code":
        return DecodingParams(max_new_tokens=max_new_tokens or 1024, do_sample=True, temperature=0.2)
    if mode != "greedy":
        raise SettingError(f"unknown decoding {mode!r}; choose greedy or code")
    spec = setting_spec(setting) if setting != "caption" else None
    default = 128 if spec is None else 256 if spec.cot else 64 if spec.free_form else 16
    return DecodingParams(max_new_tokens=max_new_tokens or default)


def caption_requests(items, *, params: DecodingParams | None = None) -> list[Request]:
    """Step 1 of SM: the model describes each tagged image with the official caption prompt."""
    out = []
    for _, item in items.iterrows():
        out.append(Request(id=f"{item['id']}::caption", messages=[user_message(IMAGE_SLOT,
                                                                                CAPTION_PROMPT)],
                           images=[item_image(item)], params=params or decoding("caption"),
                           benchmark="vague", setting="caption", meta={"item_id": item["id"], "step": "caption"}))
    return out


#: Table B2's OCR sanity test (App. B.4): the t-shirt colour of a tagged person in three COCO images. The
#: paper does not give the wording; this question is ours (recorded as a deviation where it is run).
OCR_QUESTION = "What is the color of the t-shirt that {person} is wearing?"
#: image file (in the released ``ocr_test/`` folder), the tagged person asked about, the expected colour
OCR_ITEMS = (("a", "ocr_1.jpg", "person1", "red"), ("b", "ocr_2.jpg", "person1", "red"),
             ("c", "ocr_3.jpg", "person5", "red"))


#: the released code serves Qwen2.5-VL with vLLM at this pixel budget (App. / run scripts)
OFFICIAL_QWEN_MAX_PIXELS = 1280 * 28 * 28


def requests(items, setting: str, *, wording: str = "paper", captions: Any = None,
             reading: str = "generate", decoding_mode: str = "greedy", max_new_tokens: int | None = None,
             **kwargs: Any) -> list[Request]:
    """Answer-step requests. SM settings need ``captions`` (item id → caption; ``"dataset"`` uses the
    data's own GPT-4o ``meta.caption``; a path reads an external caption file)."""
    if kwargs:
        raise SettingError(f"unknown vague request option(s): {', '.join(kwargs)}")
    spec = setting_spec(setting)
    template(spec.prompt, wording)  # validates the wording early
    if reading not in READINGS:
        raise SettingError(f"unknown reading {reading!r}; choose one of {', '.join(READINGS)}")
    if reading == "loglik" and spec.free_form:
        raise SettingError("log-likelihood reading applies to MCQ settings only")
    caps = _caption_map(items, spec, captions)
    params = decoding(setting, decoding_mode, max_new_tokens)
    wording = spec.wording or wording
    out = []
    for _, item in items.iterrows():
        code = wording == "code"
        cap = caps.get(item["id"], "") if caps is not None else ""
        text = render(
            spec.prompt, utt=item["indirect_raw"] if code else item["indirect"], options=item["options"],
            ordering=shifted(list(item["ordering"]), spec.shift), caption=cap,
            addressee=official_addressee(item["solution"]) if code else item["addressee"],
            wording=wording)
        parts = (IMAGE_SLOT, text) if spec.image else (text,)
        images = [item_image(item)] if spec.image else []
        out.append(Request(id=f"{item['id']}::{setting}", messages=[user_message(*parts)], images=images,
                           params=params, benchmark="vague", setting=setting,
                           options=list(LETTERS) if reading == "loglik" else None,
                           meta={"item_id": item["id"], "wording": wording, "reading": reading}
                           | ({"shift": spec.shift} if spec.shift else {})))
    return out

def _caption_map(items, spec: SettingSpec, captions: Any) -> dict[str, str] | None:
    if spec.captions == "none":
        return None
    if isinstance(captions, str) and captions == "dataset":
        return dict(zip(items["id"], items["caption"], strict=True))
    if isinstance(captions, (str, os.PathLike)):
        captions = read_captions(captions)
    if not isinstance(captions, dict):
        how = ("run the caption step first (a run of the setting does both steps)" if spec.captions == "self"
               else "pass captions=<file> (JSON {image: caption} or CSV image_name,caption)")
        raise SettingError(f"setting {spec.name!r} needs captions: {how}, or captions='dataset'")
    missing = [i for i in items["id"] if i not in captions]
    if missing:
        raise DataError(f"{len(missing)} item(s) have no caption, e.g. {missing[0]!r}", field="caption")
    return captions


def setting_deviations(model: Any, setting: str, *, decoding_mode: str = "greedy", reading: str = "generate",
                       captions: Any = None, max_pixels: int | None = None, **_: Any) -> list[Any]:
    """How asking with these options differs from the paper's setup (``max_pixels``: the model's image budget)."""
    from vlamb_nb.meta import Deviation

    out = []
    from vlamb_nb.models.base import Backend

    if model.family == "qwen2_5_vl" and model.backend is Backend.HF and max_pixels != OFFICIAL_QWEN_MAX_PIXELS:
        out.append(Deviation("image resolution", "max_pixels 1280·28·28 = 1,003,520 (released code, vLLM)",
                             f"max_pixels {max_pixels if max_pixels else 'the processor default'}", "all"))
    if decoding_mode == "greedy":
        out.append(Deviation("decoding", "not stated (released code: vLLM sampling, temperature 0.2, "
                             "1024 tokens)", "greedy, short token budget", "all"))
    if reading == "loglik":
        out.append(Deviation("answer reading", "letter parsed from generated text",
                             "option-letter log-likelihood (alternative reading)", "all"))
    spec = setting_spec(setting) if setting in ALL_SETTINGS else None
    if spec is not None and spec.shift:
        out.append(Deviation("option order", "the released ordering", f"every option moved {spec.shift} letter(s) "
                             "on (a prompt-sensitivity variant of vlm)", setting))
    if spec is not None and setting in VARIANTS and spec.wording:
        out.append(Deviation("prompt wording", "the paper's figures (J15)", "the released code's wording (a "
                             "prompt-sensitivity variant of vlm)", setting))
    if spec is not None and spec.captions == "external" and isinstance(captions, str) and captions == "dataset":
        out.append(Deviation("external captions", "GPT-4o captions file (not released)",
                             "the dataset's own GPT-4o meta.caption, written while the item was generated with "
                             "the intended action known: it may leak the answer and likely inflates Table F3",
                             "Table F3"))
    return out
