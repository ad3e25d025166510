"""Replacing one marked section of the results pages (``benchmarks/RESULTS.md`` and the topic
pages ``benchmarks/results/*.md`` it links to), so each script rewrites only its own table."""

from __future__ import annotations

import re
from pathlib import Path

RESULTS_MD = Path(__file__).resolve().parent / "RESULTS.md"
PAGES = (RESULTS_MD, *sorted((RESULTS_MD.parent / "results").glob("*.md")))


def replace_section(section: str, body: str, heading: str = "") -> None:
    """Put ``body`` between the ``<!-- section:start/end -->`` markers of whichever page holds them
    (appended to ``benchmarks/RESULTS.md``, under ``heading``, when no page has them yet)."""
    block = f"<!-- {section}:start -->\n{body.strip()}\n<!-- {section}:end -->"
    pattern = re.compile(f"<!-- {re.escape(section)}:start -->.*<!-- {re.escape(section)}:end -->", re.S)
    for page in PAGES:
        text = page.read_text() if page.exists() else ""
        if pattern.search(text):
            page.write_text(pattern.sub(lambda _: block, text))
            return
    text = RESULTS_MD.read_text() if RESULTS_MD.exists() else "# Results\n"
    RESULTS_MD.write_text(text.rstrip() + "\n\n" + (heading + "\n\n" if heading else "") + block + "\n")
