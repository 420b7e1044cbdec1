"""The notebooks as a person sees them: JupyterLab in headless Chromium, Run All, no error and no clutter.

Every notebook runs with Run All; a run fails on any error or stderr output, any "Error displaying widget" and
any JavaScript console error. The explorer (next, go to id, filter, saliency) and the annotator (label, skip,
then a new kernel: the labels resume) are clicked through. Screenshots of every notebook and widget go to
``runs/browser/`` (``$VLAMB_SCREENSHOTS`` to change it), kept as CI artefacts.

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
from collections.abc import Callable
from pathlib import Path

import pytest

from vlamb_nb.benchmarks import notebooks

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM = Path(os.environ.get("VLAMB_CHROMIUM", "/usr/lib/chromium/chromium"))
NOTEBOOK_TIMEOUT_S = 600
NOTEBOOKS = list(notebooks())  # the registry's: every paper's notebooks, then the cross-paper ones
MAX_SHOT_SCREENS = 60


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def shots(repo_root) -> Path:
    """Where screenshots go: ``runs/browser/`` of the checkout (ignored by git, kept by CI)."""
    out = Path(os.environ.get("VLAMB_SCREENSHOTS", repo_root / "runs" / "browser"))
    out.mkdir(parents=True, exist_ok=True)
    return out


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


@pytest.fixture(scope="module")
def browser(lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield b
        b.close()


def _end_sessions(base: str) -> None:
    """Shut down every kernel, as closing JupyterLab and reopening it later would."""
    for s in json.loads(urllib.request.urlopen(f"{base}/api/sessions", timeout=10).read()):
        urllib.request.urlopen(urllib.request.Request(f"{base}/api/sessions/{s['id']}", method="DELETE"), timeout=30)


def _n_code(root: Path, name: str) -> int:
    return sum(c["cell_type"] == "code" for c in json.loads((root / "notebooks" / f"{name}.ipynb").read_text())["cells"])


def _open(browser, base: str, name: str, console: list[str]):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: console.append(f"uncaught: {e}"))
    page.goto(f"{base}/lab/workspaces/{uuid.uuid4().hex}/tree/notebooks/{name}.ipynb?reset")
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=120_000)
    no = page.locator(".jp-toast-button", has_text="No")
    if no.count():
        no.first.click()
    return page


def _run_all(page, name: str, n_code: int) -> int:
    """Run All and wait until no cell is queued or running; returns the highest execution count."""

    def click_run_all() -> float:
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").first.click()
        return time.monotonic()

    clicked, tries = click_run_all(), 1
    deadline = time.monotonic() + NOTEBOOK_TIMEOUT_S
    prompts = page.locator(".jp-CodeCell .jp-InputArea-prompt")
    quiet_since = None
    counts: list[int] = []
    while True:  # done when no cell is queued or running and the kernel has been idle for 5 s
        shown = [t.strip() for t in prompts.all_inner_texts()]
        counts = [int(m.group(1)) for t in shown if (m := re.fullmatch(r"\[(\d+)\]:", t))]
        if not counts and "[*]:" not in shown and time.monotonic() - clicked > 30 and tries < 3:
            clicked, tries = click_run_all(), tries + 1  # a click that lands before the kernel is ready is lost
            continue
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
    return max(counts, default=0)


def _outputs(page) -> dict:
    stderr = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    return {
        "errors": page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']").count()
        # JupyterLab 4 renders a cell's exception as stderr text holding the traceback
        + sum("Traceback" in t for t in stderr.all_inner_texts()),
        "stderr": stderr.all_inner_texts(),
        "texts": page.locator(".jp-OutputArea-output").all_inner_texts(),
        "widget_errors": page.get_by_text("Error displaying widget").count(),
    }


def _screenshot_notebook(page, path: Path) -> int:
    """The whole notebook as one tall PNG: the scrolling panel captured screen by screen and stitched."""
    from PIL import Image

    scroller = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer"
    box = page.locator(scroller).first.bounding_box()
    total, step = page.evaluate(f"() => {{ const e = document.querySelector({scroller!r}); "
                                "return [e.scrollHeight, e.clientHeight]; }")
    tiles = []
    for k in range(min(MAX_SHOT_SCREENS, -(-total // step))):
        top = page.evaluate(f"(y) => {{ const e = document.querySelector({scroller!r}); e.scrollTop = y; "
                            "return e.scrollTop; }", k * step)
        page.wait_for_timeout(150)
        tile = path.with_suffix(f".{k}.png")
        page.screenshot(path=str(tile), clip=box)
        tiles.append((top, tile))
    width, height = int(box["width"]), int(box["height"])
    last_top = tiles[-1][0]
    sheet = Image.new("RGB", (width, last_top + height), "white")
    for top, tile in tiles:
        with Image.open(tile) as im:
            sheet.paste(im.convert("RGB").resize((width, height)), (0, top))
        tile.unlink()
    sheet.save(path)
    return len(tiles)


def _clean_run(browser, lab, shots: Path, name: str, interact: Callable | None = None) -> dict:
    """Open ``name`` in a fresh workspace and kernel, Run All, optionally click through widgets, screenshot."""
    base, root = lab
    console: list[str] = []
    page = _open(browser, base, name, console)
    try:
        n_code = _n_code(root, name)
        executed = _run_all(page, name, n_code)
        extra = interact(page) if interact else {}
        out = _outputs(page)
        _screenshot_notebook(page, shots / f"{name}.png")
    except BaseException:
        page.screenshot(path=str(shots / f"{name}-failure.png"))  # what the page showed when the check failed
        raise
    finally:
        page.close()
        _end_sessions(base)
    return {**out, "executed": executed, "n_code": n_code, "console": console, **(extra or {})}


def _assert_clean(name: str, out: dict) -> None:
    assert out["errors"] == 0, f"{name}: a cell raised; outputs: {json.dumps(out['texts'][-3:])[:2000]}"
    assert out["executed"] == out["n_code"], f"{name}: Run All stopped after {out['executed']} of {out['n_code']}"
    assert out["stderr"] == [], f"{name}: output on stderr: {json.dumps(out['stderr'])[:2000]}"
    assert out["widget_errors"] == 0, f"{name}: Error displaying widget"
    assert out["console"] == [], f"{name}: JavaScript console errors: {out['console'][:5]}"
    assert not [t for t in out["texts"] if "Message serialization failed" in t or "not JSON compliant" in t]
    # record(...) shows nothing: no recorded dicts dumped into the page, no "[recorded x]" lines
    assert not [t for t in out["texts"] if t.startswith("[recorded")]
    assert max((len(t) for t in out["texts"]), default=0) < 20_000, "an output of >20k characters buries the figures"


# -- widgets ------------------------------------------------------------------------------------------------
def _widget_shot(page, locator, path: Path) -> None:
    locator.scroll_into_view_if_needed()
    page.wait_for_timeout(200)
    page.screenshot(path=str(path))


def _explorer_counter(explorer) -> tuple[int, int, int]:
    text = explorer.locator(".widget-html-content", has_text=re.compile(r"\d+ / \d+")).first.inner_text()
    m = re.search(r"(\d+) / (\d+) \(of (\d+)\)", text)
    assert m, f"no explorer counter in {text!r}"
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def _explorer_field(explorer, field: str) -> str:
    return explorer.locator("tr", has=explorer.page.locator("th", has_text=re.compile(f"^{field}$"))).first \
        .locator("td").inner_text()


def _wait_for(page, condition: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        page.wait_for_timeout(250)


def _click_through_explorer(shots: Path):
    def interact(page) -> dict:
        tabs = page.locator(".widget-tab .lm-TabBar-tab")
        tabs.first.wait_for(timeout=30_000)
        titles = tabs.all_inner_texts()
        assert [t.split(" (")[0] for t in titles] == ["refadv", "vague", "racquet"], titles

        def explorer():
            return page.locator(".widget-vbox:visible", has=page.locator("button:visible", has_text="next ▶")).last

        pos, n, total = _explorer_counter(explorer())
        assert (pos, n) == (1, total) and n >= 2, f"explorer opens on {pos} / {n} (of {total})"
        first_id = _explorer_field(explorer(), "id")
        assert _explorer_field(explorer(), "gold") not in ("", "None"), "the gold answer is drawn but not shown"
        _widget_shot(page, explorer(), shots / "explorer-1-open.png")

        explorer().locator("button", has_text="next ▶").click()
        _wait_for(page, lambda: _explorer_counter(explorer())[0] == 2 and _explorer_field(explorer(), "id") != first_id,
                  "next to show the second item")

        box = explorer().locator(".widget-text input").first  # go to id: back to the first item
        box.fill(first_id)
        box.press("Enter")
        _wait_for(page, lambda: _explorer_counter(explorer())[0] == 1 and _explorer_field(explorer(), "id") == first_id,
                  "go to id to show the first item")

        filtered = None  # the first tab whose explorer offers a filter with two or more values
        for k, title in enumerate(titles):
            tabs.nth(k).click()
            _wait_for(page, lambda: explorer().count() > 0, f"the {title} explorer")
            select = explorer().locator(".widget-select-multiple select")
            if not select.count():
                continue
            n_k = _explorer_counter(explorer())[1]
            option = select.first.locator("option").first.inner_text()
            select.first.select_option(label=option)
            _wait_for(page, lambda n_k=n_k: _explorer_counter(explorer())[1] < n_k, f"filter {option!r} in {title}")
            filtered = (title, option, _explorer_counter(explorer())[1], n_k)
            _widget_shot(page, explorer(), shots / "explorer-2-filtered.png")
            break
        assert filtered is not None, f"no explorer in {titles} offers a filter with two values"
        assert 1 <= filtered[2] < filtered[3]

        images_before = explorer().locator("img").count()
        explorer().locator("button", has_text="saliency").click()
        _wait_for(page, lambda: explorer().locator("img").count() > images_before
                  or explorer().get_by_text("saliency failed").count() > 0, "the saliency map", 180)
        assert not explorer().get_by_text("saliency failed").count(), explorer().inner_text()[:1000]
        _widget_shot(page, explorer().locator("img").last, shots / "explorer-3-saliency.png")
        return {"explorer_items": n, "filtered": filtered}
    return interact


def _annotator(page):
    return page.locator(".widget-vbox", has=page.locator("button", has_text="Skip")).first


def _annotator_status(annotator) -> tuple[int, int]:
    m = re.search(r"(\d+)/(\d+) labelled", annotator.inner_text())
    assert m, f"no progress line in {annotator.inner_text()[:300]!r}"
    return int(m.group(1)), int(m.group(2))


def _annotator_item(annotator) -> str:
    return annotator.locator(".widget-html-content p b").first.inner_text()


def _label_and_skip(shots: Path):
    def interact(page) -> dict:
        ann = _annotator(page)
        ann.wait_for(timeout=30_000)
        done, total = _annotator_status(ann)
        assert total >= 2 and done == 0
        first = _annotator_item(ann)
        ann.locator("button", has_text=re.compile("^Stereotypical$")).click()
        ann.get_by_text(f"1/{total} labelled").wait_for(timeout=30_000)
        second = _annotator_item(ann)
        assert second != first
        ann.locator("button", has_text="Skip").click()
        deadline = time.monotonic() + 30
        while _annotator_item(ann) == second and time.monotonic() < deadline:
            page.wait_for_timeout(300)
        assert _annotator_item(ann) != second, "Skip did not move on"
        assert _annotator_status(ann) == (1, total), "Skip must not label"
        _widget_shot(page, ann, shots / "annotator-1-labelled.png")
        return {"labelled": first, "total": total}
    return interact


def _labels_resume(shots: Path):
    def interact(page) -> dict:
        ann = _annotator(page)
        ann.wait_for(timeout=30_000)
        _widget_shot(page, ann, shots / "annotator-2-resumed.png")
        return {"status": _annotator_status(ann), "item": _annotator_item(ann)}
    return interact


# -- tests --------------------------------------------------------------------------------------------------
def test_the_page_check_sees_a_failing_cell(browser, lab, shots):
    """The error selectors are not vacuous: a notebook that writes to stderr and then raises is caught."""
    import nbformat

    base, root = lab
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import sys\nprint('warning', file=sys.stderr)"),
                nbformat.v4.new_code_cell("1 / 0")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "notebooks" / "broken.ipynb")
    out = _clean_run(browser, lab, shots, "broken")
    assert out["errors"] >= 1
    assert out["stderr"] and "warning" in out["stderr"][0]
    with pytest.raises(AssertionError):
        _assert_clean("broken", out)


@pytest.mark.parametrize("name", [n for n in NOTEBOOKS if n not in ("racquet", "saliency")])
def test_run_all_in_jupyterlab_shows_no_error_and_no_clutter(browser, lab, shots, name):
    out = _clean_run(browser, lab, shots, name)
    _assert_clean(name, out)
    assert list((lab[1] / "figures" / name).rglob("*.png")), "no figure was written next to the run"


def test_saliency_explorer_responds_to_clicks(browser, lab, shots):
    out = _clean_run(browser, lab, shots, "saliency", _click_through_explorer(shots))
    _assert_clean("saliency", out)
    assert out["explorer_items"] >= 2


def test_annotator_labels_skips_and_resumes_in_a_new_kernel(browser, lab, shots):
    first = _clean_run(browser, lab, shots, "racquet", _label_and_skip(shots))
    _assert_clean("racquet", first)
    # the labels are on disk in the run folder, not in the kernel: a new kernel (sessions ended) resumes them
    files = list((lab[1] / "runs").rglob("racquet-bias-labels.csv"))
    assert len(files) == 1 and first["labelled"] in files[0].read_text()
    again = _clean_run(browser, lab, shots, "racquet", _labels_resume(shots))
    _assert_clean("racquet", again)
    assert again["status"] == (1, first["total"])
    assert again["item"] != first["labelled"], "the labelled response is offered again"
