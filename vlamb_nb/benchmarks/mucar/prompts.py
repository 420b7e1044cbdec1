"""MUCAR prompts (Table 10, verbatim), input ablations, the answer parser and the CODIS-style judge.

The paper's templates have slots only for the question and the options; where the context goes
is not stated. Default here: the context is prefixed to the question (``"<context> <question>"``)
and the released option strings are joined with one space (``"A.x B.y"``). Both are options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vlamb_nb.benchmarks.mucar.data import LETTERS, split_option
from vlamb_nb.errors import SettingError
from vlamb_nb.models.base import DecodingParams

# -- Table 10, verbatim (flattened as the paper text prints it) ----------------------------------
PROMPT_EN = (
    "I'll give you an image. Please answer my question based on the image. Directly select the correct option "
    "(A, B, C, D, or E). Use the following format to answer: Answer: [ONLY the option letter; not a complete "
    "sentence] Only give me the reply according to this format, don't give me any other words. Now, please "
    "answer this question. Question: [QUESTION HERE] Options: [OPTIONS HERE]"
)
PROMPT_ZH = (
    "我会给你一张图片。请根据图片回答我的问题。直接选择正确选项(A, B, C, D, 或E)。请使用以下格式回答: Answer: "
    "[仅为选项字母; 不是完整句子] 请只按照此格式回复我, 不要给出任何其他文字。现在, 请回答这个问题。 问题: "
    "[QUESTION HERE] 选项: [OPTIONS HERE]"
)
PROMPT_MS = (
    "Saya akan berikan anda imej. Sila jawab soalan saya berdasarkan imej tersebut. Pilih terus pilihan yang "
    "betul (A, B, C, D, atau E). Gunakan format berikut untuk menjawab: Answer: [HANYA huruf pilihan; bukan "
    "ayat penuh] Berikan saya jawapan mengikut format ini sahaja, jangan berikan perkataan lain. Sekarang, "
    "sila jawab soalan ini. Soalan: [QUESTION HERE] Pilihan: [OPTIONS HERE]"
)
PROMPT_TEXT_ONLY = (
    "Please answer my question. Directly select the correct option (A, B, C, D, or E). Use the following "
    "format to answer: Answer: [ONLY the option letter; not a complete sentence] Only give me the reply "
    "according to this format, don't give me any other words. Now, please answer this question. Question: "
    "[QUESTION HERE] Options: [OPTIONS HERE]"
)
PROMPT_IS_AMBIGUOUS = (
    "Please determine whether this sentence is ambiguous. If the sentence is ambiguous, please answer 'Yes.'; "
    "otherwise, answer 'No.' Please respond directly with 'yes' or 'no', without any additional content. "
    "Sentence: [SENTENCE HERE]"
)
#: Table 6's line layout of the English prompt (the PDF's real line breaks are unknown).
PROMPT_EN_LINES = (
    "I'll give you an image. Please answer my question based on the image. Directly select the correct option "
    "(A, B, C, D, or E). Use the following format to answer:\n"
    "Answer: [ONLY the option letter; not a complete sentence]\n"
    "Only give me the reply according to this format, don't give me any other words. Now, please answer this "
    "question.\n"
    "Question: [QUESTION HERE] Options: [OPTIONS HERE]"
)

# -- settings: which inputs the model sees ---------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One input configuration: the template, and whether context / question / image are shown."""

    name: str
    template: str
    context: bool = True
    question: bool = True
    image: bool = True
    description: str = ""


SETTINGS: dict[str, Setting] = {s.name: s for s in [
    Setting("full", PROMPT_EN, description="(C,Q,I), English prompt (Table 2)"),
    Setting("full_zh", PROMPT_ZH, description="(C,Q,I), Chinese prompt (Table 12)"),
    Setting("full_ms", PROMPT_MS, description="(C,Q,I), Malay prompt (Table 12)"),
    Setting("q_i", PROMPT_EN, context=False, description="(Q,I): context removed (Table 3)"),
    Setting("c_q", PROMPT_TEXT_ONLY, image=False, description="(C,Q): image removed, text-only prompt (Fig. 4)"),
    Setting("c_i", PROMPT_EN, question=False, description="(C,I): question removed (Fig. 4)"),
    Setting("c_ambiguous", PROMPT_IS_AMBIGUOUS, question=False, image=False,
            description="'Is C ambiguous?' (Table 10; no results in the paper)"),
]}
PROMPT_LANGUAGE = {"full": "English", "full_zh": "Chinese", "full_ms": "Malay"}

CONTEXT_MODES = {
    "prefix": "{context} {question}",  # default
    "newline": "{context}\n{question}",
    "quoted": "\"{context}\" {question}",
}


def fold_context(context: str | None, question: str, mode: str = "prefix") -> str:
    """The text of the ``[QUESTION HERE]`` slot: context folded into the question (or either alone)."""
    if mode not in CONTEXT_MODES:
        raise SettingError(f"unknown context mode {mode!r}; choose one of {', '.join(CONTEXT_MODES)}")
    context = _text(context)
    question = _text(question)
    if not context:
        return question
    if not question:
        return context
    return CONTEXT_MODES[mode].format(context=context, question=question)


def _text(value: Any) -> str:
    """A text cell as a stripped string (missing values from a DataFrame become ``""``)."""
    return value.strip() if isinstance(value, str) else ""


def format_options(options: list[str], *, sep: str = " ", style: str = "raw") -> str:
    """``[OPTIONS HERE]``: released strings joined by ``sep``; ``style='spaced'`` writes ``A. x``."""

    if style == "raw":
        parts = [o.strip() for o in options]
    elif style == "spaced":
        parts = [f"{split_option(o)[0] or LETTERS[i]}. {split_option(o)[1]}" for i, o in enumerate(options)]
    else:
        raise SettingError(f"unknown option style {style!r}; choose raw or spaced")
    return sep.join(parts)


def build_prompt(item: Any, setting: str, *, context_mode: str = "prefix", option_sep: str = " ",
                 option_style: str = "raw", layout: str = "flat") -> str:
    """The full prompt text of one query under ``setting`` (Table 10 templates, slots filled)."""
    if setting not in SETTINGS:
        raise SettingError(f"unknown MUCAR setting {setting!r}; choose one of {', '.join(SETTINGS)}")
    s = SETTINGS[setting]
    template = s.template
    if layout == "lines" and template == PROMPT_EN:
        template = PROMPT_EN_LINES
    elif layout not in ("flat", "lines"):
        raise SettingError(f"unknown layout {layout!r}; choose flat or lines")
    if setting == "c_ambiguous":
        return template.replace("[SENTENCE HERE]", _text(item["context"]))
    context = item["context"] if s.context else None
    question = item["question"] if s.question else ""
    slot = fold_context(context, question, context_mode)
    return template.replace("[QUESTION HERE]", slot).replace(
        "[OPTIONS HERE]", format_options(list(item["options"]), sep=option_sep, style=option_style))


def applicable(item: Any, setting: str) -> tuple[bool, str]:
    """Whether ``setting`` can be built for ``item`` as specified (schema B embeds its context)."""
    s = SETTINGS[setting]
    if setting == "c_ambiguous":
        if item["context_embedded"]:
            return False, "context embedded in the question (schema B)"
        if not _text(item["context"]):
            return False, "empty context"
        return True, ""
    if (not s.context or not s.question) and item["context_embedded"]:
        return True, "context embedded in the question (schema B): cannot be separated"
    return True, ""


DEFAULT_PARAMS = DecodingParams(max_new_tokens=64)  # the paper gives no decoding settings; greedy here
