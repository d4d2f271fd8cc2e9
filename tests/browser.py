"""Headless Chromium for the page tests (the replay viewer, the leaderboard's replay links, the
play page): where the browser is and the flags it runs with.

    from browser import ARGS, CHROMIUM, needs_chromium
"""

from __future__ import annotations

import shutil

import pytest

CHROMIUM = shutil.which("chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
        "--disable-component-update", "--disable-sync", "--disable-quic"]  # fmt: skip
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Chromium: make browser (apt: chromium)"
)
