"""The parameter vocabulary every notebook shares: one name for one thing, in every ``parameters`` cell.

A notebook declares the shared names it uses (every notebook that runs a model declares all of
:data:`MODEL_RUN`) plus what is truly its own (``predictions``, ``judge``, ``n_samples``, ...).
``vlamb-nb reproduce -p key=value`` sends a shared name to every notebook that declares it; an old name
(:data:`DEPRECATED`) is translated with a warning; a name no selected notebook declares is an error.
"""

from __future__ import annotations

#: name -> what it means (the README's table is this one)
VOCABULARY: dict[str, str] = {
    "profile": '"offline" (the tiny checkpoint\'s model path and the scripted stand-in: a pipeline demo) or '
               '"paper"; None: offline without a real model, else paper',
    "model": "hub id, local checkpoint, tiny:FAMILY, replay:FILE or openai:MODEL; None: the offline stand-in",
    "base_url": "the OpenAI-compatible endpoint of an openai:MODEL (a vLLM server, an API); None: "
                "$OPENAI_BASE_URL or the OpenAI API",
    "quantization": '"4bit", "8bit" or "none" for local weights (served and replayed models: ignored)',
    "concurrency": "requests in flight to an openai: endpoint; None: the client's default",
    "settings": "the benchmark's settings to run: a list, or a comma list",
    "limit": "at most this many items per setting run through the model; None: the paper's (all), offline: a few",
    "source": "the data: hub id, local file or folder; None: the release beside the checkout or a generated sample",
    "store_dir": "where prediction stores and other working files go; None: the run folder (a rerun resumes)",
    "seed": "seed of generated samples, sampling and the bootstrap",
}

#: the shared names a notebook that runs a model declares, all of them
MODEL_RUN: tuple[str, ...] = ("profile", "model", "base_url", "quantization", "concurrency", "settings", "limit",
                              "source", "store_dir", "seed")

#: old name -> shared name; accepted by ``reproduce`` with a warning
DEPRECATED: dict[str, str] = {
    "model_spec": "model",
    "quant": "quantization",
    "setting": "settings",
    "demo_limit": "limit",
    "n_demo": "limit",
    "n_items": "limit",
    "n_test": "limit",
    "sample_size": "limit",
    "store": "store_dir",
    "out_dir": "store_dir",
    "sources": "source",
}
