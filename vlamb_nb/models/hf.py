"""A Hugging Face vision-language model (or text-only LM) behind the ``VLM`` protocol.

``AutoModelForImageTextToText`` + ``AutoProcessor`` + the checkpoint's chat template, optionally
quantized with bitsandbytes (4-bit NF4 with double quantization, or 8-bit). Requests are batched
for real (left padding, one ``generate`` call per batch); text-only requests take the same path
without images. Family quirks come from :mod:`vlamb_nb.models.families`, never from ifs here.
A text-only causal LM (an LLM judge) is detected from its config and loads through the same
class with ``AutoModelForCausalLM`` + ``AutoTokenizer`` (the family row names the classes);
requests with images then fail one by one with a clear error.

A hub id, a local folder and a tiny random checkpoint all load through :class:`HFModel`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vlamb_nb.errors import NotAvailableError, SettingError
from vlamb_nb.models.base import Backend, DecodingParams, Generation, ModelInfo, Request
from vlamb_nb.models.families import Family, family_for_config

QUANTIZATIONS = ("4bit", "8bit", None)


class _NoHubKernelAdvice(logging.Filter):
    """Drops bitsandbytes' CPU advice to fetch a fused kernel from the hub (offline here; the fallback is exact).

    It is logged only on CPUs with AVX512-BF16, so a notebook's stderr would differ from one machine to another.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return "kernels-community" not in record.getMessage()


def quiet_bitsandbytes_cpu_probe() -> None:
    """Install the filter once, before bitsandbytes' CPU backend is first imported."""
    lg = logging.getLogger("bitsandbytes.backends.cpu.ops")
    if not any(isinstance(f, _NoHubKernelAdvice) for f in lg.filters):
        lg.addFilter(_NoHubKernelAdvice())


@contextlib.contextmanager
def peft_quiet():
    """Silences peft's use of a transformers attribute deprecated in 5.x (peft's call, not ours; no effect)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`is_gradient_checkpointing` is deprecated", category=FutureWarning)
        yield


def quantization_config(quantization: str | None, *, compute_dtype: Any = None,
                        skip_modules: Sequence[str] = ()):
    """bitsandbytes settings: NF4 + double quantization for 4-bit (the QLoRA recipe), or LLM.int8."""
    if quantization is None:
        return None
    quiet_bitsandbytes_cpu_probe()
    from transformers import BitsAndBytesConfig

    skip = list(skip_modules) or None
    if quantization == "4bit":
        return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                  bnb_4bit_compute_dtype=compute_dtype, llm_int8_skip_modules=skip)
    if quantization == "8bit":
        return BitsAndBytesConfig(load_in_8bit=True, llm_int8_skip_modules=skip)
    raise SettingError(f"unknown quantization {quantization!r}; use '4bit', '8bit' or None")


def default_dtype():
    """bf16 on GPUs that support it (fp16 on older ones), fp32 on CPU (CPU half kernels are slow or missing)."""
    import torch

    if torch.cuda.is_available():
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


class HFModel:
    """A transformers VLM or text-only LM; ``.model`` and ``.processor`` (a tokenizer for text LMs) are exposed."""

    def __init__(self, model_id: str | os.PathLike, *, quantization: str | None = None, revision: str | None = None,
                 device_map: str | dict[str, Any] | None = "auto", dtype: Any = None,
                 trust_remote_code: bool = False, max_pixels: int | None = None,
                 family_max_pixels: Mapping[str, int] | None = None,
                 processor_kwargs: dict[str, Any] | None = None, model_kwargs: dict[str, Any] | None = None,
                 display_id: str | None = None, score_in_generate: bool = True,
                 adapter: str | os.PathLike | None = None, skip_modules: Sequence[str] = ()) -> None:
        if quantization not in QUANTIZATIONS:
            raise SettingError(f"unknown quantization {quantization!r}; use '4bit', '8bit' or None")
        quiet_bitsandbytes_cpu_probe()  # transformers imports bitsandbytes whenever it is installed
        try:
            import torch
            import transformers
            from transformers import AutoConfig
        except ImportError as e:  # pragma: no cover - the models extra is not installed
            raise NotAvailableError(f"HFModel needs torch and transformers (pip install 'vlamb_nb[models]'): {e}") \
                from None

        source = str(model_id)
        try:
            config = AutoConfig.from_pretrained(source, revision=revision, trust_remote_code=trust_remote_code)
        except ValueError as e:
            if "trust_remote_code" in str(e) and not trust_remote_code:
                raise SettingError(f"{source}: this checkpoint runs code from the hub; pass "
                                   "trust_remote_code=True to allow it (recorded in the run metadata)") from None
            raise
        self.family: Family = family_for_config(config)
        if max_pixels is None and family_max_pixels:  # a budget that depends on the checkpoint's declared family
            max_pixels = family_max_pixels.get(self.family.name)
        model_cls = getattr(transformers, self.family.auto_model)
        processor_cls = getattr(transformers, self.family.auto_processor)
        if self.family.trust_remote_code and not trust_remote_code:
            raise SettingError(f"{source}: family {self.family.name!r} runs code from the hub; "
                               "pass trust_remote_code=True to allow it (recorded in the run metadata)")
        if not self.family.runs_here:
            raise NotAvailableError(f"{source}: family {self.family.name!r} is not loaded here ({self.family.why_not});"
                                    " serve it behind an OpenAI-compatible server and use openai:MODEL")
        self.device_map = _resolve_device_map(device_map, quantization)
        self.dtype = dtype if dtype is not None else default_dtype()
        pkw = dict(processor_kwargs or {})
        self.processor = processor_cls.from_pretrained(source, revision=revision,
                                                       trust_remote_code=trust_remote_code, **pkw)
        if max_pixels is not None:  # reload with the checkpoint's size settings plus the new budget
            key = self.family.max_pixels_kwarg
            if key is None:
                raise SettingError(f"family {self.family.name!r} has no pixel budget setting (max_pixels)")
            size = {k: v for k, v in dict(self.processor.image_processor.size).items() if v is not None}
            size[key] = int(max_pixels)
            if "shortest_edge" in size and key == "longest_edge":
                size["shortest_edge"] = min(size["shortest_edge"], int(max_pixels))
            self.processor = processor_cls.from_pretrained(source, revision=revision,
                                                           trust_remote_code=trust_remote_code,
                                                           **{**pkw, "size": size})
        tok = self.tokenizer
        tok.padding_side = "left"  # decoder-only batching: prompts end where generation starts
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        mkw: dict[str, Any] = dict(model_kwargs or {})
        skip = tuple(self.family.bnb_skip_modules)
        if skip_modules:  # an explicit list replaces transformers' default skips, so keep the output head too
            skip += tuple(m for m in (*skip_modules, "lm_head") if m not in skip)
        qc = quantization_config(quantization, compute_dtype=self.dtype, skip_modules=skip)
        if qc is not None:
            mkw["quantization_config"] = qc
        self.model = model_cls.from_pretrained(
            source, revision=revision, dtype=self.dtype, device_map=self.device_map,
            trust_remote_code=trust_remote_code, **mkw).eval()
        self.adapter = None
        if adapter is not None:  # a LoRA adapter (e.g. from vlamb_nb.benchmarks.vflute.finetune) on top of the (quantized) base
            self.model, self.adapter = _load_adapter(self.model, adapter)
        self.quantization = quantization
        self.max_pixels = max_pixels
        self.score_in_generate = score_in_generate
        commit = getattr(config, "_commit_hash", None)
        shown = display_id or source
        if self.adapter is not None:  # part of the cache key: adapter outputs never reuse the base's
            shown = f"{shown}+adapter@{self.adapter['digest']}"
        self.info = ModelInfo(model_id=shown, revision=revision or commit, quantization=quantization,
                              backend=Backend.HF, family=self.family.name, dtype=str(self.dtype).replace("torch.", ""),
                              trust_remote_code=trust_remote_code)
        self._torch = torch

    # -- inspection ---------------------------------------------------------------------------------
    @property
    def tokenizer(self):
        return getattr(self.processor, "tokenizer", self.processor)

    @property
    def device(self):
        return self.model.device

    def weight_bytes(self) -> int:
        """Bytes held by parameters and buffers (what 4-bit quantization shrinks)."""
        return int(self.model.get_memory_footprint())

    # -- prompt building ----------------------------------------------------------------------------
    def prompt(self, request: Request, *, add_generation_prompt: bool = True) -> str:
        """The exact prompt string the model sees, built from the family's chat template."""
        fam = self.family
        _check_images_accepted(request, fam)
        if not fam.chat_template:
            return request.prompt_text
        messages = _apply_quirks(request.messages, fam)
        return self.processor.apply_chat_template(messages, tokenize=False,
                                                  add_generation_prompt=add_generation_prompt)

    def _images(self, request: Request) -> list[Any]:
        from vlamb_nb.images import load_image

        return [load_image(im) for im in request.images]

    def prepare(self, requests: Sequence[Request], *, images: list[list[Any]] | None = None):
        """Processor inputs (a ``BatchFeature`` on the model's device) for a batch of requests.

        All requests in one call must be all text-only or all with images.
        """
        reqs = list(requests)
        imgs = images if images is not None else [self._images(r) for r in reqs]
        texts = [self.prompt(r) for r in reqs]
        kw: dict[str, Any] = {"text": texts, "return_tensors": "pt", "padding": True, **self.family.encode_kwargs}
        if any(imgs):
            if not all(imgs):
                raise SettingError("prepare(): mix of text-only and image requests in one batch")
            kw["images"] = imgs if self.family.nested_images else [im for group in imgs for im in group]
        batch = self.processor(**kw)
        return batch.to(self.model.device)

    def processed_sizes(self, batch: Any, n_images: Sequence[int]) -> list[list[tuple[int, int]] | None]:
        """(width, height) of each image as the model saw it, per request, where the family has one."""
        rule = self.family.size_rule
        out: list[list[tuple[int, int]] | None] = []
        if rule == "grid_thw" and "image_grid_thw" in batch:
            patch = int(getattr(self.processor.image_processor, "patch_size", 14))
            grid = batch["image_grid_thw"].tolist()
            i = 0
            for n in n_images:
                out.append([(int(w) * patch, int(h) * patch) for _, h, w in grid[i: i + n]])
                i += n
            return out
        if rule == "pixel_values" and "pixel_values" in batch and batch["pixel_values"].ndim == 4:
            h, w = batch["pixel_values"].shape[-2:]
            return [[(int(w), int(h))] * n for n in n_images]
        return [None] * len(n_images)

    # -- generation ---------------------------------------------------------------------------------
    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        """One generation per request, in order.

        Requests are grouped by decoding parameters and by text-only vs with images, and each group
        is one batched ``generate`` call. A bad image fails only its request; out-of-memory errors
        propagate so the runner can halve the batch.
        """
        reqs = list(requests)
        results: dict[int, Generation] = {}
        loaded: dict[int, list[Any]] = {}
        for i, r in enumerate(reqs):
            try:
                _check_images_accepted(r, self.family)
                loaded[i] = self._images(r)
            except Exception as e:  # noqa: BLE001 - a bad image fails its own request only
                results[i] = Generation(request_id=r.id, error=f"{type(e).__name__}: {e}", finish_reason="error")
        groups: dict[tuple[Any, bool], list[int]] = {}
        for i in loaded:
            groups.setdefault((reqs[i].params, bool(loaded[i])), []).append(i)
        for (params, _), idx in groups.items():
            gens = self._generate_group([reqs[i] for i in idx], [loaded[i] for i in idx], params)
            results.update(zip(idx, gens, strict=True))
        if self.score_in_generate:
            for i, r in enumerate(reqs):
                g = results[i]
                if r.options and g.error is None:
                    g.option_logprobs = self.score_options(r, r.options, images=loaded.get(i))
        return [results[i] for i in range(len(reqs))]

    def _generate_group(self, reqs: list[Request], images: list[list[Any]], params: DecodingParams) -> list[Generation]:
        torch = self._torch
        t0 = time.perf_counter()
        batch = self.prepare(reqs, images=images)
        n_prompt = batch["input_ids"].shape[1]
        kw = _generate_kwargs(params, self.tokenizer)
        if params.seed is not None:
            torch.manual_seed(params.seed)
        with torch.inference_mode():
            out = self.model.generate(**batch, **kw)
        new = out[:, n_prompt:]
        dt = (time.perf_counter() - t0) / len(reqs)
        eos = _eos_ids(self.model, self.tokenizer)
        pad = self.tokenizer.pad_token_id
        sizes = self.processed_sizes(batch, [len(im) for im in images])
        prompt_lens = batch["attention_mask"].sum(dim=1).tolist() if "attention_mask" in batch else [n_prompt] * len(reqs)
        gens = []
        for j, r in enumerate(reqs):
            ids = new[j].tolist()
            stop = next((k for k, t in enumerate(ids) if t in eos), None)
            kept = ids[:stop] if stop is not None else [t for t in ids if t != pad]
            text = self.tokenizer.decode(kept, skip_special_tokens=True)
            gens.append(Generation(
                request_id=r.id, text=text, prompt_tokens=int(prompt_lens[j]),
                completion_tokens=len(kept) + (1 if stop is not None else 0), seconds=dt,
                finish_reason="stop" if stop is not None else "length",
                image_sizes=[tuple(im.size) for im in images[j]] or None,
                processed_image_sizes=sizes[j]))
        return gens

    # -- option scoring -----------------------------------------------------------------------------
    def score_options(self, request: Request, options: Sequence[str], *,
                      images: list[Any] | None = None) -> list[float]:
        """Summed log-probability of each option's tokens as the start of the assistant's answer.

        The option is tokenized on its own and appended to the tokenized prompt, so the prompt
        part is identical for every option and no BPE merge crosses the boundary.
        """
        torch = self._torch
        if not options:
            raise SettingError(f"request {request.id}: no options to score")
        _check_images_accepted(request, self.family)
        imgs = images if images is not None else self._images(request)
        base = self.prepare([request], images=[imgs])
        ids = base["input_ids"]
        scores = []
        for opt in options:
            opt_ids = self.tokenizer(opt, add_special_tokens=False, return_tensors="pt")["input_ids"].to(ids.device)
            if opt_ids.shape[1] == 0:
                raise SettingError(f"request {request.id}: option {opt!r} has no tokens")
            full = dict(base)
            full["input_ids"] = torch.cat([ids, opt_ids], dim=1)
            if "attention_mask" in base:
                full["attention_mask"] = torch.cat([base["attention_mask"], torch.ones_like(opt_ids)], dim=1)
            for key in ("token_type_ids", "mm_token_type_ids"):
                if key in base:
                    full[key] = torch.cat([base[key], torch.zeros_like(opt_ids)], dim=1)
            with torch.inference_mode():
                logits = self.model(**full).logits
            n = opt_ids.shape[1]
            logp = torch.log_softmax(logits[0, -n - 1:-1].float(), dim=-1)
            scores.append(float(logp.gather(1, opt_ids[0].unsqueeze(1)).sum()))
        return scores


def _load_adapter(model: Any, adapter: str | os.PathLike) -> tuple[Any, dict[str, Any]]:
    """Wrap ``model`` with the peft adapter saved in folder ``adapter``; its weights' digest names it."""
    path = Path(adapter).expanduser()
    if not (path / "adapter_config.json").is_file():
        raise SettingError(f"{path}: not a saved adapter (no adapter_config.json)")
    try:
        from peft import PeftModel
    except ImportError as e:  # pragma: no cover - peft is part of the models extra
        raise NotAvailableError(f"loading an adapter needs peft: {e}") from None
    with peft_quiet():
        wrapped = PeftModel.from_pretrained(model, str(path), is_trainable=False).eval()
    return wrapped, {"path": str(path), "digest": adapter_digest(path)}


def adapter_digest(path: str | os.PathLike) -> str:
    """A short hash of an adapter's config and weights (names the model in cache keys)."""
    import hashlib

    h = hashlib.sha256()
    for f in sorted(Path(path).glob("adapter_*")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


def _resolve_device_map(device_map: Any, quantization: str | None) -> Any:
    """``auto`` shards over GPUs when present; on CPU everything stays on ``cpu``."""
    import torch

    if device_map == "auto" and not torch.cuda.is_available():
        return "cpu"
    return device_map


def _check_images_accepted(request: Request, fam: Family) -> None:
    """A text-only model cannot see images: say so instead of silently dropping them."""
    if request.images and not fam.accepts_images:
        raise SettingError(f"request {request.id}: {len(request.images)} image(s) sent to a text-only model "
                           f"(family {fam.name!r}); send text-only requests or use a vision-language model")


def _apply_quirks(messages: list[dict[str, Any]], fam: Family) -> list[dict[str, Any]]:
    """Rewrite a chat for the family: merge the system turn, move images first, normalise content."""
    msgs = []
    for m in messages:
        content = m.get("content", [])
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(p) for p in content]
        msgs.append({"role": m["role"], "content": parts})
    if not fam.system_role and msgs and msgs[0]["role"] == "system":
        sys_text = "\n".join(p["text"] for p in msgs[0]["content"] if p.get("type") == "text")
        msgs = msgs[1:]
        first_user = next((m for m in msgs if m["role"] == "user"), None)
        if first_user is None:
            msgs.insert(0, {"role": "user", "content": [{"type": "text", "text": sys_text}]})
        else:
            first_user["content"].insert(0, {"type": "text", "text": sys_text + "\n\n"})
    if fam.images_first:
        for m in msgs:
            imgs = [p for p in m["content"] if p.get("type") == "image"]
            if imgs:
                m["content"] = imgs + [p for p in m["content"] if p.get("type") != "image"]
    if fam.string_content:  # text LM templates (e.g. Llama-3) concatenate content as a string
        for m in msgs:
            m["content"] = "".join(p["text"] for p in m["content"] if p.get("type") == "text")
    return msgs


def _generate_kwargs(params: DecodingParams, tokenizer: Any) -> dict[str, Any]:
    kw: dict[str, Any] = {"max_new_tokens": params.max_new_tokens, "num_beams": params.num_beams,
                          "do_sample": params.do_sample, "pad_token_id": tokenizer.pad_token_id}
    if params.do_sample:
        kw.update(temperature=params.temperature, top_p=params.top_p)
    else:  # greedy/beam: neutralise sampling knobs a checkpoint's generation_config may carry
        kw.update(temperature=None, top_p=None, top_k=None)
    return kw


def _eos_ids(model: Any, tokenizer: Any) -> set[int]:
    ids: set[int] = set()
    for src in (getattr(model, "generation_config", None), tokenizer):
        e = getattr(src, "eos_token_id", None)
        if isinstance(e, int):
            ids.add(e)
        elif isinstance(e, (list, tuple)):
            ids.update(int(x) for x in e)
    return ids
