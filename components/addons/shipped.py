"""Upstream manifests the program ships and applies from disk (components/addons/manifests/).

The provider reads a manifest from a path as it reads one from a URL (pulumi-kubernetes,
provider/pkg/provider/yaml/v2/yaml.go, `Parse`): from a path nothing is fetched at preview or
up, so a runner without internet previews, and what is applied is the file that was reviewed.
The path is relative to the program's directory, the provider's working directory (pulumi,
sdk/go/common/resource/plugin/plugin.go, `execPlugin`: `cmd.Dir = pwd`), so the input is the same
in every checkout. The program checks each file's sha256 against MANIFEST.tsv before it registers
anything.

Layout and MANIFEST.tsv are tests/upstream's: `<owner>+<repository>/<tag>/<path>`; repository,
tag, path, commit (the tag's), sha256 and the SPDX id of the licence, whose text is beside them.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path

PROGRAM_DIR = Path(__file__).resolve().parents[2]
DIRECTORY = Path(__file__).resolve().parent / "manifests"
COLUMNS = ["repository", "tag", "path", "commit", "sha256", "licence"]


class ManifestError(Exception):
    """A shipped manifest that is missing, unlisted or not the bytes MANIFEST.tsv records."""


@dataclass(frozen=True)
class ShippedManifest:
    repository: str
    tag: str
    path: str
    commit: str
    sha256: str
    licence: str
    directory: Path = DIRECTORY

    @property
    def file(self) -> Path:
        return self.directory / self.repository.replace("/", "+") / self.tag / self.path

    @property
    def program_path(self) -> str:
        """The path the provider reads: relative to the program's directory."""
        return self.file.relative_to(PROGRAM_DIR).as_posix()


def listed(directory: Path | None = None) -> list[ShippedManifest]:
    directory = directory or DIRECTORY
    with open(directory / "MANIFEST.tsv", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t")
        if reader.fieldnames != COLUMNS:
            raise ManifestError(f"{directory / 'MANIFEST.tsv'}: columns {reader.fieldnames}, expected {COLUMNS}")
        return [ShippedManifest(**row, directory=directory) for row in reader]


def find(repository: str, tag: str, path: str, directory: Path | None = None) -> ShippedManifest:
    for m in listed(directory):
        if (m.repository, m.tag, m.path) == (repository, tag, path):
            return m
    raise ManifestError(f"{repository}@{tag}:{path} is not listed in {(directory or DIRECTORY) / 'MANIFEST.tsv'}")


def verified(m: ShippedManifest) -> str:
    """The manifest's program path, once its bytes are the ones MANIFEST.tsv records."""
    try:
        digest = hashlib.sha256(m.file.read_bytes()).hexdigest()
    except OSError as err:
        raise ManifestError(f"{m.file}: cannot read the shipped manifest of {m.repository} {m.tag}: {err}") from None
    if digest != m.sha256:
        raise ManifestError(
            f"{m.file}: sha256 {digest}, but MANIFEST.tsv records {m.sha256} for {m.repository} {m.tag} "
            f"{m.path} (commit {m.commit}): the shipped manifest was modified, and nothing is applied from it. "
            "Restore it (git checkout -- <file>), or for a new release replace the file with the upstream "
            "one at its tag and update its row")
    return m.program_path
