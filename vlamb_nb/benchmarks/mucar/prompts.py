"""MUCAR prompts (Table 10, verbatim), input ablations, and Table 4's prompting strategies.

The paper's templates have slots only for the question and the options; where the context goes
is not stated. Default here: the context is prefixed to the question (``"<context> <question>"``)
and the released option strings are joined with one space (``"A.x B.y"``). Both are options.

Table 4 (§5.3) compares Vanilla (the Table 10 prompt), CoT, CODIS-specific prompting and the paper's
agent framework (three calls, or one unified prompt). The paper gives the agent's structure
(𝒜 = ℳ(𝒟⊕𝒬⊕𝒳⊕𝒯1), ℰ = ℳ(𝒟⊕𝒬⊕𝒳⊕𝒜⊕𝒯2), ℛ = ℳ(𝒟⊕𝒬⊕𝒳⊕ℰ⊕𝒯3)) but no prompt text for any of the
three strategies: every strategy text below is **ours**, minimal, and recorded as a deviation wherever
it is run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from vlamb_nb.benchmarks.mucar.data import HUB_IMAGES, LETTERS, NAME, ImageResolver, split_option
from vlamb_nb.errors import SettingError
from vlamb_nb.models.base import IMAGE_SLOT, DecodingParams, Request, user_message

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

# -- Table 4 strategies: wording ours (the paper gives none) ------------------------------------------
#: CoT (ours): Table 10's English prompt with "answer directly, no other words" replaced by "reason first",
#: keeping its answer line so the same parser reads it (the paper's CoT cases end in "Answer: X").
PROMPT_COT = (
    "I'll give you an image. Please answer my question based on the image. Think step by step: first explain "
    "your reasoning, then select the correct option (A, B, C, D, or E). End your reply with the answer in the "
    "following format: Answer: [ONLY the option letter; not a complete sentence] Now, please answer this "
    "question. Question: [QUESTION HERE] Options: [OPTIONS HERE]"
)
#: CODIS-specific prompting (ours): CODIS's task framing (an image is interpreted through its textual
#: context) stated in the instruction, then Table 10's direct-answer format.
PROMPT_CODIS = (
    "I'll give you an image and a context. The image, or the text, may be ambiguous on its own: first use the "
    "context to decide how the image should be understood, then answer my question based on both. Directly "
    "select the correct option (A, B, C, D, or E). Use the following format to answer: Answer: [ONLY the option "
    "letter; not a complete sentence] Only give me the reply according to this format, don't give me any other "
    "words. Now, please answer this question. Question: [QUESTION HERE] Options: [OPTIONS HERE]"
)
#: the agent's task description 𝒟 and input 𝒬 ⊕ 𝒳 (text part; the image is the request's image)
AGENT_TASK = ("I'll give you an image and a question with its context. The text and the image may each be "
              "ambiguous; read together they allow one interpretation. The question has options (A, B, C, D, or E).")
AGENT_INPUT = "Question: [QUESTION HERE] Options: [OPTIONS HERE]"
#: 𝒯1-𝒯3 (ours), each doing what §5.3 says its step does
AGENT_T1 = ("Step 1, ambiguity detection: identify what in the text or the image is ambiguous, the "
            "interpretations it allows, and why this matters for the question.")
AGENT_T2 = ("Step 2, contextual evidence: extract the evidence in the context and the image that decides "
            "between these interpretations.")
AGENT_T3 = ("Step 3, reasoning and answer: reason from the evidence to align the context with the image, then "
            "answer in the following format: Answer: [ONLY the option letter; not a complete sentence]")
AGENT_ONLY_THIS_STEP = "Reply with this step only; do not answer the question yet."
#: the three calls; step 3 sees the evidence ℰ but not the ambiguity analysis 𝒜, as §5.3 writes it
AGENT_STEPS = ("detect", "evidence", "answer")
AGENT_STEP_TEMPLATES = {
    "detect": "\n".join([AGENT_TASK, AGENT_INPUT, f"{AGENT_T1} {AGENT_ONLY_THIS_STEP}"]),
    "evidence": "\n".join([AGENT_TASK, AGENT_INPUT, "Ambiguity (step 1): [PREVIOUS HERE]",
                           f"{AGENT_T2} {AGENT_ONLY_THIS_STEP}"]),
    "answer": "\n".join([AGENT_TASK, AGENT_INPUT, "Evidence (step 2): [PREVIOUS HERE]", AGENT_T3]),
}
#: the unified alternative: one call, 𝒯 = 𝒯1 ⊕ 𝒯2 ⊕ 𝒯3
PROMPT_AGENT_UNIFIED = "\n".join([AGENT_TASK, AGENT_INPUT, AGENT_T1, AGENT_T2, AGENT_T3])
#: a budget that fits reasoning before the answer line (ours; the paper reports no decoding settings)
REASONING_TOKENS = 512

# -- settings: which inputs the model sees ---------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One input configuration: the template, and whether context / question / image are shown.

    ``strategy`` names Table 4's prompting strategy; ``steps`` lists the calls of a multi-step setting (the
    agent), whose templates are in :data:`AGENT_STEP_TEMPLATES`; ``max_new_tokens`` is its default budget.
    """

    name: str
    template: str
    context: bool = True
    question: bool = True
    image: bool = True
    description: str = ""
    strategy: str = "vanilla"
    steps: tuple[str, ...] = ()
    max_new_tokens: int = 64
    #: a prompt-sensitivity variant: the options shown in reverse order, their letters given anew
    reverse_options: bool = False


SETTINGS: dict[str, Setting] = {s.name: s for s in [
    Setting("full", PROMPT_EN, description="(C,Q,I), English prompt (Table 2)"),
    Setting("full_zh", PROMPT_ZH, description="(C,Q,I), Chinese prompt (Table 12)"),
    Setting("full_ms", PROMPT_MS, description="(C,Q,I), Malay prompt (Table 12)"),
    Setting("q_i", PROMPT_EN, context=False, description="(Q,I): context removed (Table 3)"),
    Setting("c_q", PROMPT_TEXT_ONLY, image=False, description="(C,Q): image removed, text-only prompt (Fig. 4)"),
    Setting("c_i", PROMPT_EN, question=False, description="(C,I): question removed (Fig. 4)"),
    Setting("c_ambiguous", PROMPT_IS_AMBIGUOUS, question=False, image=False,
            description="'Is C ambiguous?' (Table 10; no results in the paper)"),
    Setting("full_cot", PROMPT_COT, description="(C,Q,I), chain of thought (Table 4 'CoT'; wording ours)",
            strategy="cot", max_new_tokens=REASONING_TOKENS),
    Setting("full_codis", PROMPT_CODIS, description="(C,Q,I), CODIS-specific prompting (Table 4 'CODIS'; wording "
            "ours)", strategy="codis"),
    Setting("full_agent", AGENT_STEP_TEMPLATES["detect"], description="(C,Q,I), agent framework in three calls: "
            "ambiguity, evidence, answer (Table 4 'OURS'; T1-T3 ours)", strategy="agent", steps=AGENT_STEPS,
            max_new_tokens=REASONING_TOKENS),
    Setting("full_swap", PROMPT_EN, description="(C,Q,I), options in reverse order, letters given anew (prompt "
            "sensitivity)", reverse_options=True),
    Setting("full_lines", PROMPT_EN_LINES, description="(C,Q,I), the English prompt in Table 6's line layout "
            "(prompt sensitivity: the paper's other wording)"),
    Setting("full_agent_unified", PROMPT_AGENT_UNIFIED, description="(C,Q,I), agent framework as one unified "
            "prompt T1+T2+T3 (Table 4 'OURS'; wording ours)", strategy="agent_unified",
            max_new_tokens=REASONING_TOKENS),
]}
#: the prompt-sensitivity variants of ``full`` and what each varies (:mod:`vlamb_nb.sensitivity`)
VARIANTS = {"full_swap": "order", "full_lines": "wording"}
#: settings whose prompt text is ours (the paper gives none), and Table 4's row each one answers for
STRATEGY_SETTINGS = ("full_cot", "full_codis", "full_agent", "full_agent_unified")
TABLE4_ROWS = {"full": "Vanilla", "full_cot": "CoT", "full_codis": "CODIS", "full_agent": "OURS",
               "full_agent_unified": "OURS"}

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


def shown_options(options: list[str], setting: str) -> list[str]:
    """The options as a setting shows them: as released, or (``full_swap``) in reverse order with the letters
    given anew (``A.x`` for the last released option), so the correct one sits at the other letter."""
    if setting not in SETTINGS or not SETTINGS[setting].reverse_options:
        return list(options)
    texts = [split_option(o)[1] for o in options][::-1]
    return [f"{LETTERS[i]}.{t}" for i, t in enumerate(texts)]


def released_letter(letter: str | None, options: list[str], setting: str) -> str | None:
    """The released letter of the option shown at ``letter`` under ``setting`` (what gold is compared with)."""
    if letter is None or setting not in SETTINGS or not SETTINGS[setting].reverse_options:
        return letter
    letters = LETTERS[: len(options)]
    return letters[len(letters) - 1 - letters.index(letter)] if letter in letters else letter


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
                 option_style: str = "raw", layout: str = "flat", step: str | None = None,
                 previous: str = "") -> str:
    """The full prompt text of one query under ``setting`` (Table 10 templates, slots filled).

    Multi-step settings (the agent) take ``step`` (default the first) and ``previous``, the output of the
    step before, which fills the template's ``[PREVIOUS HERE]`` slot (after the question, so a model's text
    can never fill the question's slots).
    """
    if setting not in SETTINGS:
        raise SettingError(f"unknown MUCAR setting {setting!r}; choose one of {', '.join(SETTINGS)}")
    s = SETTINGS[setting]
    template = s.template
    if s.steps:
        step = step or s.steps[0]
        if step not in s.steps:
            raise SettingError(f"setting {setting!r} has the steps {', '.join(s.steps)}, not {step!r}")
        template = AGENT_STEP_TEMPLATES[step]
    elif step is not None:
        raise SettingError(f"setting {setting!r} is a single call; it has no step {step!r}")
    if layout == "lines" and template == PROMPT_EN:
        template = PROMPT_EN_LINES
    elif layout not in ("flat", "lines"):
        raise SettingError(f"unknown layout {layout!r}; choose flat or lines")
    if setting == "c_ambiguous":
        return template.replace("[SENTENCE HERE]", _text(item["context"]))
    context = item["context"] if s.context else None
    question = item["question"] if s.question else ""
    slot = fold_context(context, question, context_mode)
    text = template.replace("[QUESTION HERE]", slot).replace(
        "[OPTIONS HERE]", format_options(shown_options(list(item["options"]), setting), sep=option_sep,
                                         style=option_style))
    return text.replace("[PREVIOUS HERE]", _text(previous) or "(no output)")


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


#: the model behind every row of Table 4 (its caption)
TABLE4_MODEL = "gpt-4o-2024-11-20"


def requests(items, setting: str, *, images: str | os.PathLike | None = None,
             context_mode: str = "prefix", option_sep: str = " ", option_style: str = "raw",
             layout: str = "flat", params: DecodingParams | None = None, max_new_tokens: int | None = None,
             step: str | None = None, previous: dict[str, str] | None = None, **kwargs: Any) -> list[Request]:
    """One request per query (per applicable context for 'c_ambiguous'); images from ``images``.

    ``max_new_tokens`` overrides the setting's generation budget (a config-friendly shortcut for ``params``).

    ``images``: a folder or ``kevindragon221/MUCAR`` (a local hub snapshot); default the loader's.

    Multi-step settings: the requests of ``step`` (default the first); a later step needs ``previous``,
    each query's output of the step before (``uid`` → text). the run chains the steps.
    """
    if kwargs:
        raise SettingError(f"unknown MUCAR request option(s): {', '.join(kwargs)}")
    spec = SETTINGS[setting]
    if params is None:
        params = DecodingParams(max_new_tokens=int(max_new_tokens or spec.max_new_tokens))
    if spec.steps:
        step = step or spec.steps[0]
        if step != spec.steps[0] and previous is None:
            raise SettingError(f"step {step!r} of {setting!r} needs the outputs of the step before "
                               "(previous={uid: text}); the run chains the steps")
    resolver = None
    if spec.image:
        where = images if images is not None else items.attrs.get("images")
        if where is None:
            raise SettingError(f"setting {setting!r} needs images: pass images=<folder> or "
                               f"images={HUB_IMAGES!r} (a downloaded hub snapshot)")
        resolver = ImageResolver.from_spec(where)
    final = not spec.steps or step == spec.steps[-1]
    cache: dict[str, Any] = {}
    out = []
    for item in items.to_dict(orient="records"):
        ok, _ = applicable(item, setting)
        if not ok:
            continue
        text = build_prompt(item, setting, context_mode=context_mode, option_sep=option_sep,
                            option_style=option_style, layout=layout, step=step,
                            previous=(previous or {}).get(item["uid"], ""))
        imgs = []
        if resolver is not None:
            if item["image_id"] not in cache:
                cache[item["image_id"]] = resolver.load(item["image_id"])
            imgs = [cache[item["image_id"]]]
        parts = [IMAGE_SLOT, text] if imgs else [text]
        meta = {"item_id": item["uid"], "group": item["group"]} | ({"step": step} if step else {})
        out.append(Request(id=item["uid"] if final else f"{item['uid']}::{step}",
                           messages=[user_message(*parts)], images=imgs, params=params, benchmark=NAME,
                           setting=setting if final else f"{setting}:{step}", meta=meta))
    return out


def setting_deviations(model: Any, setting: str, *, max_new_tokens: int | None = None) -> list[Any]:
    """What differs from the paper for this run; ``max_new_tokens`` is the budget actually used."""
    from vlamb_nb.meta import Deviation

    out = []
    out.append(Deviation("answer matching", "a GPT-4o right/wrong judge (prompt not released)",
                         "rule parser (Answer: X, then fallbacks); optional CODIS-prompt judge", "all"))
    out.append(Deviation("context placement", "not stated (templates have no context slot)",
                         "context prefixed to the question", "all"))
    budget = max_new_tokens or SETTINGS[setting].max_new_tokens
    out.append(Deviation("decoding", "not reported", f"greedy, at most {budget} new tokens", "all"))
    out.append(Deviation("option set", "Table 2b/3/12 'with confusing options' (not released)",
                         "the released options only (Table 2a setting)", "Table 2b, Table 3, Table 12"))
    out.append(Deviation("Overall Acc_p", "aggregation rule not reconstructable",
                         "micro average over all groups (the six non-dual categories' groups for "
                         "Table 3 / Fig. 4 / Table 12 settings)", "Overall Acc_p"))
    if setting in VARIANTS:
        out.append(Deviation("prompt" if VARIANTS[setting] == "wording" else "option order", "Table 10's prompt, "
                             "options as released", SETTINGS[setting].description, setting))
    if setting in STRATEGY_SETTINGS:
        spec = SETTINGS[setting]
        out.append(Deviation("prompt wording", f"Table 4 '{TABLE4_ROWS[setting]}': no prompt text given",
                             f"ours ({spec.description}; prompts.py)", setting))
        out.append(Deviation("Table 4 data", "MUCAR subset and option setting not stated (Vanilla matches "
                             "neither Table 2a nor 2b)", "all queries given, released options, all seven "
                             "categories", "Table 4"))
        if model.model_id != TABLE4_MODEL:
            out.append(Deviation("Table 4 model", TABLE4_MODEL, model.model_id, "Table 4"))
        if spec.strategy.startswith("agent"):
            out.append(Deviation("agent variant", "three calls or one unified prompt: not stated which "
                                 "produced Table 4", "three calls (full_agent) or one unified call "
                                 "(full_agent_unified), each compared with the 'OURS' row", setting))
    if not SETTINGS[setting].context or not SETTINGS[setting].question:
        out.append(Deviation("ablation", "context/question removed",
                             "schema-B queries keep their embedded context (it is part of the question)",
                             setting))
    return out
