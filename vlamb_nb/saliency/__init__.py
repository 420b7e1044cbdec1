"""Saliency: where a VLM looks in the image when it answers.

- :mod:`.grid` maps image tokens to image regions for each model family (token positions);
- :mod:`.methods` computes maps (attention, rollout, gradient x input) with :class:`~.methods.Explainer`;
- :mod:`.analysis` turns maps into numbers and pictures (mass in boxes, pointing game, overlays);
- :mod:`vlamb_nb.saliency_study` (above the benchmarks, so outside this package) runs one benchmark's study
  end to end (answers → maps → box mass).
- :mod:`.sanity` checks that maps depend on the model and the image at all (Adebayo et al. 2018).

Nothing heavy is imported here; torch loads only when an explainer is built.
"""
