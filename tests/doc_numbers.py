"""The resource counts docs/benchmark.md quotes, as its "Resource counts" table lists them.

Read by tests/tools/test_doc_numbers.py (the scaled labs) and tests/test_real_stacks.py (the shipped
stacks, which only that module reads).
"""

from __future__ import annotations

import re
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parent.parent / "docs" / "benchmark.md"
ROW = re.compile(r"^\| (?P<what>[^|]+?) \| (?P<workers>\d+) \| (?P<resources>\d+) \|$")


def quoted_counts() -> dict[tuple[str, int], int]:
    """(what, workers) -> resources, from the table under the heading "Resource counts"."""
    text = BENCHMARK.read_text()
    section = text.split("\n## Resource counts", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = ROW.match(line.strip())
        if match:
            rows[(match["what"].strip("` "), int(match["workers"]))] = int(match["resources"])
    return rows
