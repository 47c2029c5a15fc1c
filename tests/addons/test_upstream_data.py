"""The upstream files in tests/upstream/ are what MANIFEST.tsv says they are, and nothing else is there.

The same holds for the manifests the program ships (components/addons/manifests/, same layout);
the program itself refuses one whose sha256 is not its row's (components/addons/shipped.py).

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

from components.addons import shipped, versions

DIRECTORY = upstream.IN_REPOSITORY
COLUMNS = ["repository", "tag", "path", "commit", "sha256", "licence"]
# Files of ours in the directory: the manifest, its README, the licence texts and notices.
OURS = {"MANIFEST.tsv", "README.md", "NOTICE"}


def rows(directory: Path = DIRECTORY) -> list[dict[str, str]]:
    with open(directory / "MANIFEST.tsv", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t")
        assert reader.fieldnames == COLUMNS
        return list(reader)


def file_of(row: dict[str, str], directory: Path = DIRECTORY) -> Path:
    return directory / row["repository"].replace("/", "+") / row["tag"] / row["path"]


BOTH = pytest.mark.parametrize("directory", [DIRECTORY, shipped.DIRECTORY], ids=["tests/upstream", "shipped"])


@BOTH
def test_every_listed_file_has_its_sha256(directory):
    wrong = {}
    for row in rows(directory):
        path = file_of(row, directory)
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"
        if digest != row["sha256"]:
            wrong[str(path.relative_to(directory))] = digest
    assert wrong == {}


@BOTH
def test_every_file_is_listed(directory):
    listed = {file_of(r, directory) for r in rows(directory)}
    present = {p for p in directory.rglob("*") if p.is_file() and p.name not in OURS
               and not p.name.startswith("LICENSE-")}
    assert sorted(str(p.relative_to(directory)) for p in present - listed) == []
    assert len(listed) == len(rows(directory)), "a file is listed twice"


@BOTH
def test_every_row_says_where_it_comes_from_and_under_which_licence(directory):
    for row in rows(directory):
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", row["repository"]), row
        assert row["tag"] and not row["path"].startswith("/") and ".." not in row["path"].split("/"), row
        assert re.fullmatch(r"[0-9a-f]{40}", row["commit"]), row
        assert re.fullmatch(r"[0-9a-f]{64}", row["sha256"]), row
        # the licence's text ships beside the files it covers
        assert (directory / f"LICENSE-{row['licence']}").is_file(), row


def test_the_tests_read_the_copies_in_the_repository(monkeypatch):
    monkeypatch.delenv("GPU_LAB_SCHEMAS", raising=False)
    assert upstream.schemas_dir() == DIRECTORY
    # the CRD and chart checks look up exactly the listed files, and the manifests the program ships
    assert [s.file for s in upstream.manifest.__wrapped__()] == (
        [file_of(r) for r in rows()] + [file_of(r, shipped.DIRECTORY) for r in rows(shipped.DIRECTORY)])


def test_the_shipped_manifests_are_read_from_where_the_program_applies_them(monkeypatch, tmp_path):
    newer = tmp_path / "schemas"
    newer.mkdir()
    (newer / "MANIFEST.tsv").write_text("repository\ttag\tpath\tcommit\n")
    monkeypatch.setenv("GPU_LAB_SCHEMAS", str(newer))
    (mpi,) = [s for s in upstream.manifest.__wrapped__() if s.repository == "kubeflow/mpi-operator"]
    assert mpi.file == shipped.find(*versions.MPI_OPERATOR_SOURCE).file
    # one copy in the repository: not also under tests/upstream
    assert not (DIRECTORY / "kubeflow+mpi-operator").exists()


def test_no_upstream_file_is_kept_twice():
    def keys(directory: Path) -> set[tuple[str, str, str]]:
        return {(r["repository"], r["tag"], r["path"]) for r in rows(directory)}

    assert keys(DIRECTORY) & keys(shipped.DIRECTORY) == set()


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
