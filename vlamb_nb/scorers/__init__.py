"""Scorers that need a model of their own: the LLM judge (RACQUET classes, MUCAR right/wrong),
explanation scores for V-FLUTE (BERTScore, BLEURT, a labelled MiniLM substitute) and zero-shot
grounding detectors for referents (RACQUET Table 1, saliency studies)."""
