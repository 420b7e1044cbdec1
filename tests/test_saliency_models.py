"""Saliency maps on tiny random checkpoints of four families (built locally, cached per user)."""

from __future__ import annotations

import numpy as np
import pytest

from vlamb_nb.errors import SettingError

pytestmark = pytest.mark.slow

FAMILIES = ["qwen2_5_vl", "llava", "llava_onevision", "idefics3"]
SIZES = [(100, 60), (60, 110)]  # landscape and portrait, so a transposed grid cannot pass


@pytest.fixture(scope="module")
def explainers():
    from vlamb_nb.models import load_model
    from vlamb_nb.saliency.methods import Explainer

    cache: dict[str, Explainer] = {}

    def get(family: str) -> Explainer:
        if family not in cache:
            cache[family] = Explainer(load_model(f"tiny:{family}"), max_side=128)
        return cache[family]

    return get


def _request(img, question="Which one? (A) cat (B) dog"):
    from vlamb_nb.models import IMAGE_SLOT, Request, user_message

    return Request("item-1", [user_message(IMAGE_SLOT, question)], images=[img])


def _image(size, seed=0, value=None):
    from PIL import Image

    w, h = size
    if value is not None:
        return Image.fromarray(np.full((h, w, 3), value, np.uint8))
    return Image.fromarray((np.random.default_rng(seed).random((h, w, 3)) * 255).astype(np.uint8))


def _cell(seg, r, c, shrink=0.0):
    x0, y0, x1, y1 = seg.region
    cw, ch = (x1 - x0) / seg.shape[1], (y1 - y0) / seg.shape[0]
    return (x0 + (c + shrink) * cw, y0 + (r + shrink) * ch, x0 + (c + 1 - shrink) * cw, y0 + (r + 1 - shrink) * ch)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_method_gives_a_normalised_map_with_the_image_aspect(explainers, family):
    ex = explainers(family)
    for size in SIZES:
        req = _request(_image(size))
        for method in ("attention", "rollout", "gradient"):
            m = ex.explain(req, method, max_new_tokens=4)
            rows, cols = m.heatmap.shape
            assert m.heatmap.sum() == pytest.approx(1.0)
            assert np.all(m.heatmap >= 0)
            assert abs(rows / cols - size[1] / size[0]) < 2.0 / min(rows, cols)
            assert m.token_scores.shape == (m.layout.n_tokens,) and m.token_scores.sum() > 0
            assert 0.0 < m.image_share < 1.0 and m.summary()["image_share"] == m.image_share
            assert m.answer  # garbage text from a random model is fine; it must exist


@pytest.mark.parametrize("family", FAMILIES)
def test_gradient_puts_the_mass_on_the_only_patch_the_answer_depends_on(explainers, family):
    """Hide every image token but one from the language model: the answer then depends on that patch only."""
    ex = explainers(family)
    for size in SIZES:
        req = _request(_image(size, seed=1))
        layout = ex.explain(req, "attention", max_new_tokens=1).layout
        for seg in (layout.segments[0], layout.segments[-1]):
            r, c = seg.shape[0] - 1, seg.shape[1] // 2  # an off-centre, asymmetric cell
            k = int(seg.indices[r * seg.shape[1] + c])
            m = ex.explain(req, "gradient", answer="B", visible_tokens=[k])
            assert m.target == "option"
            assert int(np.argmax(m.token_scores)) == k
            cell = _cell(seg, r, c)
            assert m.box_mass(cell) > 0.9
            x, y = m.peak()
            assert cell[0] <= x <= cell[2] and cell[1] <= y <= cell[3]


@pytest.mark.parametrize("family", FAMILIES)
def test_token_regions_match_what_the_vision_tower_sees(explainers, family):
    """Brighten the middle of one cell of the image: the token mapped to that cell changes most."""
    ex = explainers(family)
    size = SIZES[0]
    base = np.asarray(_image(size, value=120)).copy()
    layouts, e0 = ex.image_embeddings(_request(_image(size, value=120)))
    from PIL import Image

    for seg in layouts[0].segments:
        gh, gw = seg.shape
        for r, c in {(0, 0), (gh - 1, gw - 1), (gh - 1, 0)}:
            x0, y0, x1, y1 = _cell(seg, r, c, shrink=0.25)
            arr = base.copy()
            arr[max(0, int(y0)): int(np.ceil(y1)), max(0, int(x0)): int(np.ceil(x1))] = 255
            _, e1 = ex.image_embeddings(_request(Image.fromarray(arr)))
            moved = np.linalg.norm(e1 - e0, axis=1)[seg.indices].reshape(gh, gw)
            assert np.unravel_index(int(np.argmax(moved)), moved.shape) == (r, c), (seg.name, r, c)


def test_layers_and_heads_are_selectable(explainers):
    ex = explainers("qwen2_5_vl")
    req = _request(_image(SIZES[0]))
    a = ex.explain(req, "attention", answer="A", layers=[0], heads=[0])
    b = ex.explain(req, "attention", answer="A", layers=[-1], heads=[1])
    assert a.details["n_layers"] >= 2 and not np.allclose(a.token_scores, b.token_scores)
    with pytest.raises(SettingError, match="out of range"):
        ex.explain(req, "rollout", answer="A", layers=[99])
    with pytest.raises(SettingError, match="consecutive layers"):  # a repeat is no rollout either
        ex.explain(req, "rollout", answer="A", layers=[0, -2])
    assert ex.explain(req, "rollout", answer="A", layers=[1, 0]).token_scores.sum() > 0
    twice = ex.explain(req, "attention", answer="A", layers=[0, 0])  # attention may average any layers
    np.testing.assert_allclose(twice.token_scores, ex.explain(req, "attention", answer="A", layers=[0]).token_scores)
    with pytest.raises(SettingError, match="unknown saliency method"):
        ex.explain(req, "occlusion")


def test_option_contrast_and_4bit_gradients():
    from vlamb_nb.models import load_model
    from vlamb_nb.saliency.methods import Explainer

    ex = Explainer(load_model("tiny:llava", quantization="4bit"), max_side=64)
    req = _request(_image(SIZES[1]))
    a = ex.explain(req, "gradient", answer="A")
    b = ex.explain(req, "gradient", answer="B")
    for m in (a, b):
        assert m.heatmap.sum() == pytest.approx(1.0) and np.isfinite(m.token_scores).all()
    d = a.heatmap - b.heatmap  # why A rather than B: two maps of one image, each summing to 1
    assert d.sum() == pytest.approx(0.0, abs=1e-9) and np.abs(d).sum() > 0


def test_non_hf_backends_are_refused():
    from vlamb_nb.models import ScriptedModel
    from vlamb_nb.saliency.methods import Explainer

    with pytest.raises(SettingError, match="local Hugging Face model"):
        Explainer(ScriptedModel(lambda r: "A"))


def test_our_best_resolution_rule_matches_transformers():
    from transformers.image_processing_utils import select_best_resolution as theirs

    from vlamb_nb.saliency.grid import select_best_resolution as ours

    pins = [[384, 384], [384, 768], [768, 384], [768, 768], [1152, 384], [384, 1152], [1152, 1152]]
    rng = np.random.default_rng(0)
    for _ in range(200):
        size = [int(v) for v in rng.integers(20, 3000, 2)]
        assert tuple(ours(size, pins)) == tuple(theirs(size, pins))


def test_explain_items_counts_failures_and_joins_correctness(explainers):
    import pandas as pd

    from vlamb_nb.saliency_study import explain_items

    good = _request(_image((80, 60)))
    broken = _request(b"not an image")
    broken.id, broken.meta = "item-2::direct", {"item_id": "item-2"}  # the item a request asks is its meta's
    orphan = _request(_image((80, 60)))
    orphan.id, orphan.meta = "item-9::direct", {"item_id": "item-9"}
    items = pd.DataFrame({"id": ["item-1", "item-2"], "gt_xyxy": [[0, 0, 40, 30], [0, 0, 1, 1]],
                          "width": [80, 80], "height": [60, 60]})
    scored = pd.DataFrame({"item_id": ["item-1", "item-2"], "request_id": ["item-1", "item-2::direct"],
                           "text": ["B", "A"], "correct": [True, False]})
    frame, maps = explain_items(explainers("llava"), [good, broken, orphan], items, benchmark="t",
                                methods=("gradient", "attention"), scored=scored, progress=False)
    assert set(maps) == {("item-1", "gradient"), ("item-1", "attention")}
    assert maps[("item-1", "gradient")].answer.strip() == "B"  # the stored output is what gets explained
    assert frame["correct"].tolist() == [True, True] and set(frame["role"]) == {"gold"}
    fails = frame.attrs["failures"]
    assert len(fails) == 3 and {f["request_id"] for f in fails} == {"item-2::direct", "item-9::direct"}
    assert any("ImageError" in f["error"] for f in fails)


def test_explorer_computes_the_current_items_saliency_on_demand():
    import pandas as pd

    from vlamb_nb.interactive.explorer import Explorer
    from vlamb_nb.models import load_model

    reqs = {f"i{k}": _request(_image((90, 50), seed=k)) for k in range(3)}
    frame = pd.DataFrame({"item_id": list(reqs), "request_id": list(reqs), "correct": [True, False, True]})
    ex = Explorer(frame, model=load_model("tiny:idefics3"), request_for=lambda row: reqs[row["request_id"]])
    ex.state.set_filter("correct", [False])
    m = ex.saliency()
    assert m.image is reqs["i1"].images[0] or m.image.size == (90, 50)
    assert m.heatmap.sum() == pytest.approx(1.0) and not ex.widget().children[1].children[2].disabled


def test_two_images_in_one_qwen_prompt_each_get_their_own_map(explainers):
    from vlamb_nb.models import IMAGE_SLOT, Request, user_message

    a, b = _image((100, 60), seed=3), _image((50, 110), seed=4)
    req = Request("two", [user_message(IMAGE_SLOT, "left", IMAGE_SLOT, "right: which differs?")], images=[a, b])
    ex = explainers("qwen2_5_vl")
    m0 = ex.explain(req, "gradient", answer="A", image_index=0)
    m1 = ex.explain(req, "gradient", answer="A", image_index=1)
    assert m0.size == (100, 60) and m1.size == (50, 110)
    assert set(m0.layout.positions).isdisjoint(m1.layout.positions)
    assert m1.heatmap.shape[0] > m1.heatmap.shape[1] and m1.heatmap.sum() == pytest.approx(1.0)
    with pytest.raises(SettingError, match="image_index 2"):
        ex.explain(req, "gradient", answer="A", image_index=2)


@pytest.mark.parametrize("family", ["qwen2_5_vl", "idefics3"])
def test_layerwise_reduction_matches_the_full_attention_tensors(explainers, family):
    """The hooks keep only reduced per-layer weights; the result equals the pure functions on all weights."""
    import torch
    from fixtures_saliency import attention_scores

    from vlamb_nb.saliency.methods import rollout_row

    ex = explainers(family)
    req = _request(_image((100, 60), seed=5))
    att = ex.explain(req, "attention", answer="A B", layers=[0, -1], heads=[1, 2])
    rol = ex.explain(req, "rollout", answer="A B", residual=0.3)
    inputs, _ = ex.prepare(req)
    ids, _ = ex.answer_ids(inputs, "A B", 16)
    batch = ex._to_device(ex._with_answer(inputs, ids))
    n = inputs["input_ids"].shape[1]
    queries = np.arange(n - 1, n - 1 + len(ids))
    previous = ex.hf.config._attn_implementation
    ex.hf.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            full = ex.hf(**batch, output_attentions=True, use_cache=False).attentions
    finally:
        ex.hf.set_attn_implementation(previous)
    keys = att.layout.positions
    np.testing.assert_allclose(att.token_scores, attention_scores(full, queries, keys, layers=[0, -1], heads=[1, 2]),
                               rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(rol.token_scores, rollout_row(full, queries, residual=0.3)[keys],
                               rtol=1e-5, atol=1e-9)
    # the image share is the image tokens' part of the answer rows over every position
    every = np.arange(batch["input_ids"].shape[1])
    row = attention_scores(full, queries, every, layers=[0, -1], heads=[1, 2])
    assert att.image_share == pytest.approx(row[keys].sum() / row.sum(), rel=1e-5)
    roll = rollout_row(full, queries, residual=0.3)
    assert rol.image_share == pytest.approx(roll[keys].sum(), rel=1e-5) and roll.sum() == pytest.approx(1.0)


@pytest.mark.slow
def test_refadv_study_runs_the_benchmarks_own_path(tmp_path):
    """The Ref-Adv saliency study asks and scores as a real run does: the model's box format, the repair turn."""
    from vlamb_nb import saliency_study as study
    from vlamb_nb.benchmarks.refadv.parse import style_for
    from vlamb_nb.models import load_model

    model = load_model("tiny:qwen2_5_vl")
    s = study.run_study(model, "refadv", n_items=1, methods=("attention",), max_new_tokens=4,
                        store=tmp_path / "s.jsonl")
    assert set(s.scored["box_format"]) == {style_for(model.info).box_format}
    assert "retry_used" in s.scored.columns and len(s.scored) == 1
    assert s.requests[0].setting.split(":")[1] == style_for(model.info).name
