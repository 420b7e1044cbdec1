"""The README's table of every model the five papers evaluated is generated from the family registry, says for each
how it runs here, and claims a tiny test only for families whose tiny checkpoint the model tests run; a family that
is listed but not run here refuses its checkpoints in one line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vlamb_nb import coverage
from vlamb_nb.errors import NotAvailableError
from vlamb_nb.inventory import block
from vlamb_nb.models.families import _BY_TYPE, FAMILIES, PAPER_MODELS, PaperModel, how_it_runs

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_models_table_is_the_registrys():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert block(readme, "models") == coverage.models_markdown()
    assert all(f"`{m.checkpoint}`" in readme for m in PAPER_MODELS)


def test_every_model_runs_here_through_an_endpoint_or_says_why_not():
    for m in PAPER_MODELS:
        how, detail = how_it_runs(m)
        assert how in ("here", "api", "server") and detail
        if m.api:
            assert not m.model_type
        else:
            assert m.model_type, m.name
        if how == "server":
            fam = _BY_TYPE.get(m.model_type)
            assert (fam is not None and not fam.runs_here) or m.why_not, m.name
    # a model of a family row that cannot run here is never said to run here (Molmo, mPLUG-Owl3, MiniCPM-o, Phi-3.5-V)
    for name in ("molmo", "mplug_owl3", "minicpmo", "phi3_v"):
        assert how_it_runs(PaperModel(("x",), name, name, name))[0] == "server"
    assert how_it_runs(PaperModel(("x",), "new", "new", "brand_new", why_not="remote code"))[1] == "remote code"


def test_a_tiny_test_is_claimed_only_for_the_families_the_model_tests_run():
    tree = ast.parse((ROOT / "tests" / "test_models_hf.py").read_text(encoding="utf-8"))
    tested = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                  and getattr(n.targets[0], "id", "") == "TINY_FAMILIES")
    claimed = coverage.tiny_tested() - {"text"}  # the judge's text LM: test_models_text.py
    assert claimed == set(tested), "a tiny builder without the model tests, or tests of a family with no builder"
    table = coverage.models_markdown()
    for fam in {f.name for f in FAMILIES} - coverage.tiny_tested():
        assert f"family `{fam}`, tested" not in table
    assert "family `llava_next`, tested" in table and "family `internvl`, tested" in table


def test_a_family_listed_but_not_run_here_refuses_its_checkpoint_in_one_line(tmp_path):
    pytest.importorskip("transformers")
    from vlamb_nb.models import load_model

    (tmp_path / "configuration_molmo.py").write_text(
        "from transformers import PretrainedConfig\n\n\nclass MolmoConfig(PretrainedConfig):\n"
        "    model_type = 'molmo'\n", encoding="utf-8")
    (tmp_path / "config.json").write_text('{"model_type": "molmo", "architectures": ["MolmoForCausalLM"], '
                                          '"auto_map": {"AutoConfig": "configuration_molmo.MolmoConfig"}}',
                                          encoding="utf-8")
    with pytest.raises(NotAvailableError, match="family 'molmo' is not loaded here") as e:
        load_model(str(tmp_path), trust_remote_code=True, quantization=None)
    assert "openai:MODEL" in str(e.value) and "\n" not in str(e.value)
