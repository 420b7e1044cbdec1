"""Sanity checks for saliency maps, after Adebayo et al. (2018), "Sanity Checks for Saliency Maps".

A method whose map barely changes when the model's weights are random, or when the image's content is gone,
is showing the architecture's or the image's priors (position, edges), not what the model used for its
answer. Each check compares the original map with the map after randomization by the Spearman rank
correlation of their token scores (one score per image token, the same teacher-forced answer throughout):

- **cascading model-parameter randomization** (their Sec. 3.1): on a deep copy of the model, never the
  loaded one, the parameter blocks are re-initialised from the output side down, one block at a time
  (output head, language-model layers last to first, text embeddings, projector, vision blocks last to
  first, vision embeddings), and every method's map is recomputed after each step;
- **input randomization**, in place of their data randomization test (Sec. 3.2): the image is replaced by
  noise, or its patches are shuffled, keeping its size (so the token layout) and the answer.

Why no data randomization test: it retrains the model on the training set with permuted labels and
compares maps of the two trained models; for a VLM that means (pre)training a billion-parameter model on
data that is mostly not released, which no notebook can do. The input variant is weaker: it shows that a
map depends on the image content at all, not that it depends on what the model learned about inputs and
labels; the cascading test covers the dependence on the learned weights.

A method *passes* a check when the correlation after full randomization (the last cascading step, or
each input variant) is below ``threshold`` (0.5 by default; a parameter, reported in every row). A map
that is constant (e.g. all-zero) has no rank order, so its correlation is NaN and it does not pass.
The correlation is over the image's tokens (``n_tokens`` in every row): with the few tokens of a tiny stand-in
it is noisy, and those models are random anyway, so their results show the pipeline, not a finding.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from vlamb_nb.errors import SettingError
from vlamb_nb.saliency.methods import METHODS

CASCADING = "cascading parameter randomization"
INPUT = "input randomization"
INPUT_VARIANTS = ("noise image", "shuffled patches")
FRAME_COLUMNS = ["check", "method", "step", "randomized", "share_randomized", "n_tokens", "spearman", "threshold",
                 "final", "below_threshold"]


# --------------------------------------------------------------------------------------------------
# pure parts
# --------------------------------------------------------------------------------------------------
def spearman(a: Any, b: Any) -> float:
    """Spearman rank correlation (average ranks for ties); NaN when either side is constant."""
    from scipy.stats import rankdata

    x, y = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise SettingError(f"cannot correlate maps of {x.size} and {y.size} tokens")
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(np.corrcoef(rankdata(x), rankdata(y))[0, 1])


def _blocks_edges(n_px: int, n: int) -> np.ndarray:
    return np.round(np.linspace(0, n_px, n + 1)).astype(int)


def shuffle_patches(image: Any, grid: tuple[int, int], *, seed: int = 0):
    """``image`` cut into ``grid`` = (rows, cols) blocks, the blocks moved to a random other order (never
    the identity); a block is resized when the grid does not divide the image evenly. Same size, same
    pixel statistics, content in the wrong places."""
    from PIL import Image

    rows, cols = int(grid[0]), int(grid[1])
    n = rows * cols
    if n < 2:
        raise SettingError(f"cannot shuffle a {rows}x{cols} grid: it has one block")
    w, h = image.size
    if rows > h or cols > w:
        raise SettingError(f"a {rows}x{cols} grid does not fit a {w}x{h} image")
    xs, ys = _blocks_edges(w, cols), _blocks_edges(h, rows)
    boxes = [(xs[c], ys[r], xs[c + 1], ys[r + 1]) for r in range(rows) for c in range(cols)]
    rng = np.random.default_rng(seed)
    perm = np.arange(n)
    while np.array_equal(perm, np.arange(n)):
        perm = rng.permutation(n)
    src = image.convert("RGB")
    out = Image.new("RGB", (w, h))
    for target, source in zip(boxes, perm, strict=True):
        block = src.crop(boxes[int(source)])
        size = (target[2] - target[0], target[3] - target[1])
        out.paste(block if block.size == size else block.resize(size, Image.Resampling.BILINEAR), target[:2])
    return out


def noise_image(image: Any, *, seed: int = 0):
    """Uniform RGB noise of ``image``'s size (the token layout stays the same)."""
    from PIL import Image

    w, h = image.size
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8))


# --------------------------------------------------------------------------------------------------
# the model's parameter blocks, output side first
# --------------------------------------------------------------------------------------------------
VISION_ROOTS = ("visual", "vision_tower", "vision_model")
VISION_UPPER = ("merger", "post", "head")  # vision-tower parts above its blocks (grouped with the projector)


def _under(name: str, prefix: str) -> bool:
    return bool(prefix) and (name == prefix or name.startswith(prefix + "."))


def _module_name(model: Any, target: Any) -> str | None:
    return next((n for n, m in model.named_modules(remove_duplicate=False) if m is target), None)


def randomization_blocks(explainer: Any) -> list[tuple[str, list[str]]]:
    """(block name, parameter names) of the explainer's model in cascading order, output side first.

    Every parameter name (tied ones under each of their names) is in exactly one block, so the last step
    has re-initialised the whole model. A model with no recognisable vision tower puts everything outside
    the language model and its head into one "projector and vision" block.
    """
    hf = explainer.hf
    names = [n for n, _ in hf.named_parameters(remove_duplicate=False)]
    lm_name = _module_name(hf, explainer._language_model())
    layers = getattr(explainer._language_model(), "layers", None)
    if lm_name is None or not layers:
        raise SettingError(f"{explainer.family}: cannot find the language model's layers to randomize")
    out_emb = hf.get_output_embeddings() if hasattr(hf, "get_output_embeddings") else None
    head_name = _module_name(hf, out_emb) if out_emb is not None else None

    in_lm = [n for n in names if _under(n, lm_name)]
    layer_names = [[n for n in in_lm if _under(n, f"{lm_name}.layers.{i}")] for i in range(len(layers))]
    lm_rest = [n for n in in_lm if not any(_under(n, f"{lm_name}.layers.{i}") for i in range(len(layers)))]
    embeddings = [n for n in lm_rest if "embed" in n.removeprefix(lm_name)]
    top = [n for n in lm_rest if n not in embeddings]  # the final norm
    head = [n for n in names if head_name and _under(n, head_name)]

    roots = [n for n, _ in hf.named_modules() if n.rpartition(".")[2] in VISION_ROOTS and not _under(n, lm_name)]
    vroot = min(roots, key=len) if roots else ""
    vision_blocks: list[list[str]] = []
    if vroot:
        lists = [(n, m) for n, m in hf.named_modules() if _under(n, vroot) and type(m).__name__ == "ModuleList"]
        if lists:
            bname, blist = max(lists, key=lambda x: len(x[1]))
            vision_blocks = [[n for n in names if _under(n, f"{bname}.{j}")] for j in range(len(blist))]
    in_blocks = {n for b in vision_blocks for n in b}
    vrest = [n for n in names if _under(n, vroot) and n not in in_blocks]
    upper = [n for n in vrest if any(p.startswith(VISION_UPPER) for p in n.removeprefix(vroot).split("."))]
    lower = [n for n in vrest if n not in upper]
    taken = set(in_lm) | set(head) | set(vrest) | in_blocks
    projector = [n for n in names if n not in taken] + upper

    blocks = [("output head", head + top)]
    blocks += [(f"language layer {i}", layer_names[i]) for i in reversed(range(len(layers)))]
    blocks += [("text embeddings", embeddings), ("projector" if vroot else "projector and vision", projector)]
    blocks += [(f"vision block {j}", vision_blocks[j]) for j in reversed(range(len(vision_blocks)))]
    blocks += [("vision embeddings", lower)]
    blocks = [(b, ns) for b, ns in blocks if ns]
    flat = [n for _, ns in blocks for n in ns]
    if sorted(flat) != sorted(names):  # a bug here would leave weights trained while claiming "full"
        raise SettingError(f"{explainer.family}: the randomization blocks do not cover the parameters exactly once")
    return blocks


def randomize_parameters(model: Any, names: Sequence[str], *, generator: Any) -> int:
    """Replace each named parameter with Gaussian noise of the tensor's own mean and std; returns the count
    of values replaced.

    Matching each tensor's scale keeps activations in range, so a changed map means lost learned structure,
    not overflow; and it needs no family-specific initialiser. A new Parameter is assigned (never written in
    place), so a weight tied to a block not yet randomized (the output head and the text embeddings) stays
    untouched there. Constant tensors (a norm at its initial 1) stay constant, as a re-initialisation would.
    """
    import torch

    n = 0
    for name in names:
        mod_name, _, attr = name.rpartition(".")
        mod = model.get_submodule(mod_name)
        old = getattr(mod, attr)
        if not old.is_floating_point():
            raise SettingError(f"{name} is stored as {old.dtype} (quantized?): cannot re-initialise it; load the "
                               "model without quantization for the randomization check")
        x = old.detach().float()
        std = x.std() if x.numel() > 1 else torch.zeros(())
        new = torch.randn(old.shape, generator=generator) * std.cpu() + x.mean().cpu()
        setattr(mod, attr, torch.nn.Parameter(new.to(device=old.device, dtype=old.dtype),
                                              requires_grad=old.requires_grad))
        n += old.numel()
    return n


# --------------------------------------------------------------------------------------------------
# the checks
# --------------------------------------------------------------------------------------------------
def fixed_answer(explainer: Any, request: Any, max_new_tokens: int = 16) -> str:
    """The model's greedy answer as text, to teacher-force in every map the checks compare."""
    inputs, _ = explainer.prepare(request)
    ids, _ = explainer.answer_ids(explainer._to_device(dict(inputs)), None, max_new_tokens)
    return explainer.processor.tokenizer.decode(ids, skip_special_tokens=False)


def _answer(explainer: Any, request: Any, answer: str | None, explain_kwargs: dict[str, Any]) -> str:
    if answer is not None:
        return answer
    return fixed_answer(explainer, request, int(explain_kwargs.get("max_new_tokens", 16)))


def _check_threshold(threshold: float) -> None:
    if not -1.0 <= threshold <= 1.0:
        raise SettingError(f"threshold must be a correlation in [-1, 1], got {threshold}")


def _row(check: str, method: str, step: int, randomized: str, share: float, original: np.ndarray,
         scores: np.ndarray, threshold: float, final: bool) -> dict[str, Any]:
    rho = spearman(original, scores)
    return {"check": check, "method": method, "step": step, "randomized": randomized, "share_randomized": share,
            "n_tokens": int(len(original)), "spearman": rho, "threshold": threshold, "final": final,
            "below_threshold": bool(np.isfinite(rho) and rho < threshold)}


def cascading_randomization(explainer: Any, request: Any, *, methods: Sequence[str] = METHODS,
                            answer: str | None = None, threshold: float = 0.5, every: int = 1, seed: int = 0,
                            **explain_kwargs: Any):
    """Spearman correlation of each method's map with the original after each cumulative randomization step.

    Works on a deep copy of the model (the loaded one is never modified; memory doubles for the duration).
    Step 0 is the unmodified copy (correlation 1 unless a method is nondeterministic); maps are recomputed
    every ``every`` steps and at the last one, where all parameters are random (``final``). ``answer``:
    the text to teacher-force (default: the model's greedy answer), the same for every map.
    """
    import pandas as pd
    import torch

    _check_threshold(threshold)
    if every < 1:
        raise SettingError(f"every must be >= 1, got {every}")
    blocks = randomization_blocks(explainer)
    frozen = [n for n, p in explainer.hf.named_parameters() if not p.is_floating_point()]
    if frozen:  # refuse before the copy, which would double the memory for nothing
        raise SettingError(f"{explainer.family}: {len(frozen)} weights are stored quantized (e.g. {frozen[0]}) and "
                           "cannot be re-initialised; load the model without quantization for this check")
    answer = _answer(explainer, request, answer, explain_kwargs)
    original = {m: explainer.explain(request, m, answer=answer, **explain_kwargs).token_scores for m in methods}
    total = sum(p.numel() for _, p in explainer.hf.named_parameters(remove_duplicate=False))
    twin = copy.copy(explainer)  # same processor, prompt and family quirks; its own model
    twin.hf = copy.deepcopy(explainer.hf)
    gen = torch.Generator().manual_seed(seed)
    rows: list[dict[str, Any]] = []
    done = 0
    for step in range(len(blocks) + 1):
        if step:
            done += randomize_parameters(twin.hf, blocks[step - 1][1], generator=gen)
        last = step == len(blocks)
        if step % every and not last:
            continue
        label = "none" if step == 0 else blocks[step - 1][0]
        for m in methods:
            scores = twin.explain(request, m, answer=answer, **explain_kwargs).token_scores
            rows.append(_row(CASCADING, m, step, label, done / total, original[m], scores, threshold, last))
    del twin
    frame = pd.DataFrame(rows, columns=FRAME_COLUMNS)
    frame.attrs.update(answer=answer, blocks=[b for b, _ in blocks])
    return frame


def input_randomization(explainer: Any, request: Any, *, methods: Sequence[str] = METHODS,
                        answer: str | None = None, threshold: float = 0.5, variants: Sequence[str] = INPUT_VARIANTS,
                        image_index: int = 0, seed: int = 0, **explain_kwargs: Any):
    """Spearman correlation of each method's map with the original when the image is randomized.

    ``noise image``: uniform noise; ``shuffled patches``: the image's blocks, on the grid of its largest token
    segment (the tokens' own grid for Qwen and LLaVA, a tile's grid for Idefics3), in a random order. Both keep the image's size, so the token layout (and the maps' length)
    is unchanged; the answer is teacher-forced as for the original. The map should change: a high
    correlation means it follows token positions, not image content.
    """
    import pandas as pd

    from vlamb_nb.images import load_image

    _check_threshold(threshold)
    unknown = [v for v in variants if v not in INPUT_VARIANTS]
    if unknown:
        raise SettingError(f"unknown input randomization {unknown}; choose from {', '.join(INPUT_VARIANTS)}")
    answer = _answer(explainer, request, answer, explain_kwargs)
    kw = {**explain_kwargs, "image_index": image_index}
    first = {m: explainer.explain(request, m, answer=answer, **kw) for m in methods}
    image = load_image(request.images[image_index])
    grid = max(next(iter(first.values())).layout.segments, key=lambda g: g.shape[0] * g.shape[1]).shape
    rows: list[dict[str, Any]] = []
    for step, variant in enumerate(variants, start=1):
        new = noise_image(image, seed=seed) if variant == "noise image" else shuffle_patches(image, grid, seed=seed)
        images = list(request.images)
        images[image_index] = new
        req = dataclasses.replace(request, images=images)
        for m in methods:
            smap = explainer.explain(req, m, answer=answer, **kw)
            if smap.layout.n_tokens != first[m].layout.n_tokens:
                raise SettingError(f"{variant}: {smap.layout.n_tokens} image tokens instead of "
                                   f"{first[m].layout.n_tokens}; the maps cannot be compared")
            rows.append(_row(INPUT, m, step, variant, float("nan"), first[m].token_scores, smap.token_scores,
                             threshold, True))
    frame = pd.DataFrame(rows, columns=FRAME_COLUMNS)
    frame.attrs.update(answer=answer, grid=list(grid))
    return frame


def sanity_checks(explainer: Any, request: Any, *, methods: Sequence[str] = METHODS, answer: str | None = None,
                  threshold: float = 0.5, every: int = 1, seed: int = 0, **explain_kwargs: Any):
    """Both checks on one request, in one tidy frame (see :data:`FRAME_COLUMNS`)."""
    import pandas as pd

    answer = _answer(explainer, request, answer, explain_kwargs)
    casc = cascading_randomization(explainer, request, methods=methods, answer=answer, threshold=threshold,
                                   every=every, seed=seed, **explain_kwargs)
    inp = input_randomization(explainer, request, methods=methods, answer=answer, threshold=threshold, seed=seed,
                              **explain_kwargs)
    frame = pd.concat([casc, inp], ignore_index=True)
    frame.attrs.update(answer=answer, blocks=casc.attrs["blocks"], grid=inp.attrs["grid"], threshold=threshold,
                       family=explainer.family)
    return frame


def sanity_summary(frame):
    """One verdict per check, randomization and method: the final correlation, the threshold, pass/fail."""
    final = frame[frame["final"]]
    out = final[["check", "randomized", "method", "n_tokens", "spearman", "threshold"]].copy()
    out["passes"] = final["below_threshold"].astype(bool)
    return out.reset_index(drop=True)


def report(frame) -> dict[str, Any]:
    """The checks as plain data for ``notebook.record``: the threshold and verdicts first, then every row."""
    return {"threshold": float(frame["threshold"].iloc[0]), "family": frame.attrs.get("family"),
            "answer": frame.attrs.get("answer"), "blocks": list(frame.attrs.get("blocks", [])),
            "shuffle_grid": frame.attrs.get("grid"), "verdicts": sanity_summary(frame).to_dict("records"),
            "rows": frame.to_dict("records")}


def plot_sanity(frame, *, title: str = ""):
    """Correlation with the original map per cascading step (one line per method, threshold dashed) and,
    beside it, per input randomization."""
    from vlamb_nb.plots import PALETTE, new_figure

    casc = frame[frame["check"] == CASCADING]
    inp = frame[frame["check"] == INPUT]
    if casc.empty and inp.empty:
        raise SettingError("no sanity-check rows to plot")
    threshold = float(frame["threshold"].iloc[0])
    methods = list(dict.fromkeys(frame["method"]))
    ncols = int(not casc.empty) + int(not inp.empty)
    ratios = [3, 1][:ncols] if ncols == 2 else [1]
    fig, axes = new_figure(3.2 + 3.6 * ncols, 3.6, ncols=ncols, squeeze=False, gridspec_kw={"width_ratios": ratios})
    axes = list(axes[0])
    if not casc.empty:
        ax = axes.pop(0)
        for i, m in enumerate(methods):
            sub = casc[casc["method"] == m].sort_values("step")
            ax.plot(sub["step"], sub["spearman"], marker="o", ms=3, label=m, color=PALETTE[i % len(PALETTE)])
        steps = casc.drop_duplicates("step").sort_values("step")
        show = max(1, len(steps) // 16)  # a 7B model has dozens of blocks: label every k-th
        labels = [lab if k % show == 0 or k == len(steps) - 1 else "" for k, lab in enumerate(steps["randomized"])]
        ax.set_xticks(steps["step"].to_numpy(), labels, rotation=55, ha="right", fontsize=6)
        ax.axhline(threshold, ls="--", color="0.35", lw=1, label=f"pass threshold {threshold:g}")
        ax.set_ylim(-1.05, 1.05)
        ax.set_ylabel("Spearman ρ with the original map")
        ax.set_xlabel("cumulative re-initialisation, output side first (label: last block randomized)", fontsize=7)
        ax.set_title(title or "Cascading parameter randomization", loc="left")
        ax.legend(fontsize=7)
    if not inp.empty:
        ax = axes.pop(0)
        variants = list(dict.fromkeys(inp["randomized"]))
        width = 0.8 / max(1, len(methods))
        for i, m in enumerate(methods):
            sub = inp[inp["method"] == m].set_index("randomized").reindex(variants)
            x = np.arange(len(variants)) + (i - (len(methods) - 1) / 2) * width
            ax.bar(x, sub["spearman"].to_numpy(dtype=float), width, color=PALETTE[i % len(PALETTE)], label=m)
        ax.axhline(threshold, ls="--", color="0.35", lw=1)
        ax.axhline(0.0, color="0.6", lw=0.5)
        ax.set_xticks(np.arange(len(variants)), variants, fontsize=7)
        ax.set_ylim(-1.05, 1.05)
        ax.set_title("Input randomization", loc="left")
    return fig
