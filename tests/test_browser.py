"""The notebooks as a person sees them: JupyterLab in headless Chromium, Run All, no error and no clutter.

Every notebook runs with Run All; a run fails on any error or stderr output, any "Error displaying widget" and
any JavaScript console error. The explorer (next, go to id, filter, saliency) and the annotator (label, skip,
then a new kernel: the labels resume) are clicked through. The pages a run and a comparison write
(``report.html``, ``comparison.html``) are opened from disk at a laptop's 1366x768: no console error, no request
beyond the file, no broken image, nothing wider than the window, every figure of the run on the page in its
paper's section. Screenshots of every notebook, widget and page go to ``runs/browser/`` (``$VLAMB_SCREENSHOTS``
to change it), kept as CI artefacts.

Needs Debian's Chromium (``/usr/lib/chromium/chromium``) and playwright (the ``dev`` extra); skipped with the
reason where either is missing. The server runs on a copy of ``notebooks/`` with figures and working files in
the test's temporary folder, so the checkout is untouched.

A laptop is rarely idle, so every step waits on a state JupyterLab shows rather than on a fixed delay: the
kernel started on the server (its REST API) and connected and idle in the page (the status bar's kernel
item, not the toolbar's execution indicator, which reads "idle" before any kernel exists), the "Select
Kernel" dialog accepted with the Python kernel where it shows, Run All seen to start (a prompt turns ``[*]``
or a number; if not, it is given again, then through the command palette), and each widget rendered before it
is clicked. Timeouts are generous outer bounds whose message names the state that never came.
``make test-busy`` runs these tests with every core kept busy by other processes.
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

import numpy as np
import pytest

from vlamb_nb.benchmarks import notebooks

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM = Path(os.environ.get("VLAMB_CHROMIUM", "/usr/lib/chromium/chromium"))
# outer bounds only: each wait ends as soon as its state shows; these catch a state that never comes
SERVER_TIMEOUT_S = 180  # JupyterLab answering /api/status after its start
NOTEBOOK_TIMEOUT_S = 600  # Run All, from the first prompt turning [*] to every cell done
KERNEL_TIMEOUT_S = 300  # a notebook's kernel started, connected and idle after the page opens
START_TIMEOUT_S = 60  # Run All given -> a prompt turns [*] (or a number); then it is given again
WIDGET_TIMEOUT_S = 180  # a widget rendered, or its answer to a click shown
SALIENCY_TIMEOUT_S = 600  # the explorer's saliency map computed on a busy CPU
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
    # no autosave: a run longer than its interval would store outputs in the copy, and the annotator's reopened
    # notebook would then show the previous kernel's widgets (and their errors) however the test goes
    docmanager = root / "lab-settings" / "@jupyterlab" / "docmanager-extension"
    docmanager.mkdir(parents=True)
    (docmanager / "plugin.jupyterlab-settings").write_text(json.dumps({"autosave": False}))
    env = dict(os.environ, VLAMB_FIGURES_DIR=str(root / "figures"), VLAMB_RUN_DIR=str(root / "runs"),
               JUPYTER_CONFIG_DIR=str(root / "jupyter-config"), JUPYTER_DATA_DIR=str(root / "jupyter-data"),
               JUPYTERLAB_SETTINGS_DIR=str(root / "lab-settings"))
    port = _free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "jupyter-lab"), f"--port={port}", "--ip=127.0.0.1", "--no-browser",
         "--allow-root", "--IdentityProvider.token=", "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
         f"--ServerApp.root_dir={root}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SERVER_TIMEOUT_S
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/status", timeout=10).read()
            break
        except OSError:
            if server.poll() is not None:
                pytest.fail(f"JupyterLab exited with {server.returncode} before answering /api/status")
            if time.monotonic() > deadline:
                server.kill()
                pytest.fail(f"JupyterLab did not answer /api/status within {SERVER_TIMEOUT_S} s")
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
def chromium():
    """Headless Chromium on its own: the pages ``reproduce`` and ``compare`` write need no server."""
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the dev extra)")
    if not CHROMIUM.is_file():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def browser(lab, chromium):
    return chromium


def _stop_kernels(base: str) -> None:
    """Shut down every kernel, as closing JupyterLab and reopening it later would."""
    for s in _kernels_by_notebook(base):
        urllib.request.urlopen(urllib.request.Request(f"{base}/api/sessions/{s['id']}", method="DELETE"),
                               timeout=WIDGET_TIMEOUT_S)


def _kernels_by_notebook(base: str) -> list[dict]:
    return json.loads(urllib.request.urlopen(f"{base}/api/sessions", timeout=60).read())


def _server_kernel_state(base: str, name: str) -> str:
    """The server's view of the notebook's kernel: its ``execution_state``, or "no kernel" before one is started."""
    path = f"notebooks/{name}.ipynb"
    states = [s["kernel"]["execution_state"] for s in _kernels_by_notebook(base) if s["path"] == path and s.get("kernel")]
    return states[-1] if states else "no kernel"


def _n_code(root: Path, name: str) -> int:
    return sum(c["cell_type"] == "code" for c in json.loads((root / "notebooks" / f"{name}.ipynb").read_text())["cells"])


# what the page shows, read in one go so the parts agree: the status bar's kernel item ("Python 3 (ipykernel) |
# Idle" once the kernel is connected and idle; the toolbar's execution indicator reads "idle" before any kernel
# exists, so it is no readiness signal), open dialogs, and the code cells' prompts
_PAGE_STATE_JS = """() => ({
  kernel: (document.querySelector(".jp-StatusBar-TextItem[title^='Change kernel for']") || {}).textContent || "",
  dialogs: [...document.querySelectorAll(".jp-Dialog .jp-Dialog-header")].map(e => e.textContent.trim()),
  prompts: [...document.querySelectorAll(".jp-CodeCell .jp-InputArea-prompt")].map(e => e.textContent.trim()),
})"""


class _Page:
    """One notebook's tab and what it went through: waits poll its state and accept "Select Kernel" on the way."""

    def __init__(self, page, base: str, name: str, n_code: int) -> None:
        self.page, self.base, self.name, self.n_code = page, base, name, n_code
        self.kernel_dialogs = 0  # "Select Kernel" dialogs accepted
        self.run_all_tries: list[str] = []  # how Run All was given, in order

    def state(self) -> dict:
        st = self.page.evaluate(_PAGE_STATE_JS)
        st["server"] = _server_kernel_state(self.base, self.name)
        return st

    def kernel_idle(self, st: dict) -> bool:
        """Idle in both views: the server's kernel and the page's connection to it."""
        return (st["server"] == "idle" and st["kernel"].endswith(" | Idle")
                and not st["kernel"].startswith("No Kernel"))

    def accept_kernel_dialog(self, st: dict) -> bool:
        """JupyterLab asks for a kernel when it could not start one itself (e.g. a cell run before its own start
        had finished, or a kernel the notebook names is not installed): take the Python 3 kernel."""
        if "Select Kernel" not in st["dialogs"]:
            return False
        dialog = self.page.locator(".jp-Dialog", has=self.page.locator(".jp-Dialog-header", has_text="Select Kernel"))
        select = dialog.locator("select").first
        offered = select.locator("option").all_inner_texts()
        python = [t for t in offered if t.startswith("Python 3")]
        if not python:
            pytest.fail(f"{self.name}: the Select Kernel dialog offers no Python 3 kernel: {offered}")
        select.select_option(label=python[0])
        dialog.locator(".jp-Dialog-button.jp-mod-accept").click()
        dialog.wait_for(state="detached", timeout=WIDGET_TIMEOUT_S * 1000)
        self.kernel_dialogs += 1
        return True

    def wait(self, what: str, condition: Callable[[dict], bool], timeout_s: float, *, fail: bool = True) -> dict | None:
        """Poll until ``condition(state)`` holds; past ``timeout_s`` fail naming ``what`` (or return None)."""
        deadline = time.monotonic() + timeout_s
        while True:
            st = self.state()
            if self.accept_kernel_dialog(st):
                continue
            if condition(st):
                return st
            if time.monotonic() > deadline:
                if not fail:
                    return None
                shown = sorted(set(st["prompts"]), key=st["prompts"].index)
                pytest.fail(f"{self.name}: {what} did not happen within {timeout_s:.0f} s; the page's kernel: "
                            f"{st['kernel']!r}, the server's: {st['server']!r}, dialogs: {st['dialogs']}, "
                            f"prompts seen: {shown[:12]}")
            self.page.wait_for_timeout(500)

    def wait_kernel_ready(self) -> None:
        """Every code cell rendered and the kernel started, connected and idle."""
        self.wait("the kernel to start and be idle with every cell shown",
                  lambda st: len(st["prompts"]) == self.n_code and self.kernel_idle(st), KERNEL_TIMEOUT_S)

    def _menu_run_all(self) -> None:
        self.page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        self.page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").first.click()

    def _palette_run_all(self) -> None:
        self.page.keyboard.press("Escape")  # close a menu left open by a lost click
        self.page.keyboard.press("Control+Shift+C")
        box = self.page.locator(".lm-CommandPalette-input")
        box.wait_for(timeout=WIDGET_TIMEOUT_S * 1000)
        box.fill("Run All Cells")
        self.page.locator(".lm-CommandPalette-item[data-command='notebook:run-all-cells']").first.click()

    def run_all(self) -> int:
        """Run All once the kernel is idle, see it start, wait until no cell is queued or running.

        Returns the highest execution count. A Run All that has not started within ``START_TIMEOUT_S`` (no
        prompt changed) is given again from the menu, then from the command palette; waiting that long first
        keeps a slow page from having the notebook queued twice.
        """
        self.wait_kernel_ready()
        before = self.state()["prompts"]

        def started(st: dict) -> bool:
            return "[*]:" in st["prompts"] or st["prompts"] != before

        for how, give in [("menu", self._menu_run_all), ("menu", self._menu_run_all),
                          ("command palette", self._palette_run_all)]:
            self.run_all_tries.append(how)
            give()
            if self.wait(f"Run All (from the {how}) to start", started, START_TIMEOUT_S, fail=False) is not None:
                break
            self.wait_kernel_ready()  # e.g. a kernel chosen in the dialog is still starting
        else:
            pytest.fail(f"{self.name}: Run All did not start, given {len(self.run_all_tries)} times "
                        f"({', '.join(self.run_all_tries)}); prompts: {self.state()['prompts'][:5]}")

        def finished(st: dict) -> bool:
            return "[*]:" not in st["prompts"] and self.kernel_idle(st)

        what = "Run All to finish (no cell queued or running, the kernel idle)"
        self.wait(what, finished, NOTEBOOK_TIMEOUT_S)
        self.page.wait_for_timeout(2000)  # it must hold: idle for a moment between two messages is not the end
        st = self.wait(what, finished, NOTEBOOK_TIMEOUT_S)
        counts = [int(m.group(1)) for t in st["prompts"] if (m := re.fullmatch(r"\[(\d+)\]:", t))]
        return max(counts, default=0)


def _open(browser, base: str, root: Path, name: str, console: list[str]) -> _Page:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(WIDGET_TIMEOUT_S * 1000)  # clicks wait for their element this long on a busy CPU
    page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: console.append(f"uncaught: {e}"))
    page.goto(f"{base}/lab/workspaces/{uuid.uuid4().hex}/tree/notebooks/{name}.ipynb?reset")
    tab = _Page(page, base, name, _n_code(root, name))
    tab.wait_kernel_ready()
    no = page.locator(".jp-toast-button", has_text="No")
    if no.count():
        no.first.click()
    return tab


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
    tab = _open(browser, base, root, name, console)
    page = tab.page
    try:
        executed = tab.run_all()
        extra = interact(tab) if interact else {}
        out = _outputs(page)
        _screenshot_notebook(page, shots / f"{name}.png")
    except BaseException:
        page.screenshot(path=str(shots / f"{name}-failure.png"))  # what the page showed when the check failed
        raise
    finally:
        page.close()
        _stop_kernels(base)
    return {**out, "executed": executed, "n_code": tab.n_code, "console": console, "kernel_dialogs": tab.kernel_dialogs,
            "run_all_tries": tab.run_all_tries, **(extra or {})}


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


def _wait_for(page, condition: Callable[[], bool], what: str, timeout_s: float = WIDGET_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {timeout_s:.0f} s")
        page.wait_for_timeout(250)


def _shown(locator, what: str, timeout_s: float = WIDGET_TIMEOUT_S) -> None:
    """Wait until the widget ``locator`` is rendered and visible, failing with ``what`` it is."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        locator.wait_for(state="visible", timeout=timeout_s * 1000)
    except PlaywrightTimeout:
        pytest.fail(f"{what} was not rendered within {timeout_s:.0f} s after Run All finished")


def _click_through_explorer(shots: Path):
    def interact(tab: _Page) -> dict:
        page = tab.page
        tabs = page.locator(".widget-tab .lm-TabBar-tab")
        _shown(tabs.first, "the explorer's tabs")
        titles = tabs.all_inner_texts()
        assert [t.split(" (")[0] for t in titles] == ["refadv", "vague", "racquet"], titles

        def explorer():
            return page.locator(".widget-vbox:visible", has=page.locator("button:visible", has_text="next ▶")).last

        _shown(explorer(), "the refadv explorer (its next ▶ button)")
        _shown(explorer().locator(".widget-html-content", has_text=re.compile(r"\d+ / \d+")).first,
               "the explorer's item counter")
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
                  or explorer().get_by_text("saliency failed").count() > 0, "the saliency map", SALIENCY_TIMEOUT_S)
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
    def interact(tab: _Page) -> dict:
        page = tab.page
        ann = _annotator(page)
        _shown(ann.locator("button", has_text="Skip").first, "the annotator's Skip button")
        _shown(ann.get_by_text(re.compile(r"\d+/\d+ labelled")).first, "the annotator's progress line")
        done, total = _annotator_status(ann)
        assert total >= 2 and done == 0
        first = _annotator_item(ann)
        ann.locator("button", has_text=re.compile("^Stereotypical$")).click()
        _shown(ann.get_by_text(f"1/{total} labelled"), f"'1/{total} labelled' after labelling the first response")
        second = _annotator_item(ann)
        assert second != first
        ann.locator("button", has_text="Skip").click()
        _wait_for(page, lambda: _annotator_item(ann) != second, "Skip moving on to the next response")
        assert _annotator_status(ann) == (1, total), "Skip must not label"
        _widget_shot(page, ann, shots / "annotator-1-labelled.png")
        return {"labelled": first, "total": total}
    return interact


def _labels_resume(shots: Path):
    def interact(tab: _Page) -> dict:
        page = tab.page
        ann = _annotator(page)
        _shown(ann.get_by_text(re.compile(r"\d+/\d+ labelled")).first, "the reopened annotator's progress line")
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


def test_select_kernel_is_answered_and_a_lost_run_all_is_given_again(browser, lab, shots, monkeypatch):
    """The waits' two recoveries work: a notebook naming a kernel that is not installed opens on the "Select
    Kernel" dialog, which is answered with Python 3; Run All clicks that change nothing (as a click lost on a
    busy page) are followed by Run All from the command palette, which runs every cell once."""
    import nbformat

    base, root = lab
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import sys\nsys.executable"), nbformat.v4.new_code_cell("6 * 7")]
    nb.metadata["kernelspec"] = {"name": "no-such-kernel", "display_name": "Gone", "language": "python"}
    nbformat.write(nb, root / "notebooks" / "orphan.ipynb")
    monkeypatch.setattr(_Page, "_menu_run_all", lambda self: None)
    monkeypatch.setattr(sys.modules[__name__], "START_TIMEOUT_S", 5)
    out = _clean_run(browser, lab, shots, "orphan")
    assert out["kernel_dialogs"] == 1
    assert out["run_all_tries"] == ["menu", "menu", "command palette"]
    _assert_clean("orphan", out)
    assert "42" in out["texts"]


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
    # the labels are on disk in the run folder, not in the kernel: a new kernel (the old ones stopped) resumes them
    files = list((lab[1] / "runs").rglob("racquet-bias-labels.csv"))
    assert len(files) == 1 and first["labelled"] in files[0].read_text()
    again = _clean_run(browser, lab, shots, "racquet", _labels_resume(shots))
    _assert_clean("racquet", again)
    assert again["status"] == (1, first["total"])
    assert again["item"] != first["labelled"], "the labelled response is offered again"


# -- the pages reproduce and compare write ------------------------------------------------------------------------
LAPTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}
#: axe-core from the registry (``npm ci --prefix tests``, as ``.ci/run`` does): injected into the pages
AXE = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"


def _axe_serious(page) -> list[str]:
    """axe-core's serious and critical violations on the open page, one line each (rule, impact, count, first
    element); skips the test with the reason where axe-core is not installed."""
    if not AXE.is_file():
        pytest.skip(f"axe-core is not installed ({AXE}): run `npm ci --prefix tests`")
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ["violations"]});
        return r.violations.filter(v => v.impact === "serious" || v.impact === "critical")
            .map(v => `${v.id} (${v.impact}) x${v.nodes.length}: ${v.nodes[0].target.join(" ")}`);
    }""")
    return list(found)


def _overflow_at(chromium, path: Path, viewport: dict) -> int:
    """How many px the page at ``path`` is wider than ``viewport`` (0: no sideways scroll)."""
    page = chromium.new_page(viewport=viewport)
    try:
        page.goto(path.as_uri(), wait_until="load")
        return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))
    finally:
        page.close()


def _open_file_page(chromium, path: Path) -> tuple:
    """``path`` opened from disk at a laptop's size; what the page logged, asked for and showed in dialogs."""
    page = chromium.new_page(viewport=LAPTOP)
    seen: dict[str, list[str]] = {"console": [], "requests": [], "dialogs": []}
    page.on("console", lambda m: seen["console"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen["console"].append(str(e)))
    page.on("request", lambda r: None if r.url.startswith(("file:", "data:")) else seen["requests"].append(r.url))
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.goto(path.as_uri(), wait_until="load")
    return page, seen


def _page_state(page) -> dict:
    return page.evaluate("""() => ({
        images: Array.from(document.images, i => ({file: i.dataset.file, ok: i.complete && i.naturalWidth > 0})),
        files: Array.from(document.querySelectorAll("[data-file]"), e => ({file: e.dataset.file,
                section: e.closest("section") ? e.closest("section").id : null})),
        overflow: document.documentElement.scrollWidth - window.innerWidth,
    })""")


def _shot_at(page, anchor: str | None, path: Path) -> None:
    """A window-sized screenshot at ``anchor`` (a tall page as a whole would come out blank)."""
    if anchor:
        page.evaluate("(a) => document.querySelector(a).scrollIntoView()", anchor)
    page.wait_for_timeout(150)
    page.screenshot(path=str(path))


def _assert_page_clean(name: str, seen: dict, state: dict) -> None:
    assert seen["console"] == [], f"{name}: console errors {seen['console'][:5]}"
    assert seen["requests"] == [], f"{name}: asked the network for {seen['requests'][:5]}"
    assert seen["dialogs"] == [], f"{name}: a script ran from the page's text: {seen['dialogs']}"
    assert state["images"] and all(i["ok"] for i in state["images"]), \
        f"{name}: broken images {[i['file'] for i in state['images'] if not i['ok']]}"
    assert state["overflow"] <= 0, f"{name}: {state['overflow']} px wider than a 1366 px window"


def test_the_report_page_of_an_offline_reproduction_shows_every_figure_in_its_section(chromium, notebook_runs,
                                                                                      shots):
    repro = notebook_runs.reproduction(0)
    assert repro.failed == 0
    path = repro.run / "report.html"
    page, seen = _open_file_page(chromium, path)
    try:
        state = _page_state(page)
        _shot_at(page, None, shots / "report-html.png")
        _shot_at(page, "#card", shots / "report-html-card.png")
        _shot_at(page, "#nb-refadv", shots / "report-html-refadv.png")
        violations = _axe_serious(page) if AXE.is_file() else []
    finally:
        page.close()
    _assert_page_clean("report.html", seen, state)
    assert violations == [], f"report.html: axe-core finds {violations}"
    assert _overflow_at(chromium, path, PHONE) <= 0, "report.html scrolls sideways at 390 px"
    figures = repro.root / "figures"
    on_disk = sorted(p.relative_to(figures).as_posix() for p in figures.rglob("*") if p.suffix in (".png", ".pdf"))
    shown = sorted(f["file"] for f in state["files"])
    assert shown == on_disk  # every figure file of the run, each once
    for f in state["files"]:
        folder = f["file"].split("/", 1)[0]
        assert f["section"] == ("card" if folder == "card" else f"nb-{folder}"), f
    assert len(state["images"]) == len([f for f in on_disk if f.endswith(".png")])


def test_the_comparison_page_loads_clean_sorts_and_shows_names_as_text(chromium, tmp_path, shots):
    from fixtures_pages import official_runs

    from vlamb_nb.cli import main

    hostile = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    files = official_runs(tmp_path / "runs", {hostile: set(range(0, 30)), "通义千问-VL-72B": set(range(10, 40)),
                                              "Qwen2.5-VL-7B": set(range(0, 40, 2))})
    assert main(["compare", *map(str, files), "--n-resamples", "200", "--out", str(tmp_path / "cmp")]) == 0
    path = tmp_path / "cmp" / "comparison.html"
    page, seen = _open_file_page(chromium, path)
    try:
        state = _page_state(page)
        names = page.locator("#models td:first-child").all_inner_texts()
        header = page.locator("#values th", has_text="value [95% CI]")
        header.click()
        ascending = [float(v) for v in page.locator("#values td[data-v]:nth-child(6)").evaluate_all(
            "cells => cells.map(c => c.dataset.v)")]
        header.click()
        descending = [float(v) for v in page.locator("#values td[data-v]:nth-child(6)").evaluate_all(
            "cells => cells.map(c => c.dataset.v)")]
        n_values = page.locator("#values tbody tr").count()
        page.screenshot(path=str(shots / "comparison-html.png"), full_page=True)
        violations = _axe_serious(page) if AXE.is_file() else []
    finally:
        page.close()
    _assert_page_clean("comparison.html", seen, state)
    assert violations == [], f"comparison.html: axe-core finds {violations}"
    assert _overflow_at(chromium, path, PHONE) <= 0, "comparison.html scrolls sideways at 390 px"
    assert [f["file"] for f in state["files"]] == ["comparison.png", "comparison.pdf"]
    assert hostile in names and "通义千问-VL-72B" in names  # shown as written, never run
    assert ascending == sorted(ascending) and descending == sorted(ascending, reverse=True)
    assert len(ascending) == n_values and n_values > 3 and n_values % 3 == 0  # 3 models on the whole set and each slice


@pytest.fixture
def awkward_page(tmp_path):
    """A run's page with what made pages hard to use: a 20,000-character value, snake_case tables, nested counts,
    control bytes, a figure linked in from outside the run (``fixtures_pages.awkward_run``)."""
    from fixtures_pages import awkward_run

    from vlamb_nb import report_card
    from vlamb_nb.report_html import write_run_page

    run = tmp_path / "run"
    run.mkdir()
    results = awkward_run(run, run / "figures", tmp_path / "outside")
    return write_run_page(run, results, report_card.build(results, papers=["vague"]), figures=run / "figures",
                          params={"note": "y" * 5000})


def test_a_page_passes_axe_and_works_by_keyboard_at_a_phone_width(chromium, awkward_page, shots):
    if not AXE.is_file():
        pytest.skip(f"axe-core is not installed ({AXE}): run `npm ci --prefix tests`")
    page, seen = _open_file_page(chromium, awkward_page)
    try:
        violations = _axe_serious(page)
        # sort by keyboard: Tab to a header's button, Enter sorts ascending, Enter again descending
        table = page.locator("#nb-vague-negation ~ div.scroll table").first
        table.evaluate("""t => Array.from(t.querySelectorAll("th button.sort"))
            .find(b => b.textContent.trim() === "value").focus()""")
        page.keyboard.press("Enter")
        sort = page.evaluate("() => document.activeElement.closest('th').getAttribute('aria-sort')")
        values = [float(v) for v in table.locator("td[data-v]:nth-child(6)").evaluate_all(
            "cells => cells.map(c => c.dataset.v)")]
        page.keyboard.press("Enter")
        again = page.evaluate("() => document.activeElement.closest('th').getAttribute('aria-sort')")
        # a figure opens full-size with Enter, and Escape closes it
        zoom = page.locator("button.zoom").first
        zoom.focus()
        page.keyboard.press("Enter")
        opened = page.evaluate("""() => { const d = document.querySelector("dialog.zoomed");
            const i = d && d.querySelector("img"); return {open: !!(d && d.open), width: i ? i.naturalWidth : 0,
            shown: i ? i.getBoundingClientRect().width : 0}; }""")
        page.keyboard.press("Escape")
        closed = page.evaluate("() => !document.querySelector('dialog.zoomed').open")
        # the dialog's close event (a queued task) hands focus back to the button that opened it;
        # wait for it, or it lands after the next focus() and Enter reopens the figure
        page.wait_for_function("() => document.activeElement && document.activeElement.matches('button.zoom')",
                               timeout=10_000)
        facts = page.locator("details.run-facts")
        facts.locator("summary").focus()
        page.keyboard.press("Enter")
        facts_open = facts.evaluate("d => d.open")
    finally:
        page.close()
    assert seen["console"] == [] and seen["requests"] == [], seen
    assert violations == [], f"axe-core finds {violations}"
    assert sort == "ascending" and values == sorted(values) and again == "descending"
    assert opened["open"] and opened["width"] == 40 and opened["shown"] == 40 and closed  # its own size
    assert facts_open  # the run's facts open from their one summary line
    phone = chromium.new_page(viewport=PHONE)
    try:
        phone.goto(awkward_page.as_uri(), wait_until="load")
        phone.locator("details.run-facts summary").click()  # the run's facts open: still no sideways scroll
        wide = phone.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        boxes = phone.evaluate("""() => Array.from(document.querySelectorAll("div.scroll"), b =>
            b.scrollWidth > b.clientWidth ? b.tabIndex : 0)""")
        phone.screenshot(path=str(shots / "report-html-390px.png"))
    finally:
        phone.close()
    assert wide <= 0, f"{wide} px of sideways scroll at 390 px (a 20,000-character value must wrap)"
    assert all(t == 0 for t in boxes)  # a box that scrolls sideways is reachable by keyboard


# -- the task a researcher brings to comparison.html, on the stand-in Ref-Adv release ------------------------------
#: released Ref-Adv runs of the stand-in release (``release_fixtures``: the real files where the checkout has
#: them, generated ones in the official row format else), compared with every item's image from its parquet
STAND_IN_RUNS = ("qwen25a72b_direct", "qwen3a8bthinking_direct", "qwen25a7b_direct", "qwen3a4b_direct")
STRONG_A, STRONG_B = "Qwen2.5-VL-72B-Instruct", "Qwen3-VL-8B-Thinking"


@pytest.fixture(scope="module")
def refadv_comparison(tmp_path_factory, shared_data):
    """``vlamb-nb compare`` of released Ref-Adv runs with the items' images given (``--source``: the stand-in
    release's parquet, an image for each of the 1,142 rows); the hits and negation flags of each run, by row."""
    import release_fixtures as rf

    from vlamb_nb.benchmarks.refadv.score import read_official_predictions
    from vlamb_nb.cli import main

    root = tmp_path_factory.mktemp("refadv-stand-in")
    parquet = root / "ref-adv-s.parquet"
    parquet.write_bytes(rf.refadv_repo()["data/train-00000-of-00001.parquet"])
    released = rf.refadv_runs()
    (root / "runs").mkdir()
    files = []
    for name in STAND_IN_RUNS:
        files.append(root / "runs" / f"{name}_predictions.jsonl")
        files[-1].write_bytes(released[f"{name}_predictions.jsonl"])
    assert main(["compare", *map(str, files), "--source", f"refadv={parquet}", "--n-resamples", "200",
                 "--out", str(root / "cmp")]) == 0
    hits, negated = {}, None
    for f in files:
        df = read_official_predictions(f).set_index("row_idx")
        hits[str(df["model"].iloc[0]).replace("Qwen/", "")] = df["official_hit"].astype(bool)
        negated = df["use_negation"].astype(bool)
    values = json.loads((root / "cmp" / "comparison.json").read_text(encoding="utf-8"))["values"]
    return {"page": root / "cmp" / "comparison.html", "hits": hits, "negated": negated, "values": values}


def _neg_column(page) -> int:
    heads = page.locator("#slices table").first.locator("thead th").all_inner_texts()
    return next(i for i, h in enumerate(heads) if h.strip().startswith("Neg "))


def test_the_researchers_task_is_done_on_comparison_html_alone_by_clicks_and_a_link(chromium, refadv_comparison,
                                                                                     shots):
    """Which models fail most on negation, where do Qwen2.5-VL-72B and Qwen3-VL-8B disagree there, three items
    where the stronger one is wrong and why, and a link that reopens that view: each step a click on
    ``comparison.html``, every number checked against a count by hand from the released files."""
    hits, negated, values = refadv_comparison["hits"], refadv_comparison["negated"], refadv_comparison["values"]
    page, seen = _open_file_page(chromium, refadv_comparison["page"])
    try:
        assert "#" not in page.url  # the page keeps its address until the reader chooses a view
        # 1. negation accuracy per model with its interval: the per-slice table, sorted by its Neg column
        col = _neg_column(page)
        table = page.locator("#slices table").first
        table.locator("thead th").nth(col).locator("button").click()
        shown = {r.split("\t")[0]: r.split("\t")[col] for r in table.locator("tbody tr").all_inner_texts()}
        neg = {v["model"]: v for v in values if v["slice"] == "Neg"}
        assert set(shown) == set(hits)
        for model, text in shown.items():
            want = 100 * hits[model][negated].mean()
            assert neg[model]["value"] == pytest.approx(want)
            assert text == f"{want:.1f} [{neg[model]['ci_low']:.1f}, {neg[model]['ci_high']:.1f}]"
        order = [r.split("\t")[0] for r in table.locator("tbody tr").all_inner_texts()]
        assert order == sorted(hits, key=lambda m: hits[m][negated].mean())  # who fails most on negation first
        _shot_at(page, "#slices", shots / "comparison-refadv-slices.png")
        # 2. where the two disagree on negation: the pair's row shows McNemar's split; its difference opens exactly
        # those items, and each side of the split is one click
        pair = page.locator("#pairs tbody tr").filter(has_text=STRONG_A).filter(has_text=STRONG_B).filter(
            has=page.locator("td", has_text=re.compile(r"^Neg$")))
        assert pair.count() == 1
        a, b = (hits[m][negated] for m in (STRONG_A, STRONG_B))
        only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
        assert f"{only_a} / {only_b}" in pair.inner_text()
        pair.locator("a.it-link").click()
        count = page.locator("#items .it-count")
        assert count.inner_text().startswith(f"{only_a + only_b} of 1142 items")
        chip = page.locator("#items .it-group").inner_text()
        assert f"{only_a} only {STRONG_A} right" in chip and f"{only_b} only {STRONG_B} right" in chip
        stronger, weaker = (STRONG_A, STRONG_B) if a.mean() > b.mean() else (STRONG_B, STRONG_A)
        wrong_rows = negated & hits[weaker] & ~hits[stronger]
        page.locator("#items .it-split button", has_text=f"only {weaker} right").click()
        assert count.inner_text().startswith(f"{int(wrong_rows.sum())} of 1142 items")
        listed = page.locator("#items tbody button.it-open").all_inner_texts()
        assert {int(k) for k in listed} == set(wrong_rows[wrong_rows].index)
        # 3. three items where the stronger model is wrong: each opens with its image, every box, IoU and the
        # parse error
        data = json.loads(page.locator("#items .it-data").text_content())
        for k in range(3):
            page.locator("#items tbody button.it-open").nth(k).click()
            dialog = page.locator("#items dialog[open]")
            item = int(dialog.locator("h4").inner_text().removeprefix("Item "))
            assert item in set(wrong_rows[wrong_rows].index)
            row = next(r for r in data["rows"] if r["k"] == str(item))
            boxes = 1 + sum(1 for mv in row["m"] if mv and mv["pb"])
            assert dialog.locator("svg image").count() == 1 and dialog.locator("svg rect").count() == boxes >= 2
            answers = dialog.locator(".it-answers")
            heads = answers.locator("thead th").all_inner_texts()
            assert "IoU" in heads and "parse error" in heads and "reply" in heads
            cells = dict(zip(heads, answers.locator("tbody tr").filter(
                has=page.locator("th", has_text=stronger)).locator("th, td").all_inner_texts(), strict=True))
            assert cells["outcome"] == "wrong" and float(cells["IoU"]) < 0.5 and cells["reply"] == "not released"
            assert dialog.locator(".it-prompt").inner_text().count(row["q"][:40]) == 1
            if k == 0:
                _shot_at(page, None, shots / "comparison-refadv-item.png")
            if k < 2:
                page.keyboard.press("Escape")
        # 4. a link that reopens that view: the same items, the same item open
        page.locator("#items dialog[open] .it-copy").click()
        link = page.locator("#items dialog[open] .it-share").input_value()
        assert link.startswith(refadv_comparison["page"].as_uri() + "#items?")
        opened = page.locator("#items dialog[open] h4").inner_text()
        page.keyboard.press("Escape")
        state = _page_state(page)
        violations = _axe_serious(page) if AXE.is_file() else []
    finally:
        page.close()
    _assert_page_clean("comparison.html", seen, state)
    assert violations == [], f"comparison.html: axe-core finds {violations}"
    again = chromium.new_page(viewport=LAPTOP)
    try:
        again.goto(link, wait_until="load")
        again.wait_for_selector("#items dialog[open]")
        assert again.locator("#items dialog[open] h4").inner_text() == opened
        assert again.locator("#items .it-count").inner_text().startswith(f"{int(wrong_rows.sum())} of 1142 items")
        assert again.locator("#items .it-right").input_value() != "" and again.locator("#items .it-wrong") \
            .input_value() != ""
    finally:
        again.close()
    assert _overflow_at(chromium, refadv_comparison["page"], PHONE) <= 0


def test_a_comparisons_outcome_filters_are_each_models_own_and_disagree_reads_outcomes(chromium,
                                                                                       refadv_comparison):
    """"every model wrong", "only X right" and "models disagree" count what each model got right on its own
    rows (never parse text: every box differs), against counts by hand; the filtered items download as CSV."""
    hits = refadv_comparison["hits"]
    frame = np.column_stack([hits[m].to_numpy() for m in hits])
    page, seen = _open_file_page(chromium, refadv_comparison["page"])
    try:
        names = json.loads(page.locator("#items .it-data").text_content())["models"]
        order = [list(hits).index(m) for m in names]
        f = frame[:, order]
        count = page.locator("#items .it-count")

        def n_shown() -> int:
            return int(count.inner_text().split(" of ", 1)[0])

        page.locator("#items .it-outcome").select_option("allwrong")
        assert n_shown() == int((~f).all(axis=1).sum())
        for j, name in enumerate(names):
            page.locator("#items .it-outcome").select_option(f"only:{j}")
            others = np.delete(f, j, axis=1)
            assert n_shown() == int((f[:, j] & ~others.any(axis=1)).sum()), name
        page.locator("#items .it-outcome").select_option("")
        page.locator("#items .it-disagree").check()
        assert n_shown() == int((f.any(axis=1) & ~f.all(axis=1)).sum()) < 1142
        with page.expect_download() as dl:
            page.locator("#items .it-csv").click()
        text = Path(dl.value.path()).read_text(encoding="utf-8")
    finally:
        page.close()
    assert seen["console"] == [] and seen["requests"] == []
    import csv
    import io

    lines = list(csv.reader(io.StringIO(text)))
    assert len(lines) == 1 + int((f.any(axis=1) & ~f.all(axis=1)).sum())
    assert lines[0][:6] == ["paper", "setting", "item", "prompt", "gold", "slices"] and f"{names[0]} IoU" in lines[0]
    iou = lines[0].index(f"{names[0]} IoU")
    assert all(0 <= float(r[iou]) <= 1 for r in lines[1:])


def test_a_folded_table_of_thousands_of_tests_joins_the_page_sortable_and_linked_when_opened(chromium, tmp_path):
    """A pairs table too long to read at a glance (here 12 models × 5 slices: 330 paired tests) waits folded,
    outside the page's live document (it is ready sooner, an opened item faster); opened, it sorts by a header and
    each difference opens its discordant items, as a short table does."""
    from fixtures_pages import official_runs

    from vlamb_nb.compare import compare
    from vlamb_nb.report_html import FOLD_ROWS

    files = official_runs(tmp_path / "runs", {f"m{k:02d}": set(range(k, 40, 1 + k % 3)) for k in range(12)})
    c = compare(files, n_resamples=200)
    assert len(c.pairs) > FOLD_ROWS
    path = c.save(tmp_path / "out")[-1]
    page, seen = _open_file_page(chromium, path)
    try:
        assert page.locator("#pairs table").count() == 0 and page.locator("#pairs template").count() == 1
        page.locator("#pairs details summary").click()
        page.wait_for_selector("#pairs tbody tr")  # the details' toggle event (a queued task) puts it in
        rows = page.locator("#pairs tbody tr")
        assert rows.count() == len(c.pairs) and page.locator("#pairs template").count() == 0
        head = page.locator("#pairs th", has_text="p (adj.)")
        head.locator("button").click()
        adjusted = [float(v) for v in page.locator("#pairs td[data-v]:nth-child(11)").evaluate_all(
            "cells => cells.map(c => c.dataset.v)")]
        assert adjusted == sorted(adjusted) and head.get_attribute("aria-sort") == "ascending"
        pair = rows.first
        a, b = pair.locator("td").nth(0).inner_text(), pair.locator("td").nth(1).inner_text()
        sl = pair.locator("td").nth(5).inner_text()
        split = [int(x) for x in pair.locator("td").nth(7).inner_text().split(" / ")]
        pair.locator("a.it-link").click()
        assert page.locator("#items .it-count").inner_text().startswith(f"{sum(split)} of 40 items")
        assert f"{a} and {b} disagree" in page.locator("#items .it-group").inner_text() and sl in page.locator(
            "#items .it-group").inner_text()
    finally:
        page.close()
    assert seen["console"] == [] and seen["requests"] == []
