"""``load_model(spec)``: one entry point from a spec string (read by :class:`~vlamb_nb.models.spec.ModelSpec`)
to a backend.

- ``tiny:FAMILY`` builds (once, cached per user) a tiny random checkpoint (seed ``seed=``, else
  ``$VLAMB_TINY_SEED``, else 0) and loads it with
  :class:`~vlamb_nb.models.hf.HFModel`, the same class and code path as a hub model;
- ``openai:MODEL`` talks to an OpenAI-compatible endpoint (``base_url=``, ``api_key_env=``, and the request
  settings ``concurrency=``, ``timeout=``, ``max_retries=``, ``deadline=``: see
  :class:`~vlamb_nb.models.openai_compat.OpenAIModel`);
- ``replay:FILE`` answers from recorded real outputs (:mod:`vlamb_nb.models.replay`);
- anything else is a Hugging Face hub id or a local checkpoint folder.
"""

from __future__ import annotations

from typing import Any

from vlamb_nb.models.spec import ModelSpec

#: request settings of a served model; any spec takes them, so one notebook parameter serves every backend
REMOTE_SETTINGS = ("concurrency", "timeout", "max_retries", "deadline")


def load_model(spec: str | ModelSpec, quantization: str | None = None, *, concurrency: int | None = None,
               timeout: float | None = None, max_retries: int | None = None, deadline: float | None = None,
               **kwargs: Any):
    """Build the backend named by ``spec`` (see the module docstring); the model keeps the parsed spec as
    ``model.spec``, so a run reads it from there instead of parsing the string again.

    ``concurrency`` (requests in flight), ``timeout`` (seconds per attempt), ``max_retries`` and ``deadline``
    (seconds per request, retries included) configure an ``openai:`` model; None keeps its defaults. Other
    backends send no requests over a network and ignore them.
    """
    parsed = spec if isinstance(spec, ModelSpec) else ModelSpec.parse(spec)
    model = _build(parsed, quantization, {k: v for k, v in zip(REMOTE_SETTINGS, (concurrency, timeout, max_retries,
                                                                                 deadline), strict=True)
                                          if v is not None}, kwargs)
    try:
        model.spec = parsed
    except AttributeError:  # a backend that refuses new attributes still runs; its run has no parsed spec
        pass
    return model


def _build(parsed: ModelSpec, quantization: str | None, remote: dict[str, Any], kwargs: dict[str, Any]):
    spec = parsed.text
    if parsed.kind == "tiny":
        from vlamb_nb.models.hf import HFModel
        from vlamb_nb.models.tiny import TINY_VERSION, tiny_path
        from vlamb_nb.paths import tiny_seed

        family = parsed.name
        seed = kwargs.pop("seed", None)
        seed = tiny_seed() if seed is None else int(seed)
        path = tiny_path(family, seed=seed, cache_dir=kwargs.pop("cache_dir", None))
        kwargs.setdefault("revision_label", f"tiny-v{TINY_VERSION}-seed{seed}")
        label = kwargs.pop("revision_label")
        model = HFModel(path, quantization=quantization, display_id=spec, **kwargs)
        model.info = _with_revision(model.info, label)
        return model
    if parsed.kind == "replay":
        from vlamb_nb.models.replay import ReplayModel

        return ReplayModel.from_file(parsed.name, **kwargs)
    if parsed.kind == "openai":
        from vlamb_nb.models.openai_compat import OpenAIModel

        if quantization not in (None, "none"):
            kwargs.setdefault("quantization_label", quantization)
        return OpenAIModel(parsed.name, **remote, **kwargs)
    from vlamb_nb.models.hf import HFModel

    return HFModel(spec, quantization=quantization, **kwargs)


def _with_revision(info: Any, revision: str) -> Any:
    from dataclasses import replace

    return replace(info, revision=revision)
