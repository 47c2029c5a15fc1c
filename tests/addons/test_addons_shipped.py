"""The manifests the add-ons apply ship with the program: no URL is read at preview, and a modified
file is refused before anything registers (components/addons/shipped.py)."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import builders
import pytest

from components.addons import mpi, shipped, versions
from tools.mockrun import run_program

REPO = Path(__file__).resolve().parents[2]
URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")  # what the provider fetches instead of reading (yaml.go, Parse)
# A URL in the program's source that names a manifest: a raw file of a repository or release, or a
# .yaml/.yml/.json document. Helm chart repositories are indexes the provider resolves, not manifests.
MANIFEST_URL = re.compile(r"https?://(?:raw\.githubusercontent\.com/[^\s\"']+|[^\s\"']+\.(?:ya?ml|json)\b)")


def test_no_manifest_the_program_registers_is_a_url(full_run):
    files = []
    for r in full_run.resources:
        if r.type.startswith("kubernetes:yaml/"):
            inputs = r.plain()
            files += [inputs.get("file")] + list(inputs.get("files") or [])
    assert files, "no ConfigFile or ConfigGroup registered: the check would pass vacuously"
    assert [f for f in files if f is None or URL.match(f)] == []
    # each is a shipped file, named relative to the program's directory (the provider's working directory)
    shipped_paths = {m.program_path for m in shipped.listed()}
    assert set(files) <= shipped_paths and all((REPO / f).is_file() for f in files)


def test_no_source_of_the_program_names_a_manifest_url():
    sources = [REPO / "__main__.py", *sorted((REPO / "components").rglob("*.py"))]
    found = {str(p.relative_to(REPO)): MANIFEST_URL.findall(p.read_text()) for p in sources}
    assert {name: urls for name, urls in found.items() if urls} == {}
    # the pattern does catch the URL the program used to apply
    assert MANIFEST_URL.search('"https://raw.githubusercontent.com/kubeflow/mpi-operator/v0.8.0/deploy/v2beta1/'
                               'mpi-operator.yaml"')


def test_the_operator_manifest_is_the_pinned_release():
    m = shipped.find(*versions.MPI_OPERATOR_SOURCE)
    assert (m.repository, m.tag, m.licence) == ("kubeflow/mpi-operator", versions.MPI_OPERATOR, "Apache-2.0")
    assert mpi.operator_manifest() == m.program_path == (
        "components/addons/manifests/kubeflow+mpi-operator/v0.8.0/deploy/v2beta1/mpi-operator.yaml")


def modified_copy(tmp_path: Path) -> shipped.ShippedManifest:
    """The shipped manifests in tmp_path, the MPI operator's with one byte changed."""
    copy = tmp_path / "manifests"
    shutil.copytree(shipped.DIRECTORY, copy)
    m = shipped.find(*versions.MPI_OPERATOR_SOURCE, directory=copy)
    m.file.write_bytes(m.file.read_bytes().replace(b"replicas: 1", b"replicas: 2", 1))
    return m


def test_the_sha256_check_refuses_a_modified_file(tmp_path):
    m = modified_copy(tmp_path)
    digest = hashlib.sha256(m.file.read_bytes()).hexdigest()
    with pytest.raises(shipped.ManifestError) as caught:
        shipped.verified(m)
    message = str(caught.value)
    assert str(m.file) in message and digest in message and m.sha256 in message
    assert "the shipped manifest was modified, and nothing is applied from it" in message
    m.file.unlink()
    with pytest.raises(shipped.ManifestError, match="cannot read the shipped manifest"):
        shipped.verified(m)


def test_the_program_stops_before_registering_anything(tmp_path, monkeypatch):
    modified_copy(tmp_path)
    monkeypatch.setattr(shipped, "DIRECTORY", tmp_path / "manifests")
    registered = []
    monkeypatch.setattr("components.dynamic.guard.guard_deployed", lambda *a, **k: registered.append("guard"))
    with pytest.raises(Exception, match="the shipped manifest was modified"):
        run_program(builders.lab_stack())
    assert registered == []  # the first step after the checks never ran


def test_an_unlisted_manifest_is_refused(tmp_path):
    with pytest.raises(shipped.ManifestError, match="is not listed in"):
        shipped.find("kubeflow/mpi-operator", "v9.9.9", "deploy/v2beta1/mpi-operator.yaml")
