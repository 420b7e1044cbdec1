"""Static checks of every notebook: stored clean, parameters declared the way papermill reads them."""

import re

import nbformat
import pytest

from vlamb_nb.reproduce import NOTEBOOKS, notebooks_dir

PATHS = sorted(notebooks_dir().glob("*.ipynb"))


def _parameters(path):
    """The parameters papermill reads (imported here: collecting this file does not import papermill)."""
    import papermill

    return papermill.inspect_notebook(str(path))


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.get("outputs") and cell.get("execution_count") is None, path.name


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_first_code_cell_is_the_parameters_cell_and_papermill_reads_every_parameter(path):
    nb = nbformat.read(path, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert "parameters" in first.metadata.get("tags", []), f"{path.name}: first code cell not tagged 'parameters'"
    assigned = [m.group(1) for m in re.finditer(r"^(\w+)\s*(?::[^=]+)?=", first.source, re.M)]
    declared = _parameters(path)
    assert assigned, f"{path.name}: no parameters"
    missing = [n for n in assigned if n not in declared]
    assert not missing, f"{path.name}: papermill cannot read parameter(s) {missing} (comments with '=' or quotes?)"


def test_every_notebook_is_run_by_reproduce():
    assert {p.stem for p in PATHS} <= set(NOTEBOOKS)


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_every_notebook_declares_the_shared_vocabulary_and_no_old_name(path):
    """One name for one thing: every notebook runs a model, so each declares every shared name, in the
    vocabulary's order at the top of its parameters cell, and none of the old names."""
    from vlamb_nb.notebook.parameters import DEPRECATED, MODEL_RUN, VOCABULARY

    declared = list(_parameters(path))
    missing = [n for n in MODEL_RUN if n not in declared]
    assert not missing, f"{path.name} lacks the shared parameter(s) {missing}"
    assert declared[: len(MODEL_RUN)] == list(MODEL_RUN), f"{path.name}: shared names first, in order"
    old = [n for n in declared if n in DEPRECATED]
    assert not old, f"{path.name} declares old name(s) {old}; use {[DEPRECATED[n] for n in old]}"
    assert set(MODEL_RUN) <= set(VOCABULARY)


def test_the_vocabulary_is_documented_once_in_the_readme(repo_root):
    from vlamb_nb.notebook.parameters import DEPRECATED, VOCABULARY

    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    for name in VOCABULARY:
        assert readme.count(f"| `{name}` |") == 1, f"README documents {name!r} {readme.count(f'| `{name}` |')} times"
    for old, new in DEPRECATED.items():
        assert f"`{old}`" in readme, f"the deprecated alias {old!r} (now {new!r}) is not documented"


# parameters that change how a model is run: a real run must never inherit an offline shortcut as default
MODEL_PARAMS = ("model",)
PAPER_SETTINGS = ("max_new_tokens", "num_beams", "n_samples", "limit", "judge", "judge_max_new_tokens",
                  "max_steps", "learning_rate", "batch_size", "grad_accum", "n_train")


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_defaults_are_the_papers_and_the_offline_shortcuts_are_a_profile(path):
    declared = _parameters(path)
    assert "profile" in declared and declared["profile"]["default"] == "None", f"{path.name}: no profile parameter"
    for name in MODEL_PARAMS:
        if name in declared:
            assert declared[name]["default"] == "None", f"{path.name}: {name} defaults to {declared[name]['default']}"
    for name in PAPER_SETTINGS:
        if name in declared:
            assert declared[name]["default"] == "None", \
                f"{path.name}: {name} = {declared[name]['default']} is an offline shortcut, not the paper's default"
    source = path.read_text(encoding="utf-8")
    assert "setup(" in source, f"{path.name}: does not resolve its profile with notebook.setup"
    assert "tempfile" not in source, f"{path.name}: working files belong under the run folder"


# what a cell may end with: a call that displays on purpose (tables through show, so they are rounded and wide)
# or returns nothing; anything else would print its return value into the notebook
DISPLAYING = {"show", "say", "print", "display", "record", "save_figure", "widget", "explorer_tabs",
              "record_headline"}


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_no_cell_ends_in_a_bare_value_and_tables_go_through_show(path):
    import ast

    nb = nbformat.read(path, as_version=4)
    loose = []
    for k, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        body = ast.parse(cell.source).body
        if not body or not isinstance(body[-1], ast.Expr):
            continue
        call = body[-1].value
        name = (getattr(call.func, "id", None) or getattr(call.func, "attr", None)) if isinstance(call, ast.Call) else None
        if name not in DISPLAYING:
            loose.append(f"cell {k}: {ast.unparse(call)[:80]}")
    assert not loose, f"{path.name}: cells that would print a raw value: {loose}"


def deviation_sources(source: str) -> list[str]:
    """Calls in notebook code that make deviations instead of taking what a run carries: ``x.deviations(...)``
    (a benchmark's or model's builder) and ``x.all_deviations(...)`` on anything but the notebook's ``cfg``."""
    made = re.findall(r"\b(\w+)\.deviations\(", source)
    merged = [o for o in re.findall(r"\b(\w+)\.all_deviations\(", source) if o != "cfg"]
    return [f"{o}.deviations(...)" for o in made] + [f"{o}.all_deviations(...)" for o in merged]


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_every_notebook_gets_its_deviations_one_way(path):
    """A notebook records and prints the deviations its runs stored (``scored.attrs["deviations"]``, a study's or a
    training run's list), merged with its own by ``cfg.all_deviations``: never rebuilt beside the run."""
    nb = nbformat.read(path, as_version=4)
    found = [f"cell {i}: {call}" for i, c in enumerate(nb.cells) if c.cell_type == "code"
             for call in deviation_sources(c.source)]
    assert not found, f"{path.name} builds deviations itself: {found}"


def test_the_deviation_check_can_fail():
    assert deviation_sources('devs = cfg.all_deviations(bench.deviations(model.info, "full"))') == [
        "bench.deviations(...)"]
    assert deviation_sources("x = report.all_deviations(by_setting)") == ["report.all_deviations(...)"]
    assert deviation_sources('devs = cfg.all_deviations(run.attrs["deviations"])') == []
