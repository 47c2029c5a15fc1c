"""The upstream files in tests/upstream/ are what MANIFEST.tsv says they are, and nothing else is there.

Each row names a file of an upstream repository (repository, tag, path, commit), its sha256 and the
SPDX identifier of the repository's licence; the licence's text is beside the files
(LICENSE-<id>). A file edited by hand, added without a row or listed without being there fails here,
so the CRD and chart checks (test_addons_crds.py) always read the upstream bytes.
"""

from __future__ import annotations

import csv
import hashlib
import re
from pathlib import Path

import pytest
import upstream_schemas as upstream

DIRECTORY = upstream.IN_REPOSITORY
COLUMNS = ["repository", "tag", "path", "commit", "sha256", "licence"]
# Files of ours in the directory: the manifest, its README, the licence texts and notices.
OURS = {"MANIFEST.tsv", "README.md", "NOTICE"}


def rows() -> list[dict[str, str]]:
    with open(DIRECTORY / "MANIFEST.tsv", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t")
        assert reader.fieldnames == COLUMNS
        return list(reader)


def file_of(row: dict[str, str]) -> Path:
    return DIRECTORY / row["repository"].replace("/", "+") / row["tag"] / row["path"]


def test_every_listed_file_has_its_sha256():
    wrong = {}
    for row in rows():
        path = file_of(row)
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"
        if digest != row["sha256"]:
            wrong[str(path.relative_to(DIRECTORY))] = digest
    assert wrong == {}


def test_every_file_is_listed():
    listed = {file_of(r) for r in rows()}
    present = {p for p in DIRECTORY.rglob("*") if p.is_file() and p.name not in OURS
               and not p.name.startswith("LICENSE-")}
    assert sorted(str(p.relative_to(DIRECTORY)) for p in present - listed) == []
    assert len(listed) == len(rows()), "a file is listed twice"


def test_every_row_says_where_it_comes_from_and_under_which_licence():
    for row in rows():
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", row["repository"]), row
        assert row["tag"] and not row["path"].startswith("/") and ".." not in row["path"].split("/"), row
        assert re.fullmatch(r"[0-9a-f]{40}", row["commit"]), row
        assert re.fullmatch(r"[0-9a-f]{64}", row["sha256"]), row
        # the licence's text ships beside the files it covers
        assert (DIRECTORY / f"LICENSE-{row['licence']}").is_file(), row


def test_the_tests_read_the_copies_in_the_repository(monkeypatch):
    monkeypatch.delenv("GPU_LAB_SCHEMAS", raising=False)
    assert upstream.schemas_dir() == DIRECTORY
    # the CRD and chart checks look up exactly the listed files
    assert [s.file for s in upstream.manifest.__wrapped__()] == [file_of(r) for r in rows()]


def test_gpu_lab_schemas_points_elsewhere(monkeypatch, tmp_path):
    newer = tmp_path / "schemas"
    newer.mkdir()
    (newer / "MANIFEST.tsv").write_text("repository\ttag\tpath\tcommit\n")
    monkeypatch.setenv("GPU_LAB_SCHEMAS", str(newer))
    assert upstream.schemas_dir() == newer
    monkeypatch.setenv("GPU_LAB_SCHEMAS", str(tmp_path / "absent"))
    monkeypatch.setattr(upstream, "missing", lambda reason: pytest.skip(reason))
    with pytest.raises(pytest.skip.Exception, match="unset GPU_LAB_SCHEMAS"):
        upstream.schemas_dir()
