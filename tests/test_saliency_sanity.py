"""Sanity checks for saliency maps (Adebayo et al. 2018): rank correlation, input randomization, cascading
parameter randomization on tiny random checkpoints, and a method that ignores the model failing them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vlamb_nb.errors import SettingError
from vlamb_nb.saliency import sanity
from vlamb_nb.saliency.sanity import CASCADING, INPUT, noise_image, shuffle_patches, spearman


# -- pure parts ------------------------------------------------------------------------------------
def test_spearman_matches_scipy_and_is_undefined_for_constant_maps():
    from scipy.stats import spearmanr

    rng = np.random.default_rng(0)
    a, b = rng.random(30), rng.random(30)
    b[:5] = b[5]  # ties get average ranks
    assert spearman(a, b) == pytest.approx(spearmanr(a, b).statistic)
    assert spearman(a, 3 * a + 1) == pytest.approx(1.0) and spearman(a, -a) == pytest.approx(-1.0)
    assert np.isnan(spearman(a, np.zeros(30))) and np.isnan(spearman([1.0], [2.0]))
    with pytest.raises(SettingError):
        spearman(a, b[:10])


def test_shuffled_patches_move_whole_blocks_and_never_stay_in_place():
    from PIL import Image

    rng = np.random.default_rng(1)
    arr = (rng.random((60, 120, 3)) * 255).astype(np.uint8)
    img = Image.fromarray(arr)
    out = np.asarray(shuffle_patches(img, (3, 4), seed=2))
    assert out.shape == arr.shape and not np.array_equal(out, arr)

    def blocks(x):
        return sorted(x[r * 20:(r + 1) * 20, c * 30:(c + 1) * 30].tobytes() for r in range(3) for c in range(4))

    assert blocks(out) == blocks(arr)  # the same blocks, elsewhere
    for seed in range(20):  # with two blocks the only non-identity order is the swap
        two = np.asarray(shuffle_patches(img, (1, 2), seed=seed))
        np.testing.assert_array_equal(two[:, :60], arr[:, 60:])
    uneven = shuffle_patches(Image.fromarray(arr[:59, :101]), (3, 4), seed=0)
    assert uneven.size == (101, 59)
    with pytest.raises(SettingError, match="one block"):
        shuffle_patches(img, (1, 1))
    noise = noise_image(img, seed=0)
    assert noise.size == img.size and not np.array_equal(np.asarray(noise), arr)


def _frame(casc_final=(0.2, 0.9, float("nan")), inputs=(0.1, 0.7, 0.3), threshold=0.5):
    rows = []
    methods = ("attention", "rollout", "gradient")
    for step, label in enumerate(["none", "output head", "language layer 0"]):
        for m, fin in zip(methods, casc_final, strict=True):
            rho = 1.0 if step == 0 else (0.8 if step == 1 else fin)
            rows.append(sanity._row(CASCADING, m, step, label, step / 2, np.arange(6.0),
                                    np.arange(6.0) if rho == 1.0 else np.zeros(6), threshold, step == 2))
            rows[-1]["spearman"] = rho
            rows[-1]["below_threshold"] = bool(np.isfinite(rho) and rho < threshold)
    for m, rho in zip(methods, inputs, strict=True):
        rows.append({**sanity._row(INPUT, m, 1, "noise image", float("nan"), np.arange(6.0), np.arange(6.0),
                                   threshold, True), "spearman": rho, "below_threshold": rho < threshold})
    return pd.DataFrame(rows, columns=sanity.FRAME_COLUMNS)


def test_summary_passes_only_below_the_stated_threshold_after_full_randomization():
    s = sanity.sanity_summary(_frame())
    casc = s[s["check"] == CASCADING].set_index("method")
    assert casc["passes"].to_dict() == {"attention": True, "rollout": False, "gradient": False}  # NaN fails
    assert (s["threshold"] == 0.5).all() and set(s["randomized"]) == {"language layer 0", "noise image"}
    inp = s[s["check"] == INPUT].set_index("method")
    assert inp["passes"].to_dict() == {"attention": True, "rollout": False, "gradient": True}


def test_plot_has_one_line_per_method_and_the_threshold(tmp_path):
    from vlamb_nb.plots import save_figure

    fig = sanity.plot_sanity(_frame(threshold=0.4))
    ax = fig.axes[0]
    labels = [ln.get_label() for ln in ax.get_lines()]
    assert labels[:3] == ["attention", "rollout", "gradient"] and "pass threshold 0.4" in labels
    thr = ax.get_lines()[3]
    assert set(thr.get_ydata()) == {0.4}
    assert [t.get_text() for t in ax.get_xticklabels()] == ["none", "output head", "language layer 0"]
    assert fig.axes[1].get_title(loc="left") == "Input randomization"
    save_figure(fig, "saliency", "sanity-test", directory=tmp_path)
    assert (tmp_path / "saliency" / "sanity-test.png").stat().st_size > 0
    with pytest.raises(SettingError):
        sanity.plot_sanity(_frame().iloc[:0])


# -- on tiny random checkpoints ----------------------------------------------------------------------
FAMILIES = ["qwen2_5_vl", "llava", "llava_onevision", "idefics3"]


@pytest.fixture(scope="module")
def explainers():
    from vlamb_nb.models import load_model
    from vlamb_nb.saliency.methods import Explainer

    cache: dict[str, Explainer] = {}

    def get(family: str) -> Explainer:
        if family not in cache:
            cache[family] = Explainer(load_model(f"tiny:{family}"), max_side=96)
        return cache[family]

    return get


def _request(size=(100, 60), seed=0):
    from PIL import Image

    from vlamb_nb.models import IMAGE_SLOT, Request, user_message

    w, h = size
    img = Image.fromarray((np.random.default_rng(seed).random((h, w, 3)) * 255).astype(np.uint8))
    return Request("item-1", [user_message(IMAGE_SLOT, "Which one? (A) cat (B) dog")], images=[img])


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_blocks_cover_every_parameter_once_output_side_first(explainers, family):
    ex = explainers(family)
    blocks = sanity.randomization_blocks(ex)
    names = [b for b, _ in blocks]
    flat = [n for _, ns in blocks for n in ns]
    assert sorted(flat) == sorted(n for n, _ in ex.hf.named_parameters(remove_duplicate=False))
    assert names[0] == "output head" and names[-1] == "vision embeddings"
    lang = [int(b.split()[-1]) for b in names if b.startswith("language layer")]
    vis = [int(b.split()[-1]) for b in names if b.startswith("vision block")]
    assert lang == sorted(lang, reverse=True) == list(range(len(ex._attention_modules())))[::-1]
    assert vis == sorted(vis, reverse=True) and len(vis) >= 1
    assert names.index("text embeddings") > names.index("language layer 0") > names.index("output head")
    assert names.index("projector") < names.index(f"vision block {vis[0]}")


@pytest.mark.slow
def test_randomization_works_on_a_copy_and_unties_the_output_head(explainers):
    import copy

    import torch

    ex = explainers("qwen2_5_vl")  # ties the output head to the text embeddings
    blocks = dict(sanity.randomization_blocks(ex))
    twin = copy.deepcopy(ex.hf)
    gen = torch.Generator().manual_seed(0)
    n = sanity.randomize_parameters(twin, blocks["output head"], generator=gen)
    assert n > 0
    assert not torch.equal(twin.lm_head.weight, ex.hf.lm_head.weight)
    emb = "model.language_model.embed_tokens.weight"
    assert torch.equal(twin.get_parameter(emb), ex.hf.get_parameter(emb))  # tied, but not yet randomized
    for ns in list(blocks.values())[1:]:
        sanity.randomize_parameters(twin, ns, generator=gen)
    orig = {k: v.detach() for k, v in ex.hf.named_parameters(remove_duplicate=False)}
    for name, p in twin.named_parameters(remove_duplicate=False):
        o, p = orig[name], p.detach()
        assert p.shape == o.shape and p.dtype == o.dtype
        if o.numel() > 1 and float(o.float().std()) > 0:  # constant tensors stay constant, like an init
            assert not torch.equal(p, o), name
            assert float(p.float().std()) == pytest.approx(float(o.float().std()), rel=0.5)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["llava", "llava_onevision"])
def test_cascading_and_input_randomization_on_a_tiny_model(explainers, family):
    ex = explainers(family)
    req = _request()
    before = {k: v.clone() for k, v in ex.hf.state_dict().items()}
    frame = sanity.sanity_checks(ex, req, threshold=0.45, seed=0)
    after = ex.hf.state_dict()
    assert all(torch_equal(before[k], after[k]) for k in before)  # the loaded model is never touched
    assert list(frame.columns) == sanity.FRAME_COLUMNS and (frame["threshold"] == 0.45).all()
    casc = frame[frame["check"] == CASCADING]
    n_blocks = len(sanity.randomization_blocks(ex))
    assert sorted(set(casc["step"])) == list(range(n_blocks + 1))
    np.testing.assert_allclose(casc[casc["step"] == 0]["spearman"], 1.0)  # the copy reproduces the original
    assert casc[casc["final"]]["share_randomized"].eq(1.0).all() and casc["final"].sum() == 3
    # the output head does not enter attention weights, only the gradient
    head = casc[casc["step"] == 1].set_index("method")["spearman"]
    assert head["attention"] == pytest.approx(1.0) and head["rollout"] == pytest.approx(1.0)
    assert head["gradient"] < 0.99
    summary = sanity.sanity_summary(frame)
    assert len(summary) == 3 * 3 and summary["passes"].all(), summary  # random weights: maps decorrelate
    assert set(frame[frame["check"] == INPUT]["randomized"]) == set(sanity.INPUT_VARIANTS)
    every = sanity.cascading_randomization(ex, req, methods=("gradient",), every=3, answer=frame.attrs["answer"])
    assert list(every["step"]) == [s for s in range(n_blocks + 1) if s % 3 == 0 or s == n_blocks]


def torch_equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a, b))


@pytest.mark.slow
def test_a_map_that_ignores_the_model_and_the_image_fails(explainers, monkeypatch):
    """A 'saliency' of token positions only (an edge detector's cousin) must fail both checks."""
    from vlamb_nb.saliency.methods import Explainer

    real = Explainer.explain

    def positional(self, request, method="gradient", **kw):
        m = real(self, request, method, **kw)
        if method == "attention":
            m.token_scores = np.linspace(1.0, 2.0, len(m.token_scores))
        return m

    monkeypatch.setattr(Explainer, "explain", positional)
    frame = sanity.sanity_checks(explainers("llava"), _request(seed=3), methods=("attention", "gradient"))
    verdict = sanity.sanity_summary(frame).groupby("method")["passes"].agg(list)
    assert not any(verdict["attention"]) and all(verdict["gradient"])
    np.testing.assert_allclose(frame[frame["method"] == "attention"]["spearman"], 1.0)


@pytest.mark.slow
def test_quantized_weights_and_bad_parameters_are_refused():
    from vlamb_nb.models import load_model
    from vlamb_nb.saliency.methods import Explainer

    ex = Explainer(load_model("tiny:llava", quantization="4bit"), max_side=64)
    with pytest.raises(SettingError, match="quantiz"):
        sanity.cascading_randomization(ex, _request(), methods=("gradient",), answer="B")
    with pytest.raises(SettingError, match="threshold"):
        sanity.cascading_randomization(ex, _request(), threshold=2.0)
    with pytest.raises(SettingError, match="unknown input randomization"):
        sanity.input_randomization(ex, _request(), variants=("blur",), answer="B")
