"""A report opened in a real browser: Debian's Chromium (scripts/browser installs it), driven
by Playwright with that executable (Playwright's own browser download is never used). What a
reader's browser shows is what the test checks: the DOM after rendering, the console."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

# Chromium as a test runs it here: headless, as root, and with no background traffic (this
# machine's network is closed: without these it tries Google's hosts at every start).
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class Rendered:
    title: str
    summary: str
    sections: list[str]  # the bundle sections' ids, in page order
    plots: list[tuple[float, float]]  # each inline SVG plot's rendered width and height
    console_errors: list[str]
    requests: list[str]  # every URL the page asked for beyond itself (none: self-contained)


def chromium() -> str | None:
    return shutil.which("chromium")


def render(page_file: Path, screenshot: Path) -> Rendered:
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    requests: list[str] = []
    url = page_file.resolve().as_uri()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), headless=True, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url) if r.url != url else None)
            page.goto(url, wait_until="load")
            plots = page.eval_on_selector_all(
                ".plot svg",
                "els => els.map(e => [e.getBoundingClientRect().width, "
                "e.getBoundingClientRect().height])",
            )
            rendered = Rendered(
                title=page.title(),
                summary=page.inner_text("#summary-line"),
                sections=page.eval_on_selector_all("section.bundle", "els => els.map(e => e.id)"),
                plots=[(float(w), float(h)) for w, h in plots],
                console_errors=errors,
                requests=requests,
            )
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return rendered
