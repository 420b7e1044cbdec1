"""Where does the model look? Saliency maps over the image for a VLM's answer.

Three methods, each scoring every image token for the answer and drawn over the original image
with :func:`vlamb_nb.saliency.grid.render` (maps have the image's aspect and sum to 1):

- ``attention``: attention from the positions that produce the answer tokens to the image tokens,
  averaged over the chosen layers and heads (Chefer et al. call this raw attention);
- ``rollout``: attention rollout (Abnar & Zuidema 2020): per layer, heads averaged, half identity added
  for the residual stream, rows renormalised, multiplied through consecutive layers (a ``layers`` list
  with gaps is refused, since skipping a layer is not a rollout);
- ``gradient``: gradient x input on the image embeddings the language model receives, for the summed
  log-probability of the answer tokens: the model's own greedy answer, or any option the caller names,
  so "why A rather than B" is two maps (their heatmaps' difference sums to 0). Gradients are taken with respect to the
  embeddings only, so 4-bit weights (which cannot take gradients) are no obstacle.

Because a map sums to 1 over the image, it cannot show how much of the answer's attention reaches the
image at all; each map's ``image_share`` (in ``details`` and the figure titles) is that fraction over all
prompt and answer tokens (for ``gradient``: the image tokens' share of the summed gradient x input).

The answer is teacher-forced after the prompt exactly as the chat template builds it. All methods run
on CPU for small models. ``visible_tokens`` hides image tokens from the language model through the
attention mask (an occlusion experiment; the tests use it to build an answer that depends on one patch).

Analysis on top of maps (mass inside boxes, pointing game, aggregation with bootstrap CIs, overlays) is
in :mod:`vlamb_nb.saliency.analysis`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlamb_nb.errors import SettingError
from vlamb_nb.saliency.grid import ImageLayout, image_layouts, render

METHODS = ("attention", "rollout", "gradient")
GRADIENT_MODES = ("abs", "positive")


# --------------------------------------------------------------------------------------------------
# the math, on plain arrays / tensors (unit-tested on synthetic inputs)
# --------------------------------------------------------------------------------------------------
def _select(n: int, chosen: Sequence[int] | int | None, what: str) -> list[int]:
    """Indices ``chosen`` (negative allowed) out of ``n``; all when None."""
    if chosen is None:
        return list(range(n))
    items = [chosen] if isinstance(chosen, int) else list(chosen)
    out = []
    for c in items:
        if not -n <= c < n:
            raise SettingError(f"{what} {c} out of range: the model has {n}")
        out.append(c % n)
    if not out:
        raise SettingError(f"no {what}s selected")
    return out


def consecutive_layers(n: int, layers: Sequence[int] | int | None) -> list[int]:
    """The chosen layers, sorted, refusing gaps and repeats: rollout multiplies each layer into the next,
    so ``layers=[0, 2, 5]`` would silently skip layers 1, 3 and 4 instead of tracing the flow through them."""
    lay = sorted(_select(n, layers, "layer"))
    if lay != list(range(lay[0], lay[-1] + 1)):
        raise SettingError(f"rollout needs consecutive layers (each once), got {layers!r} = layers {lay}; "
                           f"pass a range such as layers=range({lay[0]}, {lay[-1] + 1})")
    return lay


def rollout_row(attentions: Sequence[Any], queries: Sequence[int], *, layers: Sequence[int] | int | None = None,
                heads: Sequence[int] | int | None = None, residual: float = 0.5) -> np.ndarray:
    """The rollout of ``queries`` over every position (mean over queries; sums to 1).

    Each layer's head-averaged matrix A becomes ``(1 - residual) A + residual I`` with rows renormalised;
    the query rows are pushed from the last chosen layer down to the first, so the cost is
    ``layers x len(queries) x seq^2`` rather than a full ``seq^3`` product per layer. Non-consecutive
    ``layers`` are refused (:func:`consecutive_layers`).
    """
    if not 0.0 <= residual <= 1.0:
        raise SettingError(f"residual must be in [0, 1], got {residual}")
    mats = [_as_np(a) for a in attentions]
    lay = consecutive_layers(len(mats), layers)
    hd = _select(mats[0].shape[0], heads, "head")
    q = np.asarray(queries)
    rows = None
    for li in reversed(lay):
        a = (1.0 - residual) * mats[li][hd].mean(axis=0)
        a[np.diag_indices_from(a)] += residual
        a /= a.sum(axis=1, keepdims=True)
        rows = a[q] if rows is None else rows @ a
    return rows.mean(axis=0)


def image_share(scores: Any, keys: Sequence[int]) -> float:
    """Share of the total score over all positions that falls on ``keys`` (the image tokens).

    Maps are rendered normalised to sum 1 over the image, which hides how much of the answer's attention
    reaches the image at all (often under a tenth); this number keeps it. NaN when the total is 0.
    """
    s = np.asarray(scores, dtype=np.float64)
    total = float(s.sum())
    return float(s[np.asarray(keys)].sum()) / total if total > 0 else float("nan")


def _signed(s: np.ndarray, mode: str) -> np.ndarray:
    """Per-token gradient x input dot products made non-negative by ``mode``."""
    if mode not in GRADIENT_MODES:
        raise SettingError(f"unknown gradient mode {mode!r}; choose one of {', '.join(GRADIENT_MODES)}")
    return np.abs(s) if mode == "abs" else np.clip(s, 0.0, None)


def _as_np(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy()
    x = np.asarray(x, dtype=np.float64)
    return x[0] if x.ndim == 4 else x


# --------------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------------
@dataclass
class SaliencyMap:
    """One saliency map over one image, with everything needed to draw and audit it."""

    heatmap: np.ndarray  # (rows, cols), the image's aspect, sums to 1
    method: str
    image: Any  # PIL image (original size)
    prompt: str
    answer: str
    target: str  # "generated" or "option"
    token_scores: np.ndarray  # one non-negative score per image token, before rendering
    layout: ImageLayout
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def size(self) -> tuple[int, int]:
        return self.layout.size

    @property
    def image_share(self) -> float:
        """Fraction of the method's mass over all tokens that lands on this image's tokens (NaN if unknown)."""
        return float(self.details.get("image_share", float("nan")))

    def to_image_coords(self, row: float, col: float) -> tuple[float, float]:
        rows, cols = self.heatmap.shape
        return ((col + 0.5) * self.size[0] / cols, (row + 0.5) * self.size[1] / rows)

    def peak(self) -> tuple[float, float]:
        """(x, y) in original image pixels of the most salient map pixel."""
        r, c = np.unravel_index(int(np.argmax(self.heatmap)), self.heatmap.shape)
        return self.to_image_coords(r, c)

    def box_mass(self, box: Sequence[float], fmt: str = "abs_xyxy") -> float:
        from vlamb_nb.saliency.analysis import box_mass

        return box_mass(self.heatmap, box, self.size, fmt=fmt)

    def summary(self) -> dict[str, Any]:
        return {"method": self.method, "answer": self.answer, "target": self.target, "seconds": self.seconds,
                "size": list(self.size), "map_shape": list(self.heatmap.shape), **self.details}


# --------------------------------------------------------------------------------------------------
# the model side
# --------------------------------------------------------------------------------------------------
def unwrap(model: Any) -> tuple[Any, Any]:
    """(transformers model, processor) from an ``HFModel``-like object or a ``(model, processor)`` pair."""
    if isinstance(model, tuple) and len(model) == 2:
        return model
    hf = next((getattr(model, a) for a in ("model", "hf_model", "_model") if getattr(model, a, None) is not None),
              None)
    proc = next((getattr(model, a) for a in ("processor", "_processor") if getattr(model, a, None) is not None),
                None)
    if hf is None or proc is None or not hasattr(hf, "config"):
        raise SettingError("saliency maps need a local Hugging Face model (load_model('<hub id or folder>') or "
                           f"'tiny:<family>'); got {type(model).__name__}")
    return hf, proc


class Explainer:
    """Saliency maps for one loaded model; reuses the model between maps.

    >>> ex = Explainer(load_model("tiny:qwen2_5_vl"))            # doctest: +SKIP
    >>> m = ex.explain(request, method="gradient", answer="B")  # doctest: +SKIP
    """

    def __init__(self, model: Any, *, max_side: int | None = 256) -> None:
        self.hf, self.processor = unwrap(model)
        self.wrapper = model
        self.max_side = max_side
        self.family = self.hf.config.model_type

    # -- inputs --------------------------------------------------------------------------------------
    def _images(self, request: Any) -> list[Any]:
        from vlamb_nb.images import load_image

        return [load_image(im) for im in request.images]

    def prepare(self, request: Any):
        """Processor inputs (batch of one) for the request's chat with the generation prompt, and the images."""
        images = self._images(request)
        if not images:
            raise SettingError(f"request {request.id} has no image to explain")
        if callable(getattr(self.wrapper, "prompt", None)):  # the backend's own template and family quirks
            text = self.wrapper.prompt(request)
        else:
            text = self.processor.apply_chat_template(request.messages, add_generation_prompt=True, tokenize=False)
        kw: dict[str, Any] = {"text": [text], "return_tensors": "pt"}
        nested = getattr(getattr(self.wrapper, "family", None), "nested_images", None)
        if nested is None:
            nested = self.family in ("idefics3", "smolvlm", "idefics2")
        kw["images"] = [images] if nested else images
        inputs = self.processor(**kw)
        return inputs, images

    def answer_ids(self, inputs: Any, answer: str | None, max_new_tokens: int) -> tuple[list[int], str]:
        """Token ids of ``answer`` (an option or a stored output; its first ``max_new_tokens`` tokens)
        or of the model's greedy answer; and the target kind."""
        import torch

        tok = self.processor.tokenizer
        if answer is not None:
            ids = tok(answer, add_special_tokens=False)["input_ids"]
            if not ids:
                raise SettingError("the answer to explain is empty")
            return list(ids)[:max_new_tokens], "option"
        with torch.no_grad():
            out = self.hf.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False)
        new = out[0, inputs["input_ids"].shape[1]:].tolist()
        stops = {tok.eos_token_id, tok.pad_token_id} - {None}
        trimmed = []
        for t in new:
            if t in stops:
                break
            trimmed.append(t)
        return (trimmed or new[:1]), "generated"

    def _with_answer(self, inputs: Any, ids: list[int]) -> dict[str, Any]:
        """The prompt inputs with the answer tokens appended (teacher forcing)."""
        import torch

        n = inputs["input_ids"].shape[1]
        add = torch.tensor([ids], dtype=inputs["input_ids"].dtype)
        out: dict[str, Any] = {}
        for k, v in inputs.items():
            if hasattr(v, "shape") and v.ndim == 2 and v.shape == (1, n):
                fill = add if k == "input_ids" else (torch.ones_like(add) if k == "attention_mask"
                                                     else torch.zeros_like(add))
                out[k] = torch.cat([v, fill.to(v.dtype)], dim=1)
            else:
                out[k] = v
        return out

    def _to_device(self, batch: dict[str, Any]) -> dict[str, Any]:
        dev = next(self.hf.parameters()).device
        dtype = getattr(self.hf, "dtype", None)
        out = {}
        for k, v in batch.items():
            if hasattr(v, "to"):
                v = v.to(dev)
                if k.startswith("pixel_values") and v.is_floating_point() and dtype is not None and dtype.is_floating_point:
                    v = v.to(dtype)
            out[k] = v
        return out

    def _hide(self, batch: dict[str, Any], hidden: np.ndarray) -> dict[str, Any]:
        """Mask ``hidden`` sequence positions out of attention; multimodal rope positions keep the full layout."""
        core = getattr(self.hf, "model", self.hf)
        if hasattr(core, "get_rope_index") and "image_grid_thw" in batch:
            kw = {k: batch[k] for k in ("mm_token_type_ids", "image_grid_thw") if k in batch}
            pos, _ = core.get_rope_index(batch["input_ids"], attention_mask=batch["attention_mask"], **kw)
            batch["position_ids"] = pos
        mask = batch["attention_mask"].clone()
        mask[0, hidden] = 0
        batch["attention_mask"] = mask
        return batch

    # -- the three methods -------------------------------------------------------------------------
    def explain(self, request: Any, method: str = "gradient", *, answer: str | None = None, image_index: int = 0,
                layers: Sequence[int] | int | None = None, heads: Sequence[int] | int | None = None,
                gradient_mode: str = "abs", residual: float = 0.5, max_new_tokens: int = 16,
                visible_tokens: Sequence[int] | None = None) -> SaliencyMap:
        """A saliency map for ``request``'s answer (greedy, or ``answer`` teacher-forced) on one image.

        ``max_new_tokens`` bounds the greedy answer and truncates a given one (long outputs would
        otherwise dominate the cost). ``visible_tokens``: indices within the image's token run the
        language model may see (others hidden).
        """

        if method not in METHODS:
            raise SettingError(f"unknown saliency method {method!r}; choose one of {', '.join(METHODS)}")
        t0 = time.perf_counter()
        inputs, images = self.prepare(request)
        layouts = image_layouts(self.hf.config, self.processor, inputs, images)
        if not 0 <= image_index < len(layouts):
            raise SettingError(f"image_index {image_index} out of range: the request has {len(layouts)} image(s)")
        layout = layouts[image_index]
        ids, target = self.answer_ids(self._to_device(dict(inputs)), answer, max_new_tokens)
        batch = self._to_device(self._with_answer(inputs, ids))
        n_prompt = inputs["input_ids"].shape[1]
        answer_pos = np.arange(n_prompt, n_prompt + len(ids))
        queries = answer_pos - 1  # the positions whose next-token prediction is an answer token
        if visible_tokens is not None:
            keep = np.zeros(layout.n_tokens, dtype=bool)
            keep[np.asarray(list(visible_tokens), dtype=np.int64)] = True
            batch = self._hide(batch, layout.positions[~keep])
        details: dict[str, Any] = {"family": self.family, "n_image_tokens": layout.n_tokens,
                                   "answer_tokens": len(ids), "image_index": image_index}
        if method == "gradient":
            full = self._gradient(batch, answer_pos, gradient_mode)
            details["gradient_mode"] = gradient_mode
        else:
            full, n_layers, n_heads = self._attention_method(batch, method, queries, layers, heads, residual)
            details.update(n_layers=n_layers, n_heads=n_heads, layers="all" if layers is None else layers,
                           heads="all" if heads is None else heads)
        full = np.clip(np.nan_to_num(full, nan=0.0), 0.0, None)
        scores = full[layout.positions]
        details["image_share"] = image_share(full, layout.positions)
        heat = render(scores, layout, max_side=self.max_side)
        text = self.processor.tokenizer.decode(ids, skip_special_tokens=False)
        return SaliencyMap(heat, method, images[image_index], getattr(request, "prompt_text", ""), text, target,
                           scores, layout, time.perf_counter() - t0, details)

    def image_embeddings(self, request: Any) -> tuple[list[ImageLayout], np.ndarray]:
        """The layouts of the request's images and the embeddings the language model receives at every
        image token (rows in prompt order). Lets a user (and the tests) check which tokens an image edit moves.
        """
        import torch

        inputs, images = self.prepare(request)
        layouts = image_layouts(self.hf.config, self.processor, inputs, images)
        captured: dict[str, Any] = {}

        def grab(module, args, kwargs):
            captured["emb"] = kwargs.get("inputs_embeds")

        handle = self._language_model().register_forward_pre_hook(grab, with_kwargs=True)
        try:
            with torch.no_grad():
                self.hf(**self._to_device(dict(inputs)), use_cache=False)
        finally:
            handle.remove()
        if captured.get("emb") is None:
            raise SettingError(f"{self.family}: the language model was not called with inputs_embeds")
        pos = np.concatenate([lay.positions for lay in layouts])
        return layouts, captured["emb"][0, torch.as_tensor(pos)].float().cpu().numpy()

    def _attention_method(self, batch: dict[str, Any], method: str, queries: np.ndarray,
                          layers: Any, heads: Any, residual: float) -> tuple[np.ndarray, int, int]:
        """Attention or rollout scores over every position, reducing each layer's weights as soon as the
        layer has run.

        Keeping every layer's (heads x seq x seq) weights, as ``output_attentions`` does, needs tens of
        GB for a 7B model and a high-resolution image; a forward hook on each attention module keeps only
        the head-averaged matrix (rollout) or the mean answer row (attention). The full row, not just
        the image tokens, is returned so the image's share of the attention can be reported.
        """
        import torch

        mods = self._attention_modules()
        n_layers = len(mods)
        chosen = _select(n_layers, layers, "layer") if method == "attention" else consecutive_layers(n_layers, layers)
        n_heads = int(getattr(self._text_config(), "num_attention_heads", 0)) or None
        hd = _select(n_heads, heads, "head") if n_heads else None
        q = torch.as_tensor(queries)
        kept: dict[int, np.ndarray] = {}

        def hook_for(index: int):
            def hook(module, args, output):
                w = output[1] if isinstance(output, tuple) and len(output) > 1 else None
                if w is None:
                    return
                w = w[0] if hd is None else w[0, hd]
                if method == "attention":
                    kept[index] = w[:, q].float().mean(dim=(0, 1)).cpu().numpy()
                else:
                    kept[index] = w.float().mean(dim=0).cpu().numpy()[None]
            return hook

        wanted = sorted(set(chosen))
        handles = [mods[i].register_forward_hook(hook_for(i)) for i in wanted]
        previous = getattr(self.hf.config, "_attn_implementation", None)
        switch = previous != "eager" and hasattr(self.hf, "set_attn_implementation")
        if switch:
            self.hf.set_attn_implementation("eager")
        try:
            with torch.no_grad():
                self.hf(**batch, use_cache=False)
        finally:
            for h in handles:
                h.remove()
            if switch and previous:
                self.hf.set_attn_implementation(previous)
        if len(kept) != len(wanted):
            raise SettingError(f"{self.family}: the attention modules returned no weights")
        if method == "attention":
            return np.mean([kept[i] for i in chosen], axis=0), n_layers, n_heads or 0
        mats = [kept[i] for i in chosen]
        return rollout_row(mats, queries, residual=residual), n_layers, n_heads or 0

    def _text_config(self):
        cfg = self.hf.config
        return getattr(cfg, "text_config", None) or cfg

    def _attention_modules(self) -> list[Any]:
        """The self-attention module of each language-model layer, in order."""
        lm = self._language_model()
        layers = getattr(lm, "layers", None)
        mods = [getattr(layer, "self_attn", None) for layer in (layers or [])]
        if not mods or any(m is None for m in mods):
            raise SettingError(f"{self.family}: cannot find the language model's attention layers")
        return mods

    def _language_model(self):
        for getter in (lambda m: m.model.language_model, lambda m: m.model.text_model,
                       lambda m: m.get_decoder()):
            try:
                lm = getter(self.hf)
            except AttributeError:
                continue
            if lm is not None:
                return lm
        raise SettingError(f"{self.family}: cannot find the language model inside the VLM")

    def _gradient(self, batch: dict[str, Any], answer_pos: np.ndarray, mode: str) -> np.ndarray:
        """Gradient x input on the embeddings the language model receives, at every position."""
        import torch

        captured: dict[str, Any] = {}

        def grab(module, args, kwargs):
            emb = kwargs.get("inputs_embeds")
            if emb is None:
                return None
            leaf = emb.detach().requires_grad_(True)
            captured["emb"] = leaf
            kwargs["inputs_embeds"] = leaf
            return args, kwargs

        _unpack_bnb_cpu_weights(self.hf)
        handle = self._language_model().register_forward_pre_hook(grab, with_kwargs=True)
        try:
            with torch.enable_grad():
                out = self.hf(**batch, use_cache=False)
                if "emb" not in captured:
                    raise SettingError(f"{self.family}: the language model was not called with inputs_embeds")
                logits = out.logits[0].float()
                logp = torch.log_softmax(logits[torch.as_tensor(answer_pos - 1)], dim=-1)
                target = batch["input_ids"][0, torch.as_tensor(answer_pos)]
                total = logp.gather(1, target[:, None]).sum()
                (grad,) = torch.autograd.grad(total, captured["emb"])
        finally:
            handle.remove()
        # the dot product in torch: every position's (seq x hidden) float64 copy would be large for a 7B model
        dots = (grad[0].float() * captured["emb"][0].detach().float()).sum(dim=-1)
        return _signed(dots.cpu().numpy().astype(np.float64), mode)


def _unpack_bnb_cpu_weights(model: Any) -> int:
    """Undo bitsandbytes' CPU inference packing of 4-bit weights so gradients can flow through them.

    On CPU, bitsandbytes repacks 4-bit weights for a fast kernel on the first no-grad forward pass
    (generation does one), and that kernel has no backward. Its own ``_save_to_state_dict`` undoes the
    packing the same way; the next no-grad pass packs again. Returns the number of layers unpacked.
    """
    try:
        from bitsandbytes.nn import Linear4bit
        from bitsandbytes.nn.modules import _convert_weight_packed_for_cpu_inverse
    except ImportError:
        return 0
    n = 0
    for mod in model.modules():
        w = getattr(mod, "weight", None)
        qs = getattr(w, "quant_state", None)
        if isinstance(mod, Linear4bit) and qs is not None and getattr(qs, "packing_format_for_cpu", False):
            w.data, w.quant_state = _convert_weight_packed_for_cpu_inverse(w.data, qs)
            n += 1
    return n
