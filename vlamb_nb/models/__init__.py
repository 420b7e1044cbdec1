"""Model backends behind one protocol (``vlamb_nb.models.base.VLM``).

``load_model`` picks the backend from a spec string; heavy imports happen only there.
"""

from __future__ import annotations

from vlamb_nb.models.base import (
    IMAGE_SLOT,
    VLM,
    DecodingParams,
    Generation,
    ModelInfo,
    Request,
    ScriptedModel,
    assistant_message,
    system_message,
    text_part,
    user_message,
)

__all__ = [
    "IMAGE_SLOT", "VLM", "DecodingParams", "Generation", "ModelInfo", "Request", "ScriptedModel",
    "assistant_message", "load_model", "system_message", "text_part", "user_message",
]


def load_model(spec: str, *, quantization: str | None = None, **kwargs):
    """Build a backend from a spec.

    - ``tiny:FAMILY``: a tiny random checkpoint built locally (tests, offline demos)
    - ``openai:MODEL`` (``base_url=`` / ``api_key_env=`` keyword arguments): an OpenAI-compatible endpoint
    - anything else: a Hugging Face model id or a local checkpoint folder
    """
    from vlamb_nb.models.loading import load_model as _load

    return _load(spec, quantization=quantization, **kwargs)
