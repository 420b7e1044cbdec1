"""Model backends behind one protocol (``vlamb_nb.models.base.VLM``).

``load_model`` picks the backend from a spec string; heavy imports happen only there.
"""

from __future__ import annotations

from vlamb_nb.models.base import (
    IMAGE_SLOT,
    VLM,
    Backend,
    DecodingParams,
    Generation,
    ModelInfo,
    Request,
    ScriptedModel,
    StreamingVLM,
    assistant_message,
    system_message,
    text_part,
    user_message,
)
from vlamb_nb.models.spec import ModelSpec

__all__ = [
    "IMAGE_SLOT", "VLM", "Backend", "DecodingParams", "Generation", "ModelInfo", "ModelSpec", "Request", "ScriptedModel",
    "StreamingVLM", "assistant_message", "load_model", "system_message", "text_part", "user_message",
]


def load_model(spec: str | ModelSpec, *, quantization: str | None = None, concurrency: int | None = None,
               timeout: float | None = None, max_retries: int | None = None, deadline: float | None = None, **kwargs):
    """Build a backend from a spec (read by :class:`ModelSpec`).

    - ``tiny:FAMILY``: a tiny random checkpoint built locally (tests, offline demos)
    - ``openai:MODEL`` (``base_url=`` / ``api_key_env=`` keyword arguments): an OpenAI-compatible endpoint
    - ``replay:FILE``: recorded answers
    - anything else: a Hugging Face model id or a local checkpoint folder

    ``concurrency`` (requests in flight, default 64), ``timeout`` (seconds per attempt, default 120),
    ``max_retries`` (default 5) and ``deadline`` (seconds per request with its retries, default 600) set an
    ``openai:`` model's requests; any other backend accepts and ignores them, so one setting serves every spec.
    """
    from vlamb_nb.models.loading import load_model as _load

    return _load(spec, quantization=quantization, concurrency=concurrency, timeout=timeout,
                 max_retries=max_retries, deadline=deadline, **kwargs)
