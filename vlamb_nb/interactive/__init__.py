"""Widgets for JupyterLab: the item explorer and the manual annotator (state is plain Python, so both
are testable without a browser)."""
