"""What the package covers of each paper, read from every registered paper's inventory, and the README parts
generated from it (``vlamb-nb coverage --readme README.md``), and the table of every model a paper evaluated, read
from the family registry. A README whose generated parts differ from what this gives is stale (``--check``)."""

from __future__ import annotations

import os
from pathlib import Path

from vlamb_nb.inventory import Inventory, block, coverage_markdown, replace_block

#: the README parts this module writes, each between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``
BLOCKS = ("coverage", "models")


def inventories(papers: list[str] | None = None) -> list[tuple[str, Inventory]]:
    """``(title, inventory)`` of every paper of the registry's line that keeps one (``papers``: these, in this
    order)."""
    from vlamb_nb.benchmarks import PAPERS, get_benchmark, registered

    regs = {p.name: p for p in registered()}
    names = papers or [p.name for p in PAPERS]
    out = []
    for name in names:
        inv = get_benchmark(name).inventory()
        if inv is not None:
            out.append((regs[name].title if name in regs else name, inv))
    return out


def tiny_tested() -> set[str]:
    """The families a tiny random checkpoint of their real architecture is built for (and the tests run)."""
    from vlamb_nb.models.tiny import families

    return {"text" if b == "llama_text" else b for b in families()}


def models_markdown() -> str:
    """The README's table of every model a paper evaluated, read from the family registry
    (:data:`vlamb_nb.models.families.PAPER_MODELS`, :func:`~vlamb_nb.models.families.how_it_runs`)."""
    from vlamb_nb.models.families import PAPER_MODELS, how_it_runs

    tested = tiny_tested()
    lines = ["| paper | model (as the paper names it) | checkpoint | how it runs here |", "|---|---|---|---|"]
    for m in PAPER_MODELS:
        how, detail = how_it_runs(m)
        if how == "here":
            text = (f"here: family `{detail}`, tested on a tiny random checkpoint of its architecture"
                    if detail in tested else f"here: family `{detail}` (no tiny checkpoint: not tested here)")
        elif how == "api":
            text = f"API: `openai:{m.checkpoint}` at {detail}'s OpenAI-compatible endpoint, while it serves the model"
        else:
            text = f"not loaded here ({detail}); served behind an OpenAI-compatible server, through `openai:MODEL`"
        if m.note:
            text += f"; {m.note}"
        lines.append(f"| {', '.join(m.papers)} | {m.name} | `{m.checkpoint}` | {text} |")
    return "\n".join(lines)


def generated(name: str) -> str:
    if name == "models":
        return models_markdown()
    if name == "coverage":
        return coverage_markdown(inventories())
    raise KeyError(name)


def render(text: str) -> str:
    """``text`` (a README) with every generated part written anew."""
    for name in BLOCKS:
        text = replace_block(text, name, generated(name))
    return text


def stale(text: str) -> list[str]:
    """The generated parts of ``text`` that differ from what the inventories and the registry give now."""
    return [name for name in BLOCKS if block(text, name) != generated(name).strip("\n")]


def update_readme(path: str | os.PathLike, *, check: bool = False) -> list[str]:
    """Write the generated parts of the README at ``path`` (``check``: only say which are stale)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    old = stale(text)
    if old and not check:
        path.write_text(render(text), encoding="utf-8")
    return old
