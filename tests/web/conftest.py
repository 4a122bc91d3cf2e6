"""Browser test helpers: headless Debian chromium driven by Playwright, the web
page's address from the server's log, and waiting for conditions.

``browser`` (module scope) is a Chromium launched with ``/usr/bin/chromium``; the
tests are skipped, with the reason, when it or Playwright is missing (``make
test`` installs both). ``page`` is a new page whose console errors and uncaught
exceptions fail the test. ``web_url(server)`` returns the page's address.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
# A test run leaves the checkout as it was: screenshots go to the temporary directory
# unless MAMMAMIA_SCREENSHOTS names where to write them (docs/screenshots renews the
# documentation's pictures).
SCREENSHOTS = Path(
    os.environ.get("MAMMAMIA_SCREENSHOTS") or Path(tempfile.gettempdir()) / "mammamia-screenshots"
)
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
T = TypeVar("T")


def wait_for(condition: Callable[[], T | None], timeout: float, what: str, every: float = 0.1) -> T:
    """Returns the first true value of ``condition()``; fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def web_url(server: Any) -> str:
    """Returns the address the server logged for its web page (``web_serving``)."""

    def logged() -> str | None:
        for line in server.logs().splitlines():
            if '"web_serving"' in line:
                return str(json.loads(line)["url"])
        return None

    return wait_for(logged, 10, "the web_serving log line")


def get_json(url: str) -> tuple[int, Any, str]:
    """Returns (status, parsed body, body text) of a GET."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            text = r.read().decode()
            return r.status, json.loads(text), text
    except urllib.error.HTTPError as e:
        text = e.read().decode()
        return e.code, json.loads(text), text


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Yields a headless Chromium (Debian's), or skips the module's tests."""
    if not CHROMIUM.exists():
        pytest.skip(
            "Debian's chromium is not installed (/usr/bin/chromium; `make test` "
            "installs it with apt-get): the web page's browser tests are skipped"
        )
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright for Python is not installed (pip install -e '.[dev]')")
    with sync_playwright() as p:
        # A launch can hang before the browser answers (seen once, in a full suite run
        # beside other work): it is tried once more before the tests fail.
        for attempt in (1, 2):
            try:
                b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, timeout=60_000)
                break
            except PlaywrightError:
                if attempt == 2:
                    raise
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """Yields a new page (laptop size); a console error or an uncaught exception on
    it fails the test."""
    context = browser.new_context(viewport={"width": 1200, "height": 860})
    context.set_default_timeout(20_000)
    p = context.new_page()
    errors: list[str] = []
    p.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    p.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    yield p
    context.close()
    assert not errors, "the browser reported errors:\n" + "\n".join(errors)


def screenshot(page: Any, name: str) -> None:
    """Saves the page as it is now to NAME.png in SCREENSHOTS."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))
