"""Take the README's screenshots (docs/sweeper.png, docs/explorer.png) from the app on the bundled
data, served and driven exactly as the browser tests do (tests/browserkit.py): Voilà with the
offline template, Debian's Chromium; and the top of the demo's report (docs/report.png at 1280 px,
docs/report-400.png at 400 px) when `make demo` has written results/demo/report.html. Run from the
repo: `.venv/bin/python app/screenshots.py` (about 30 s once results/cache holds the bundled
corpus's embeddings, minutes before).
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path

from PIL import Image
from playwright.sync_api import Browser, Page, sync_playwright

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from browserkit import CHROMIUM_ARGS, free_port, serve, set_parameters, voila_command

DOCS = REPO / "docs"
HEIGHT = 900  # pixels kept of each panel: the figures and the first lines of text under them
RUN = re.compile(r"^\s*Run\s*$")


def sweep_and_scrub(page: Page) -> None:
    """Sweep fixed sizes 128, 256, 512 x overlaps 0, 64, then scrub two variants back."""
    sweeper = page.locator(".jp-OutputArea-output").filter(has=page.locator(".widget-select-multiple", has_text="strategies"))
    overlap = sweeper.locator(".widget-text").filter(has=page.locator(".widget-label", has_text=re.compile(r"^overlap$")))
    overlap.locator("input").fill("0, 64")
    run = sweeper.locator("button", has_text=RUN)
    run.click()
    progress = sweeper.locator(".widget-html").filter(has_text=re.compile(r"variants ·"))
    page.wait_for_function("el => /^(\\d+)\\/\\1 variants/.test(el.textContent.trim())", arg=progress.element_handle())
    page.wait_for_function("b => !b.disabled", arg=run.element_handle())
    handle = sweeper.locator(".widget-hbox").filter(has=page.locator(".widget-hslider")).locator(".noUi-handle")
    handle.focus()
    for _ in range(2):
        page.keyboard.press("ArrowLeft")
        page.wait_for_timeout(1_500)  # the redraw lands asynchronously
    top = sweeper.bounding_box()
    question = sweeper.locator(".widget-dropdown").filter(has_text="question").last.bounding_box()
    page.screenshot(path=DOCS / "sweeper.png", clip={**top, "height": question["y"] + question["height"] + 200 - top["y"]})


def explore(page: Page) -> None:
    """The explorer at the 90th percentile, its text view on the first question's evidence."""
    explorer = page.locator(".jp-OutputArea-output").filter(has_text="breakpoint percentile")
    percentile = explorer.locator(".widget-hslider").filter(has=page.locator(".widget-label", has_text="breakpoint percentile"))
    percentile.locator(".noUi-handle").focus()
    for _ in range(5):
        page.keyboard.press("ArrowLeft")
    explorer.locator(".widget-dropdown").filter(has_text="question").locator("select").select_option(index=1)
    page.wait_for_timeout(3_000)
    path = DOCS / "explorer.png"
    explorer.screenshot(path=path)
    image = Image.open(path)
    image.crop((0, 0, image.width, min(image.height, HEIGHT))).save(path, optimize=True)


def report(browser: Browser) -> list[str]:
    """The report's head as a reader sees it: 1280 px down to the end of the verdict table, and a
    phone's 400 px down to the first figure."""
    path = REPO / "results" / "demo" / "report.html"
    if not path.exists():
        return []
    for name, width, end in (("report.png", 1280, "#verdict"), ("report-400.png", 400, "#scores")):
        page = browser.new_page(viewport={"width": width, "height": 900}, device_scale_factor=1)
        page.goto(path.as_uri())
        box = page.locator(end).bounding_box()
        assert box is not None, f"{path} has no {end}"
        page.screenshot(path=DOCS / name, full_page=True, clip={"x": 0, "y": 0, "width": width,
                                                                  "height": min(box["y"] + box["height"], 2400)})
        page.close()
    return ["report.png", "report-400.png"]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        notebooks = Path(tmp) / "notebooks"
        shutil.copytree(REPO / "notebooks", notebooks, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        set_parameters(notebooks / "app.ipynb",
                       f"DATA = {str(REPO / 'data' / 'chroma_small')!r}\nCACHE = {str(REPO / 'results' / 'cache')!r}")
        port = free_port()
        with serve(voila_command(notebooks / "app.ipynb", port), port, notebooks, Path(tmp) / "voila.log") as server, \
                sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
            # Voilà scrolls inside its page: a tall viewport lays every widget out for the screenshots.
            page = browser.new_page(viewport={"width": 1280, "height": 3200})
            page.set_default_timeout(600_000)
            page.goto(server.url)
            page.locator(".jp-OutputArea-output").filter(has_text="breakpoint percentile").locator(
                "img.widget-image[src]").wait_for()
            sweep_and_scrub(page)
            explore(page)
            shots = ["sweeper.png", "explorer.png", *report(browser)]
            browser.close()
    for name in shots:
        print(f"{DOCS / name}: {(DOCS / name).stat().st_size // 1000} kB")


if __name__ == "__main__":
    main()
