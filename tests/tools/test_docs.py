"""The README and docs need nothing outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# What a user of the repository cannot follow: the workspace's guide copies, their file numbers,
# tracker issues and the design notes that stayed outside the repo.
OUTSIDE = re.compile(r"\.\./shared\b|shared/schemas|reference 00\d|\bissue \d+|sn2700-a")


def readable_files():
    yield REPO / "README.md"
    yield from (REPO / "docs").glob("*.md")
    for folder in ("tools", "tests", "scripts", "engine-bootstrap", "mk", ".ci"):
        for path in (REPO / folder).rglob("*"):
            if path.is_file() and path.suffix in {".py", ".sh", ".mk", ".md", ""}:
                yield path
    yield from REPO.glob("Pulumi.*.yaml")
    yield REPO / "Makefile"


def test_nothing_points_outside_the_repository():
    found = []
    for path in readable_files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OUTSIDE.search(line) and path.name != "test_docs.py":
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_readme_links_resolve_and_guides_are_cited_by_url():
    readme = (REPO / "README.md").read_text()
    # every link of the README and the docs, relative to the file it is in
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text()):
            if not target.startswith("http"):
                assert (page.parent / target).exists(), f"{page.relative_to(REPO)}: {target}"
    references = (REPO / "docs" / "references.md").read_text()
    assert references.count("https://") >= 4
    for title in ("RDG for Kubernetes Cluster Deployment", "High-Performance RoCE Implementation",
                  "vSphere Bitfusion", "GPU Support for AI Workloads in Red Hat OpenShift 4"):
        assert title in references, title
    runbook = (REPO / "docs" / "runbook.md").read_text()  # the real-lab steps, secrets among them
    assert '"Secrets"' not in readme + runbook and re.search(r"gpu-lab:switchPasswords\.[\w-]+", runbook)
