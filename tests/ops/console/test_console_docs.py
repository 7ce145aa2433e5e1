"""docs/console.md describes what exists: its screenshots are in the repository, and each flag it names
is one the command takes."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from schooner.ops.cli import main

DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_screenshots_exist() -> None:
    text = (DOCS / "console.md").read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(images) >= 4
    for image in images:
        assert (DOCS / image).stat().st_size > 1000, image


def test_documented_flags_are_the_commands() -> None:
    text = (DOCS / "console.md").read_text()
    table = text.split("| flag | what it does |")[1].split("\n\n")[0]
    flags = set(re.findall(r"`(-{1,2}[a-zA-Z-]+|-X)", table))
    help_text = CliRunner().invoke(main, ["console", "--help"]).output
    assert flags and all(flag in help_text for flag in flags), flags - {f for f in flags if f in help_text}
    assert "--sample-interval" in help_text
