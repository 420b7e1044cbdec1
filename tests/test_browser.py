"""The notebooks as a person sees them: JupyterLab in headless Chromium, Run All, no error and no clutter.

Needs Debian's Chromium (``/usr/lib/chromium/chromium``) and playwright (the ``dev`` extra); skipped with the
reason where either is missing. The server runs on a copy of ``notebooks/`` with figures and working files in
the test's temporary folder, so the checkout is untouched.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM = Path(os.environ.get("VLAMB_CHROMIUM", "/usr/lib/chromium/chromium"))
NOTEBOOK_TIMEOUT_S = 600


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory, repo_root):
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the dev extra)")
    if not CHROMIUM.is_file():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    if shutil.which("jupyter-lab", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("JupyterLab is not installed (the lab extra)")
    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(repo_root / "notebooks", root / "notebooks")
    # render every cell (no windowing), so an error in a cell scrolled out of view is still in the page
    settings = root / "lab-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    env = dict(os.environ, VLAMB_FIGURES_DIR=str(root / "figures"), VLAMB_RUN_DIR=str(root / "runs"),
               JUPYTER_CONFIG_DIR=str(root / "jupyter-config"), JUPYTER_DATA_DIR=str(root / "jupyter-data"),
               JUPYTERLAB_SETTINGS_DIR=str(root / "lab-settings"))
    port = _free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "jupyter-lab"), f"--port={port}", "--ip=127.0.0.1", "--no-browser",
         "--allow-root", "--IdentityProvider.token=", "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
         f"--ServerApp.root_dir={root}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/status", timeout=2).read()
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail("JupyterLab did not start within 60 s")
            time.sleep(0.5)
    try:
        yield base, root
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()


def _run_all(base: str, name: str, n_code: int) -> dict:
    from playwright.sync_api import sync_playwright

    console_errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
        page.goto(f"{base}/lab/workspaces/{uuid.uuid4().hex}/tree/notebooks/{name}.ipynb?reset")
        page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=120_000)
        no = page.locator(".jp-toast-button", has_text="No")
        if no.count():
            no.first.click()
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").first.click()
        deadline = time.monotonic() + NOTEBOOK_TIMEOUT_S
        prompts = page.locator(".jp-CodeCell .jp-InputArea-prompt")
        quiet_since = None
        counts: list[int] = []
        while True:  # done when no cell is queued or running and the kernel has been idle for 5 s
            shown = [t.strip() for t in prompts.all_inner_texts()]
            counts = [int(m.group(1)) for t in shown if (m := re.fullmatch(r"\[(\d+)\]:", t))]
            idle = page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").count() > 0
            if "[*]:" not in shown and counts and idle:
                quiet_since = quiet_since or time.monotonic()
                if max(counts) >= n_code or time.monotonic() - quiet_since > 5:
                    break
            else:
                quiet_since = None
            if time.monotonic() > deadline:
                pytest.fail(f"{name}: Run All did not finish within {NOTEBOOK_TIMEOUT_S} s")
            page.wait_for_timeout(1000)
        out = {
            "executed": max(counts, default=0),
            # JupyterLab 4 renders a cell's exception as stderr text holding the traceback
            "errors": sum("Traceback" in t for t in page.locator(
                ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts())
            + page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']").count(),
            "stderr": page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
            .all_inner_texts(),
            "texts": page.locator(".jp-OutputArea-output").all_inner_texts(),
            "widget_errors": page.get_by_text("Error displaying widget").count(),
            "console": console_errors,
        }
        browser.close()
    return out


def _serialization_warnings(texts: list[str]) -> list[str]:
    return [t for t in texts if "Message serialization failed" in t or "not JSON compliant" in t]


@pytest.mark.parametrize("name", ["refadv", "vague"])
def test_run_all_in_jupyterlab_shows_no_error_and_no_clutter(lab, name):
    base, root = lab
    cells = json.loads((root / "notebooks" / f"{name}.ipynb").read_text())["cells"]
    out = _run_all(base, name, sum(c["cell_type"] == "code" for c in cells))
    assert out["errors"] == 0, f"{name}: a cell raised; outputs: {json.dumps(out['texts'][-3:])[:2000]}"
    n_code = sum(c["cell_type"] == "code" for c in cells)
    assert out["executed"] == n_code, f"{name}: Run All stopped after {out['executed']} of {n_code} cells"
    assert out["widget_errors"] == 0
    assert not _serialization_warnings(out["stderr"] + out["texts"]), "NaN reached the kernel protocol"
    # record(...) shows nothing: no recorded dicts dumped into the page, no "[recorded x]" lines
    assert not [t for t in out["texts"] if t.startswith("[recorded")]
    assert max((len(t) for t in out["texts"]), default=0) < 20_000, "an output of >20k characters buries the figures"
    assert list((root / "figures" / name).glob("*.png")), "no figure was written next to the run"


def test_the_page_check_sees_a_failing_cell(lab):
    """The error selector is not vacuous: a notebook whose second cell raises is caught."""
    import nbformat

    base, root = lab
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("1 / 0")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "notebooks" / "broken.ipynb")
    out = _run_all(base, "broken", 2)  # the failing cell gets a count too; Run All stops after it
    assert out["errors"] >= 1
