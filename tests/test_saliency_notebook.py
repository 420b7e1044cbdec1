"""The saliency notebook runs under papermill with default parameters and records its results."""

from __future__ import annotations

import pytest
from fixtures_notebooks import deviation_lines

pytestmark = pytest.mark.slow


def test_saliency_notebook_runs_with_defaults(notebook_runs):
    run = notebook_runs.get("saliency")
    res = run.results

    check = res["one_patch_check"]
    assert check["peak_in_cell"] and check["mass_in_cell"] > 0.9
    assert "not saliency faithfulness" in check["checks"]  # a plumbing check, labelled as such
    sanity = res["sanity_checks"]
    assert sanity["threshold"] == 0.5 and sanity["blocks"][0] == "output head"
    verdicts = {(v["check"], v["randomized"], v["method"]): v for v in sanity["verdicts"]}
    assert {m for *_, m in verdicts} == {"attention", "rollout", "gradient"} and len(verdicts) == 9
    assert all(v["threshold"] == 0.5 and isinstance(v["passes"], bool) for v in sanity["verdicts"])
    assert {r["check"] for r in sanity["rows"]} == {"cascading parameter randomization", "input randomization"}
    assert res["saliency_failures"] == {"refadv": 0, "vague": 0, "racquet": 0}
    rows = res["box_mass"]
    assert {r["benchmark"] for r in rows} == {"refadv", "vague", "racquet"}
    assert {r["method"] for r in rows} == {"attention", "rollout", "gradient"}
    assert {"gold", "addressee", "other people", "largest", "centermost"} <= {r["role"] for r in rows}
    for r in rows:
        assert 0.0 <= r["ci_low"] <= r["mass"] <= r["ci_high"] <= 1.0
    assert all(r["n_correct"] + r["n_wrong"] > 0 for r in res["correct_vs_wrong"])
    assert res["paper_vs_ours"] == [] and res["audit"] == {"findings": 0, "mismatches": 0}
    assert any("max_new_tokens" in d for d in deviation_lines(res))
    counts = res["explorer_counts"]  # one explorer per benchmark, each over the offline profile's 3 items
    assert set(counts) == {"refadv", "vague", "racquet"}
    assert all(c["n"] == c["of"] == 3 for c in counts.values())
    assert any("items per benchmark" in d and "3 (offline profile)" in d for d in deviation_lines(res))
    assert not list(run.figures.glob("*.png"))  # the stand-in's maps are demos only
    figs = sorted(p.name for p in (run.figures / "demo").iterdir())
    for b in ("refadv", "vague", "racquet"):
        for kind in ("box-mass", "methods"):
            assert f"{b}-{kind}.png" in figs and f"{b}-{kind}.pdf" in figs
    assert "sanity-checks.png" in figs and "sanity-checks.pdf" in figs
    assert all(r["image_share"] is None or 0.0 < r["image_share"] < 1.0 for r in rows)
    assert any(r["image_share"] is not None for r in rows)
