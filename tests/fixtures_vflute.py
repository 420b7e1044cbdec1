"""V-FLUTE stand-ins shared by the benchmark and run-identity tests: a scripted model that knows the answers, and
the release's Hugging Face parquet layout written from generated items."""

from __future__ import annotations

import os
from pathlib import Path


def oracle(items, wrong: bool = False):
    """Answers with each item's gold explanation and label (``wrong``: the opposite label)."""
    gold = dict(zip(items["claim"], zip(items["explanation"], items["label"], strict=True), strict=True))
    flip = {"entailment": "contradiction", "contradiction": "entailment"}

    def respond(req):
        claim = next(c for c in gold if f'"{c}"' in req.prompt_text)
        expl, label = gold[claim]
        return f"{expl}\nLABEL: {flip[label] if wrong else label}"
    return respond


def write_hf_parquet(items, path: str | os.PathLike, *, image_root: str | os.PathLike | None = None) -> Path:
    """Items as a shard of the hub release (``image`` struct with embedded bytes, the release's columns)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vlamb_nb.images import read_image_bytes

    images = []
    for _, r in items.iterrows():
        data, _ = read_image_bytes(r["image"], root=image_root or r["image_root"])
        images.append({"bytes": data, "path": None})
    table = pa.table({
        "image": pa.array(images, type=pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
        "claim": pa.array(items["claim"].tolist(), type=pa.string()),
        "label": pa.array(items["label"].tolist(), type=pa.string()),
        "explanation": pa.array(items["explanation"].tolist(), type=pa.string()),
        "phenomenon": pa.array(items["phenomenon"].tolist(), type=pa.string()),
        "source_dataset": pa.array(items["source_dataset"].tolist(), type=pa.string()),
    })
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, p)
    return p
