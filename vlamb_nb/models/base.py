"""The model protocol every backend implements, and the request/generation records.

A :class:`Request` is a chat (transformers message format) whose ``{"type": "image"}``
slots are filled, in order, by ``images``. Backends (a 4-bit Hugging Face model, an
OpenAI-compatible endpoint, a scripted stand-in for tests) all return :class:`Generation`.

Every backend answers lists of requests (:class:`VLM`: a local model pads them into one batch). A
backend whose requests are independent calls to a server also declares :class:`StreamingVLM`: it takes
the whole list and hands back answers as they finish, keeping many in flight, so the runner never
waits for the slowest request of a batch before sending the next.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from vlamb_nb.errors import SettingError


@dataclass(frozen=True)
class DecodingParams:
    """Decoding parameters; part of the request hash, so changing one never reuses a cached output."""

    max_new_tokens: int = 256
    do_sample: bool = False
    temperature: float = 1.0
    top_p: float = 1.0
    num_beams: int = 1
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise SettingError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.num_beams < 1:
            raise SettingError(f"num_beams must be >= 1, got {self.num_beams}")
        if self.do_sample and self.temperature <= 0:
            raise SettingError("sampling needs temperature > 0")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def text_part(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


IMAGE_SLOT: dict[str, str] = {"type": "image"}


def user_message(*parts: str | dict[str, Any]) -> dict[str, Any]:
    """A user turn from strings (text) and ``IMAGE_SLOT`` markers, in order."""
    content = [text_part(p) if isinstance(p, str) else dict(p) for p in parts]
    return {"role": "user", "content": content}


def assistant_message(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [text_part(text)]}


def system_message(text: str) -> dict[str, Any]:
    return {"role": "system", "content": [text_part(text)]}


@dataclass
class Request:
    """One model call: chat messages with image slots, the images, decoding parameters.

    ``id`` names the request within its run (the item, plus a suffix for extra turns or samples); which item it
    asks about is :attr:`item_id` (``meta["item_id"]``), never read back out of ``id``. ``benchmark`` and
    ``setting`` are part of the cache key; ``meta`` is carried along (and stored with the answer) but not hashed.
    """

    id: str
    messages: list[dict[str, Any]]
    images: list[Any] = field(default_factory=list)
    params: DecodingParams = field(default_factory=DecodingParams)
    benchmark: str = ""
    setting: str = ""
    options: list[str] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n_slots = sum(1 for m in self.messages for p in _content(m) if p.get("type") == "image")
        if n_slots != len(self.images):
            raise SettingError(f"request {self.id}: {n_slots} image slot(s) in the messages but "
                               f"{len(self.images)} image(s) given")

    @property
    def item_id(self) -> str:
        """The item this request asks about (``meta["item_id"]``; a request that names none asks about ``id``)."""
        return str(self.meta.get("item_id", self.id)) if self.meta else str(self.id)

    @property
    def prompt_text(self) -> str:
        """All text of the chat, turns separated by blank lines (for display and text-only backends)."""
        return "\n\n".join(p["text"] for m in self.messages for p in _content(m) if p.get("type") == "text")

    def image_digests(self) -> list[str]:
        from vlamb_nb.images import image_digest

        return [image_digest(im) for im in self.images]

    def key(self, model: ModelInfo) -> str:
        """The request hash the prediction store is keyed by."""
        from vlamb_nb.store import request_key

        return request_key(model_id=model.model_id, revision=model.revision, quantization=model.quantization,
                           benchmark=self.benchmark, setting=self.setting,
                           prompt={"messages": self.messages, "options": self.options},
                           image_digests=self.image_digests(), params=self.params.to_dict(),
                           endpoint=model.endpoint)


def _content(message: dict[str, Any]) -> list[dict[str, Any]]:
    c = message.get("content", [])
    if isinstance(c, str):
        return [text_part(c)]
    return list(c)


@dataclass
class Generation:
    """What a backend returns for one request. ``error`` set means the item failed (counted, not lost)."""

    request_id: str
    text: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    seconds: float = 0.0
    finish_reason: str | None = None
    error: str | None = None
    image_sizes: list[tuple[int, int]] | None = None
    processed_image_sizes: list[tuple[int, int]] | None = None
    option_logprobs: list[float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Backend(StrEnum):
    """What answers a model's requests. Compared as this enum everywhere (a stored record's text value is read
    back into it), so a misspelt backend is an error where it is read, never a comparison that is silently
    false."""

    HF = "hf"  # transformers weights loaded here
    OPENAI = "openai"  # an OpenAI-compatible endpoint
    REPLAY = "replay"  # recorded answers replayed
    SCRIPTED = "scripted"  # a scripted stand-in (tests, pipeline demonstrations)
    FILE = "file"  # answers read from a prediction file, no model at hand

    @property
    def served(self) -> bool:
        """Answered by a server (or recorded from one): only a model's name tells its conventions."""
        return self in (Backend.OPENAI, Backend.REPLAY)


@dataclass(frozen=True)
class ModelInfo:
    """Identity of a model for cache keys and run metadata (never holds secrets).

    ``endpoint`` is the address a remote model answers from, without credentials: one model name served
    by two servers (another checkpoint, another quantization behind the same name) is two runs.
    """

    model_id: str
    revision: str | None = None
    quantization: str | None = None
    backend: Backend = Backend.HF
    family: str | None = None
    dtype: str | None = None
    trust_remote_code: bool = False
    endpoint: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.backend, Backend):
            try:
                object.__setattr__(self, "backend", Backend(self.backend))
            except ValueError:
                raise SettingError(f"unknown model backend {self.backend!r}; one of "
                                   f"{', '.join(b.value for b in Backend)}") from None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["backend"] = self.backend.value
        return out

    @classmethod
    def from_dict(cls, model: Mapping[str, Any] | str | None) -> ModelInfo:
        """A stored record's model (its ``model`` dict, or a bare name in a prediction file), unknown keys left out."""
        if not isinstance(model, Mapping):
            return cls(model_id=str(model or ""), backend=Backend.FILE)
        known = {k: v for k, v in model.items() if k in cls.__dataclass_fields__ and v is not None}
        known.setdefault("model_id", "")
        return cls(**known)


@runtime_checkable
class VLM(Protocol):
    """The protocol every backend implements."""

    info: ModelInfo

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        """One generation per request, in order; failures are returned with ``error`` set."""
        ...

    def score_options(self, request: Request, options: Sequence[str]) -> list[float]:
        """Log-likelihood of each option as the assistant's answer to ``request``."""
        ...


@runtime_checkable
class StreamingVLM(VLM, Protocol):
    """A backend whose requests are independent calls (a remote endpoint): the runner streams to it.

    ``stream`` takes every request at once, keeps up to ``concurrency`` of them in flight (default: the
    backend's own setting) and yields what has finished since the last yield, as ``(index, generation)``
    pairs, ``index`` being the request's position in ``requests``. Each request is answered exactly once,
    failures included (``error`` set). Closing the iterator early stops sending new requests.
    """

    def stream(self, requests: Sequence[Request], *,
               concurrency: int | None = None) -> Iterator[list[tuple[int, Generation]]]:
        ...


class ScriptedModel:
    """A deterministic stand-in backend: answers come from a function of the request.

    Used in tests and offline demos of the pipeline, and to replay outputs from a file.
    It is labelled ``backend='scripted'`` so its results can never pass as a real model's.
    """

    def __init__(self, respond: Callable[[Request], str], *, model_id: str = "scripted",
                 score: Callable[[Request, Sequence[str]], list[float]] | None = None) -> None:
        self.info = ModelInfo(model_id=model_id, backend=Backend.SCRIPTED)
        self._respond = respond
        self._score = score
        self.calls = 0

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        out = []
        for r in requests:
            self.calls += 1
            try:
                out.append(Generation(request_id=r.id, text=self._respond(r), finish_reason="stop"))
            except Exception as e:  # a scripted failure is recorded like a backend failure
                out.append(Generation(request_id=r.id, error=f"{type(e).__name__}: {e}", finish_reason="error"))
        return out

    def score_options(self, request: Request, options: Sequence[str]) -> list[float]:
        if self._score is None:
            raise SettingError("this scripted model has no option scorer")
        return list(self._score(request, options))
