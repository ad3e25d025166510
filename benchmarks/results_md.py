"""Replacing one marked section of ``benchmarks/RESULTS.md``, so each script rewrites only its own table."""

from __future__ import annotations

import re
from pathlib import Path

RESULTS_MD = Path(__file__).resolve().parent / "RESULTS.md"


def replace_section(section: str, body: str, heading: str = "") -> None:
    """Put ``body`` between the ``<!-- section:start/end -->`` markers (appended, under ``heading``,
    when the markers are not there yet)."""
    block = f"<!-- {section}:start -->\n{body.strip()}\n<!-- {section}:end -->"
    text = RESULTS_MD.read_text() if RESULTS_MD.exists() else "# Results\n"
    pattern = re.compile(f"<!-- {section}:start -->.*<!-- {section}:end -->", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip() + "\n\n" + (heading + "\n\n" if heading else "") + block + "\n"
    RESULTS_MD.write_text(text)
