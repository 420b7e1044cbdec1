"""The item tables of the pages, in headless Chromium: a headline cell, a comparison value and a paired test show
exactly their items, the filters narrow them, a header sorts by mouse and keyboard, and an item opens with its
prompt, each answer and its image (the boxes drawn for a grounding paper); no console error, nothing asked of the
network, no text run as markup."""

from __future__ import annotations

import json
import os
from pathlib import Path

import fixtures_items as FI
import pytest

from vlamb_nb import report_card
from vlamb_nb.compare import compare, load_runs
from vlamb_nb.report_html import write_run_page
from vlamb_nb.report_items import comparison_view
from vlamb_nb.reproduce import recorded_runs

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM = Path(os.environ.get("VLAMB_CHROMIUM", "/usr/lib/chromium/chromium"))
#: axe-core from the registry (``npm ci --prefix tests``, as ``.ci/run`` does)
AXE = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def chromium():
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
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("item-pages")
    sources = FI.samples(root)
    folders = {m: FI.run_folder(root, sources, m) for m in ("A", "B")}
    run = folders["A"]
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    runs, error, _ = recorded_runs(run)
    assert error == {}
    report = write_run_page(run, results, report_card.build(results), runs=runs)
    c = compare([*runs, *load_runs(folders["B"])], n_resamples=200)
    c.save(root / "cmp")
    return {"report": report, "comparison": root / "cmp" / "comparison.html", "c": c}


def _open(chromium, path: Path):
    page = chromium.new_page(viewport={"width": 1366, "height": 768})
    seen: dict[str, list[str]] = {"console": [], "requests": [], "dialogs": []}
    page.on("console", lambda m: seen["console"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen["console"].append(str(e)))
    page.on("request", lambda r: None if r.url.startswith(("file:", "data:")) else seen["requests"].append(r.url))
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.goto(path.as_uri(), wait_until="load")
    return page, seen


def _data(page, box: str) -> dict:
    return json.loads(page.locator(f"#{box} .it-data").text_content())


def _shown(page, box: str) -> list[str]:
    return page.locator(f"#{box} tbody button.it-open").all_inner_texts()


def _find(page, box: str, text: str) -> None:
    """Type ``text`` into the table's search box and wait until the rows are filtered by it (the table filters
    once typing pauses)."""
    page.locator(f"#{box} .it-q").fill(text)
    page.wait_for_function("([box, text]) => document.getElementById(box).dataset.query === text", arg=[box, text])


def _clean(seen: dict, page) -> None:
    """No console error, request or script run from the page's text; nothing wider than the window at a laptop's
    and a phone's width; no serious or critical axe-core violation (where axe-core is installed)."""
    assert seen["console"] == [] and seen["requests"] == [] and seen["dialogs"] == [], seen
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    if AXE.is_file():
        page.add_script_tag(path=str(AXE))
        found = page.evaluate("""async () => {
            const r = await axe.run(document, {resultTypes: ["violations"]});
            return r.violations.filter(v => v.impact === "serious" || v.impact === "critical")
                .map(v => `${v.id} (${v.impact}) x${v.nodes.length}: ${v.nodes[0].target.join(" ")}`);
        }""")
        assert found == [], f"axe-core finds {found}"


def test_a_headline_cell_shows_its_items_and_an_item_opens_whole(chromium, pages):
    page, seen = _open(chromium, pages["report"])
    try:
        box = "items-refadv"
        data = _data(page, box)
        assert len(_shown(page, box)) == len(data["rows"])
        links = page.locator("#nb-refadv [data-items-links='headline'] a.it-link")
        assert links.count() == len(data["links"]["headline"])
        i = next(k for k, g in enumerate(data["links"]["headline"]) if len(data["groups"][g]["rows"]) < len(data["rows"]))
        group = data["groups"][data["links"]["headline"][i]]
        links.nth(i).click()
        want = sorted(data["rows"][r]["k"] for r in group["rows"])
        assert sorted(_shown(page, box)) == want  # exactly the items behind the cell
        assert page.locator(f"#{box} .it-group strong").inner_text().startswith(group["label"])
        # the same row of the report card at the top links to the same items
        card = data["links"]["card"]
        j = next(k for k, g in enumerate(card) if g == data["links"]["headline"][i])
        page.locator("#card table tbody tr").nth(j).locator("a.it-link").click()
        assert sorted(_shown(page, box)) == want
        # a text filter narrows them
        first = next((data["rows"][r] for r in group["rows"] if data["rows"][r]["m"][0]["pb"]),
                     data["rows"][group["rows"][0]])
        _find(page, box, first["k"])
        narrowed = _shown(page, box)
        assert first["k"] in narrowed and set(narrowed) <= set(want)
        page.locator(f"#{box} .it-clear").click()
        # a store's score (read from its run record) shows the items it is made of
        scores = page.locator("#nb-refadv [data-items-links='scores'] a.it-link")
        assert scores.count() == len(data["links"]["scores"]) >= 1
        _find(page, box, "")
        scores.first.click()
        whole = data["groups"][data["links"]["scores"][0]]
        assert sorted(_shown(page, box)) == sorted(data["rows"][r]["k"] for r in whole["rows"])
        assert scores.first.inner_text() == page.locator("#nb-refadv [data-items-links='scores'] tbody tr").first \
            .locator("td").nth(4).inner_text()  # the link is the value cell
        page.locator(f"#{box} .it-clear").click()
        _find(page, box, "")
        assert len(_shown(page, box)) == len(data["rows"])
        # sort by keyboard: the item header's button, Enter, twice
        head = page.locator(f"#{box} thead button", has_text="item")
        head.focus()
        page.keyboard.press("Enter")
        up = _shown(page, box)
        page.keyboard.press("Enter")
        assert _shown(page, box) == list(reversed(up)) and up == sorted(up)
        assert page.locator(f"#{box} thead th[aria-sort='descending']").count() == 1
        # open an item: its whole prompt, the answer, the image with the gold and predicted boxes
        page.locator(f"#{box} tbody button.it-open", has_text=first["k"]).first.click()
        dialog = page.locator(f"#{box} dialog[open]")
        assert dialog.count() == 1
        assert dialog.locator(".it-prompt").inner_text() == first["q"]
        assert first["m"][0]["a"] in dialog.locator(".it-answers").inner_text()
        boxes = [first["gb"]] + [mv["pb"] for mv in first["m"] if mv and mv["pb"]]
        assert dialog.locator("svg image").count() == 1 and dialog.locator("svg rect").count() == len(boxes) >= 2
        page.keyboard.press("Escape")
        assert page.locator(f"#{box} dialog[open]").count() == 0
        _clean(seen, page)
    finally:
        page.close()


def test_a_paired_test_shows_its_discordant_items_and_models_disagree_narrows(chromium, pages):
    page, seen = _open(chromium, pages["comparison"])
    try:
        box = "items"
        data = _data(page, box)
        pairs = pages["c"].pairs.to_dict(orient="records")
        links = page.locator("#pairs tbody tr a.it-link")
        view = comparison_view(pages["c"])  # the page's groups, each pair's discordant rows listed
        at = [int(g) for g in links.evaluate_all("as => as.map(a => a.dataset.group)")]
        groups = [view.groups[g] for g in at]
        assert any("rows" not in data["groups"][g] for g in at)  # derived on the page from their slice's rows
        # a 0/1 test over single items (over pairs of queries, a query of a discordant pair may agree)
        k = next(i for i, r in enumerate(pairs) if r["kind"] == "binary" and r["discordant_a_only"]
                 + r["discordant_b_only"] and groups[i].n == len(groups[i].rows))
        link = page.locator("#pairs tbody tr").nth(k).locator("a.it-link")
        group = groups[k]
        link.click()
        shown = _shown(page, box)
        assert group.n == pairs[k]["discordant_a_only"] + pairs[k]["discordant_b_only"]  # McNemar's discordant
        assert sorted(shown) == sorted(view.rows[r]["k"] for r in group.rows)  # units, every item of each
        page.locator(f"#{box} .it-clear").click()
        everything = len(_shown(page, box))
        page.locator(f"#{box} .it-disagree").check()
        disagree = _shown(page, box)
        assert 0 < len(disagree) < everything and set(shown) <= set(disagree)
        page.locator(f"#{box} .it-outcome").select_option("wrong")
        assert len(_shown(page, box)) <= len(disagree)
        # the hostile answer is text on the page, never markup
        page.locator(f"#{box} .it-disagree").uncheck()
        page.locator(f"#{box} .it-outcome").select_option("")
        _find(page, box, "onerror=alert(2)")
        assert _shown(page, box) and page.locator(f"#{box} tbody img").count() == 0
        assert data["models"] == ["A", "B"]
        _clean(seen, page)
    finally:
        page.close()
