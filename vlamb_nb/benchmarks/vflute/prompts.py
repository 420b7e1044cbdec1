"""V-FLUTE prompts: the 21 instructions (Table 8), their seeded assignment, scene-graph CoT, k-shot.

The instruction list is kept in the official repository's order (``convert_to_llava_format.ipynb``),
because the seeded assignment (``random.seed(42)`` then one ``random.choice`` per instance, over
train, then validation, then test, in Hugging Face row order) depends on it. Table 8 prints the
same 21 sentences in a different order (``TABLE8_NUMBER`` maps them).

The seeded draw is the official *procedure*, but it does not reproduce the released test split's
instructions: it agrees on only 38 of the 723 test items (chance is 723/21 ≈ 34), at any offset into
the stream. The released files were evidently built from another row order or run. So the released
``prompt`` field is always preferred, and items whose instruction had to be re-drawn (Hugging Face
rows) are reported as a deviation.

Few-shot prompting is not described by the paper. Our rule (documented deviation): for each
target item, ``k`` training examples are drawn without replacement by
``random.Random(f"{seed}:{item id}")``, so an item's shots do not depend on which other items are
evaluated or in what order; each shot is a user turn (image + its own instruction) followed by the
official target ``"{explanation}\\nLABEL: {label}"``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from vlamb_nb.errors import SettingError
from vlamb_nb.models.base import DecodingParams

_OFFICIAL = [
    "Does the image entail or contradict the claim REPLACE_CLAIM? Explain your reasoning and provide a label between Entails or Contradicts.",  # noqa: E501
    "Is the image consistent with the statement REPLACE_CLAIM? Justify your answer and classify it as either Entails or Contradicts.",  # noqa: E501
    "Does the picture support or refute the assertion REPLACE_CLAIM? Offer your rationale and select a label: Entails or Contradicts.",  # noqa: E501
    "Can the image be seen as validating or opposing the claim REPLACE_CLAIM? Explain your thought process and assign a label of Entails or Contradicts.",  # noqa: E501
    "Is there agreement or disagreement between the image and the claim REPLACE_CLAIM? Provide your analysis and choose between Entails or Contradicts.",  # noqa: E501
    "Does this image confirm or deny the claim REPLACE_CLAIM? Discuss your reasoning and determine a label: Entails or Contradicts.",  # noqa: E501
    "Is the image in harmony with or in conflict with the statement REPLACE_CLAIM? Explain your justification and label it as Entails or Contradicts.",  # noqa: E501
    "Does the image corroborate or dispute the claim REPLACE_CLAIM? Outline your reasoning and categorize it under Entails or Contradicts.",  # noqa: E501
    "Is the depiction aligned with or against the claim REPLACE_CLAIM? Share your evaluation and identify it as either Entails or Contradicts.",  # noqa: E501
    "Does the visual evidence support or counter the claim REPLACE_CLAIM? Provide your explanation and assign it a label of Entails or Contradicts.",  # noqa: E501
    "Is the content of the image endorsing or challenging the claim REPLACE_CLAIM? Justify your position and label it as Entails or Contradicts.",  # noqa: E501
    "Does the illustration affirm or negate the claim REPLACE_CLAIM? Articulate your reasoning and apply a label: Entails or Contradicts.",  # noqa: E501
    "Is the portrayal in the image consistent with or contradictory to the claim REPLACE_CLAIM? Offer your insights and select between Entails or Contradicts.",  # noqa: E501
    "Does the image agree with or dispute the claim REPLACE_CLAIM? Explain your analysis and mark it as Entails or Contradicts.",  # noqa: E501
    "Is the image's message supporting or opposing the claim REPLACE_CLAIM? Discuss your rationale and determine the appropriate label: Entails or Contradicts.",  # noqa: E501
    "Does the illustration affirm or contest the claim REPLACE_CLAIM? Provide your argument and choose a label: Entails or Contradicts.",  # noqa: E501
    "Is the visual portrayal compatible with or adverse to the claim REPLACE_CLAIM? Justify your viewpoint and label it as Entails or Contradicts.",  # noqa: E501
    "Does the image's depiction validate or refute the claim REPLACE_CLAIM? Explain your point of view and select a label: Entails or Contradicts.",  # noqa: E501
    "Is the visual content in agreement or disagreement with the claim REPLACE_CLAIM? Offer your explanation and categorize it under Entails or Contradicts.",  # noqa: E501
    "Does the image's narrative confirm or disprove the claim REPLACE_CLAIM? Discuss your reasoning and identify it as either Entails or Contradicts.",  # noqa: E501
    "Is the image's representation supportive of or contradictory to the claim REPLACE_CLAIM? Articulate your analysis and assign the label: Entails or Contradicts.",  # noqa: E501
]
# the repository writes the list with "Entails or Contradicts" and then replaces it
PROMPTS: tuple[str, ...] = tuple(p.replace("Entails or Contradicts", "entailment or contradiction") for p in _OFFICIAL)

# Table 8 number of each instruction (repository order → paper order)
TABLE8_NUMBER: dict[str, int] = {p: n for p, n in zip(PROMPTS, [19, 13, 15, 20, 4, 2, 9, 17, 18, 5, 12, 14, 10, 6,
                                                                 3, 7, 16, 11, 8, 1, 21], strict=True)}

PROMPT_SEED = 42
SEEDED_RELEASE_MATCH = (38, 723)  # seeded draw == released instruction, test split (measured; see module doc)
SPLIT_ORDER = ("train", "validation", "test")
SPLIT_SIZES = {"train": 4578, "validation": 726, "test": 723}

CCOT_PROMPT = (
    "For the provided image and its associated question, generate a scene graph in JSON format that includes the "
    "following:\n"
    "1. Objects that are relevant to answering the question.\n"
    "2. Object attributes that are relevant to answering the question\n"
    "3. Object relationships that are relevant to answering the question.\n"
    "\n"
    "Scene Graph:"
)


#: the prompt-sensitivity variants of ``zero_shot``, on the same items: ``zero_shot_swapped`` names the labels the
#: other way round ("contradiction or entailment"), ``zero_shot_reworded`` asks each item with the next of the 21
#: instructions (Table 8, the paper's own paraphrases) instead of its own (:mod:`vlamb_nb.sensitivity`)
VARIANTS = {"zero_shot_swapped": "order", "zero_shot_reworded": "wording"}
LABEL_ORDER = "entailment or contradiction"


def variant_instruction(template: str, setting: str) -> str:
    """An item's instruction under a prompt-sensitivity variant (unchanged under any other setting)."""
    if setting == "zero_shot_swapped":
        if LABEL_ORDER not in template:
            raise SettingError(f"instruction does not name the labels as {LABEL_ORDER!r}: {template[:60]!r}")
        return template.replace(LABEL_ORDER, "contradiction or entailment")
    if setting == "zero_shot_reworded":
        at = PROMPTS.index(template) if template in PROMPTS else -1
        return PROMPTS[(at + 1) % len(PROMPTS)]
    return template


def label_named_first(setting: str) -> int:
    """The label (1 entailment, 0 contradiction) the instruction names first under ``setting``."""
    return 0 if setting == "zero_shot_swapped" else 1


def fill_claim(prompt: str, claim: str) -> str:
    """The official filling: ``REPLACE_CLAIM`` → the claim in double quotes (claim stripped)."""
    if "REPLACE_CLAIM" not in prompt:
        raise SettingError(f"instruction has no REPLACE_CLAIM slot: {prompt[:60]!r}")
    return prompt.replace("REPLACE_CLAIM", '"' + f"{claim.strip()}" + '"').strip()


def seeded_assignment(sizes: dict[str, int] | None = None, seed: int = PROMPT_SEED) -> dict[str, list[str]]:
    """The official per-instance instruction draw: one ``random.choice`` per row, train → validation → test."""
    sizes = dict(SPLIT_SIZES if sizes is None else sizes)
    rng = random.Random(seed)
    out: dict[str, list[str]] = {}
    for split in SPLIT_ORDER:
        out[split] = [rng.choice(PROMPTS) for _ in range(int(sizes.get(split, 0)))]
    return out


def assigned_prompt(split: str, index: int, *, sizes: dict[str, int] | None = None,
                    seed: int = PROMPT_SEED) -> str:
    """The instruction the seeded procedure gives row ``index`` of ``split``."""
    table = _cached_assignment(tuple(sorted((sizes or SPLIT_SIZES).items())), seed)
    if split not in table:
        raise SettingError(f"unknown split {split!r}; choose one of {', '.join(SPLIT_ORDER)}")
    rows = table[split]
    if not 0 <= index < len(rows):
        raise SettingError(f"{split} row {index} is outside the split's {len(rows)} rows")
    return rows[index]


_ASSIGN_CACHE: dict[tuple[Any, int], dict[str, list[str]]] = {}


def _cached_assignment(sizes: tuple[tuple[str, int], ...], seed: int) -> dict[str, list[str]]:
    key = (sizes, seed)
    if key not in _ASSIGN_CACHE:
        _ASSIGN_CACHE[key] = seeded_assignment(dict(sizes), seed)
    return _ASSIGN_CACHE[key]


def sg_first_prompt(filled_prompt: str) -> str:
    """Compositional CoT step 1 (official): the question without its last "?" part, then the CCoT request."""
    question = " ".join(filled_prompt.split("?")[:-1]).replace("  ", " ").strip()
    return "Question: " + question + "\n" + CCOT_PROMPT


def sg_second_prompt(scene_graph: str, filled_prompt: str) -> str:
    """Compositional CoT step 2 (official): the scene graph as context, then the question."""
    ctx = f"Scene Graph:\n{scene_graph}\nUse the image and scene graph as context and answer the following question:"
    return ctx + f"\nQuestion:\n{filled_prompt}"


def target_text(explanation: str, label: str, target: str = "multi_task") -> str:
    """The official fine-tuning / few-shot target; ``target="label_only"``: App. J's ablation, the label alone
    (the paper does not print it; ours keeps the ``LABEL:`` marker the official parser reads)."""
    if target == "label_only":
        return f"LABEL: {label}"
    if target != "multi_task":
        raise SettingError(f"unknown target {target!r}; choose multi_task or label_only")
    return f"{explanation.strip()}\nLABEL: {label}"


def choose_shots(item_id: str, pool_ids: Sequence[str], k: int, seed: int = PROMPT_SEED) -> list[str]:
    """``k`` shot ids for ``item_id`` (never the item itself), drawn by ``random.Random(f"{seed}:{item_id}")``."""
    if k < 0:
        raise SettingError(f"k must be >= 0, got {k}")
    pool = [p for p in pool_ids if p != item_id]
    if k > len(pool):
        raise SettingError(f"{k}-shot prompting needs at least {k} training examples, got {len(pool)}")
    return random.Random(f"{seed}:{item_id}").sample(pool, k)


WHITE_SIZE = (336, 336)  # the -Image ablation's white square; LLaVA-1.5's input size (the paper gives none)


PAPER_DECODING = DecodingParams(max_new_tokens=256, do_sample=False, num_beams=3, seed=42)


def white_image(size: tuple[int, int] = WHITE_SIZE):
    from PIL import Image

    return Image.new("RGB", size, (255, 255, 255))


def instruction(row: Any, prompt_source: str = "released") -> str:
    """The instruction template: the released one (``prompt`` column) or the official seeded draw."""
    if prompt_source not in ("released", "seeded"):
        raise SettingError("prompt_source must be 'released' or 'seeded'")
    p = row.get("prompt")
    if prompt_source == "released" and isinstance(p, str) and p:
        return p
    return assigned_prompt(row["split"], int(row["index"]))

def prompt_origin(row: Any, prompt_source: str = "released") -> str:
    """``"released"`` when the item's instruction is the one in the official files, else ``"seeded"``."""
    p = row.get("prompt")
    origin = row.get("prompt_origin")
    if prompt_source == "released" and isinstance(p, str) and p and origin != "seeded":
        return "released"
    return "seeded"

def seeded_prompt_count(items, prompt_source: str = "released") -> int:
    """How many items get a re-drawn instruction instead of the released one (a deviation when > 0)."""
    return int(sum(prompt_origin(r, prompt_source) == "seeded" for _, r in items.iterrows()))


def graph_failures(first: Any) -> list[dict[str, Any]]:
    """A failed answer row for each item whose scene graph failed (its answer is never asked), from the scene-graph
    turn's requests and answers (a live run's or a stored one's)."""
    out = []
    for r, err in zip(first.requests, first.generations["error"], strict=True):
        if isinstance(err, str) and err:
            iid = r.item_id
            out.append({"request_id": f"{iid}::answer", "item_id": iid, "turn": "answer",
                        "error": f"scene graph step failed: {err}", "setting": r.setting, "benchmark": r.benchmark})
    return out


def answer_requests(first: Any) -> tuple[list[Any], list[dict[str, Any]]]:
    """The scene-graph setting's second step: the answer asked with each item's scene graph, and a failed row
    for each item whose scene graph failed (it is never asked)."""
    from vlamb_nb.models.base import IMAGE_SLOT, Request, user_message

    second, failed = [], graph_failures(first)
    for r, text, err in zip(first.requests, first.generations["text"], first.generations["error"], strict=True):
        iid = r.meta["item_id"]
        if isinstance(err, str) and err:
            continue
        second.append(Request(id=f"{iid}::answer", messages=[user_message(IMAGE_SLOT, sg_second_prompt(
            text or "", r.meta["question"]))], images=list(r.images), params=r.params, benchmark=r.benchmark,
            setting=r.setting, meta={"item_id": iid, "step": "answer"}))
    return second, failed


def setting_deviations(setting: str, *, seeded_prompts: int = 0, params: Any = None) -> list[Any]:
    """How asking under ``setting`` differs from the paper: re-drawn instructions (``seeded_prompts`` items), the
    few-shot examples, the white image of the -Image ablation, and decoding ``params`` other than the paper's."""
    from vlamb_nb.meta import Deviation

    out = []
    if seeded_prompts:
        hit, total = SEEDED_RELEASE_MATCH
        out.append(Deviation("instruction assignment", "the released per-instance instruction (Table 8 pool)",
                             f"{seeded_prompts} item(s) re-drawn with the official random.seed(42) procedure, "
                             f"which matches only {hit} of the {total} released test instructions",
                             "all"))
    if setting == "few_shot":
        out.append(Deviation("few-shot examples", "not described", "k seeded training examples per item "
                             "(random.Random(f'{seed}:{item id}'))", "Table 4 5-shot rows"))
    if setting in VARIANTS:
        out.append(Deviation("instruction", "the item's own instruction (Table 8)", "labels named the other way "
                             "round" if setting == "zero_shot_swapped" else "the next of the 21 instructions",
                             setting))
    if setting == "hypothesis_only":
        out.append(Deviation("-Image ablation", "fine-tuned and evaluated on white.png (size not given)",
                             f"evaluation with a {WHITE_SIZE[0]}x{WHITE_SIZE[1]} white square", "Table 4"))
    if params is not None and params != PAPER_DECODING:
        out.append(Deviation("decoding", "beam 3, greedy, 256 new tokens, seed 42",
                             f"num_beams={params.num_beams}, max_new_tokens={params.max_new_tokens}, "
                             f"do_sample={params.do_sample}", "all"))
    return out


def requests(items, setting: str, item_image: Any, shots: dict[str, list[Any]] | None = None, *,
             prompt_source: str = "released", params: DecodingParams = PAPER_DECODING) -> list[Any]:
    """One request per item (``scene_graph``: the first, scene-graph step); ``item_image`` reads an item's image,
    ``shots`` are the few-shot examples of each item."""
    from vlamb_nb.models.base import IMAGE_SLOT, Request, assistant_message, user_message

    out = []
    for _, row in items.iterrows():
        filled = fill_claim(variant_instruction(instruction(row, prompt_source), setting), row["claim"])
        meta = {"item_id": row["id"], "dataset": row["dataset"],
                "prompt_origin": prompt_origin(row, prompt_source)}
        if setting == "scene_graph":
            out.append(Request(id=f"{row['id']}::sg", messages=[user_message(IMAGE_SLOT, sg_first_prompt(filled))],
                               images=[item_image(row)], params=params, benchmark="vflute", setting=setting,
                               meta={**meta, "step": "scene_graph", "question": filled}))
            continue
        image = white_image() if setting == "hypothesis_only" else item_image(row)
        messages, images = [], []
        if shots is not None:
            for shot in shots[row["id"]]:
                messages += [user_message(IMAGE_SLOT, fill_claim(instruction(shot, prompt_source),
                                                                 shot["claim"])),
                             assistant_message(target_text(shot["explanation"], shot["label"]))]
                images.append(item_image(shot))
            meta["shots"] = [s["id"] for s in shots[row["id"]]]
        messages.append(user_message(IMAGE_SLOT, filled))
        images.append(image)
        out.append(Request(id=str(row["id"]), messages=messages, images=images, params=params,
                           benchmark="vflute", setting=setting, meta=meta))
    return out


def shot_table(train, items, k: int, seed: int) -> dict[str, list[Any]]:
    """Each item's ``k`` seeded training examples (``train``: the loaded training split)."""
    if train is None:
        raise SettingError("few_shot needs train= (the training split: a DataFrame or a folder/file to load)")
    by_id = {r["id"]: r for _, r in train.iterrows()}
    return {iid: [by_id[s] for s in choose_shots(iid, list(by_id), k, seed)] for iid in items["id"]}
