"""Headless Chromium for the page tests (the replay viewer, the leaderboard's replay links, the
play page): where the browser is and the flags it runs with.

    from browser import ARGS, CHROMIUM, chromium_page, needs_chromium

    with chromium_page() as (page, errors):   # errors: the page's uncaught script errors
        page.goto(path.as_uri())
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
        "--disable-component-update", "--disable-sync", "--disable-quic"]  # fmt: skip
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Chromium: make browser (apt: chromium)"
)


@contextlib.contextmanager
def chromium_page() -> Iterator[tuple[Any, list[str]]]:
    """A page of a headless Chromium and the list its uncaught script errors go to; the
    browser is closed after."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            yield page, errors
        finally:
            browser.close()
