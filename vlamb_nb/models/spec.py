"""A model spec, read once: what kind of model a string names and whether its weights are here.

Every caller (notebooks' setup, the CLI, ``reproduce``, sweeps, the papers' loading options, the grounding
scorer) asks :meth:`ModelSpec.parse` instead of reading a prefix itself, so the spellings below are written in
this module only:

- ``tiny:FAMILY`` (``tiny`` alone for a detector): a tiny random checkpoint built here (tests, offline demos);
- ``openai:MODEL``: a model served behind an OpenAI-compatible endpoint (``base_url``);
- ``replay:FILE``: recorded answers replayed;
- ``scripted...``: a scripted stand-in's name (the object itself is passed, not a spec);
- a folder that exists: a local checkpoint; anything else: a Hugging Face hub id.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vlamb_nb.errors import SettingError

#: the kinds a spec can name
KINDS = ("hub", "local", "tiny", "openai", "replay", "scripted")
#: the prefix (with its colon) of each kind that has one
PREFIXES = {"tiny": "tiny:", "openai": "openai:", "replay": "replay:"}


@dataclass(frozen=True)
class ModelSpec:
    """One parsed spec: ``kind`` (see :data:`KINDS`), ``name`` (the hub id, folder, tiny family, served model,
    recording file or scripted name), ``text`` (the spec as given) and ``base_url`` (a served model's endpoint,
    when the caller has one)."""

    kind: str
    name: str
    text: str
    base_url: str | None = None

    @classmethod
    def parse(cls, spec: str, *, base_url: str | None = None) -> ModelSpec:
        if not isinstance(spec, str) or not spec.strip():
            raise SettingError(f"model spec must be a non-empty string, got {spec!r}")
        text = spec.strip()
        if text == "tiny":
            return cls("tiny", "", text, base_url)
        for kind, prefix in PREFIXES.items():
            if text.startswith(prefix):
                return cls(kind, text[len(prefix):], text, base_url)
        if text.startswith("scripted"):
            return cls("scripted", text, text, base_url)
        return cls("local" if Path(text).expanduser().is_dir() else "hub", text, text, base_url)

    @property
    def weights_local(self) -> bool:
        """The weights are loaded in this process (so quantization is ours to choose, and saliency maps and
        training can run): not for a served, replayed or scripted model."""
        return self.kind in ("hub", "local", "tiny")

    @property
    def served(self) -> bool:
        """Served elsewhere behind an endpoint (``openai:``): the only kind that takes endpoint options."""
        return self.kind == "openai"

    @property
    def stand_in(self) -> bool:
        """A stand-in, not a model: a tiny random checkpoint, a scripted model or a replay of recorded outputs."""
        return self.kind in ("tiny", "scripted", "replay")
