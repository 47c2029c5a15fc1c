"""The operators' own CRDs and chart values, as the tests read them.

The files are the upstream repositories' files at the tags the project pins, kept unchanged in
tests/upstream/ (MANIFEST.tsv there: repository, tag, path, commit, sha256, licence per file;
tests/test_upstream_data.py checks it), so a clone tests with nothing outside the repository.
GPU_LAB_SCHEMAS points the tests at another directory of the same layout (a newer copy, when a
pin moves); a directory without MANIFEST.tsv skips the tests with the reason, and fails them
under CI (CI=true). The manifests the program ships and applies (components/addons/manifests/,
same layout) are read from there, wherever GPU_LAB_SCHEMAS points: the tests check against what
is applied, and the repository holds one copy of each.

Two checks, each as the real consumer reads our output:

- a custom resource against the structural schema of its served CRD version. The API server
  prunes a field its schema does not know, silently, so an unknown field is an error here;
  ``x-kubernetes-preserve-unknown-fields`` keeps a subtree open, as it does on the server.
- Helm values against the chart's values.yaml (every key path we set must be one the chart
  reads) and values.schema.json (Helm validates the merged values against it).
"""

from __future__ import annotations

import copy
import csv
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from required_tools import missing

from components.addons import shipped

REPO = Path(__file__).resolve().parents[2]
IN_REPOSITORY = REPO / "tests" / "upstream"


def schemas_dir() -> Path:
    """The schemas directory (GPU_LAB_SCHEMAS, else tests/upstream), or skip (fail under CI) with the reason."""
    path = Path(os.environ.get("GPU_LAB_SCHEMAS") or IN_REPOSITORY)
    if (path / "MANIFEST.tsv").is_file():
        return path
    reason = (f"upstream CRDs and chart values not found at {path} (no MANIFEST.tsv); "
              f"unset GPU_LAB_SCHEMAS to use the copies in {IN_REPOSITORY.relative_to(REPO)}, or point it at "
              "a directory of the same layout")
    missing(reason)


@dataclass(frozen=True)
class Source:
    repository: str
    tag: str
    path: str
    directory: Path | None = None  # a shipped manifest's directory; None: the schemas directory

    @property
    def file(self) -> Path:
        return (self.directory or schemas_dir()) / self.repository.replace("/", "+") / self.tag / self.path

    def __str__(self) -> str:
        return f"{self.repository}@{self.tag}:{self.path}"


@cache
def manifest() -> tuple[Source, ...]:
    with open(schemas_dir() / "MANIFEST.tsv", newline="") as f:
        upstream = tuple(Source(r["repository"], r["tag"], r["path"]) for r in csv.DictReader(f, delimiter="\t"))
    return upstream + tuple(Source(m.repository, m.tag, m.path, m.directory) for m in shipped.listed())


# ---------------------------------------------------------------- CRDs


@dataclass(frozen=True)
class CrdVersion:
    source: Source
    group: str
    kind: str
    version: str
    served: bool
    schema: dict


@cache
def crd_versions() -> tuple[CrdVersion, ...]:
    found = []
    for source in manifest():
        text = source.file.read_text() if source.path.endswith((".yaml", ".yml")) else ""
        if "CustomResourceDefinition" not in text or "{{" in text:
            continue  # not a CRD file, or a Go template the operator renders itself
        for doc in yaml.safe_load_all(text):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            for v in spec["versions"]:
                found.append(CrdVersion(source, spec["group"], spec["names"]["kind"], v["name"], bool(v.get("served")),
                                        v["schema"]["openAPIV3Schema"]))
    return tuple(found)


def crds_for(api_version: str, kind: str) -> list[CrdVersion]:
    """Every upstream CRD version defining ``kind`` at ``api_version`` (several files may ship one CRD)."""
    group, _, version = api_version.rpartition("/")
    return [c for c in crd_versions() if (c.group, c.kind, c.version) == (group, kind, version)]


def structural(schema: dict, *, root: bool = False) -> dict:
    """An OpenAPI v3 structural schema as a JSON schema that refuses what the API server would prune."""
    s = {k: v for k, v in schema.items() if not k.startswith("x-kubernetes-") and k != "nullable"}
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    if schema.get("x-kubernetes-int-or-string"):
        s.pop("type", None)
        s["type"] = ["integer", "string"]
    if schema.get("nullable") and isinstance(s.get("type"), str):
        s["type"] = [s["type"], "null"]
    if "properties" in s:
        s["properties"] = {k: structural(v) for k, v in s["properties"].items()}
    if isinstance(s.get("items"), dict):
        s["items"] = structural(s["items"])
    if isinstance(s.get("additionalProperties"), dict):
        s["additionalProperties"] = structural(s["additionalProperties"])
    for key in ("allOf", "anyOf", "oneOf"):
        if key in s:
            s[key] = [structural(x) for x in s[key]]
    if schema.get("x-kubernetes-embedded-resource"):
        s.setdefault("properties", {}).update(
            {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}})
    if root:
        # ObjectMeta is validated by the API server itself, not by the CRD's schema.
        s.setdefault("properties", {}).update(
            {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}})
    is_object = s.get("type") == "object" or (isinstance(s.get("type"), list) and "object" in s["type"])
    if is_object and not preserve and "additionalProperties" not in s:
        s["additionalProperties"] = False  # pruned on the server
    return s


def crd_problems(obj: dict) -> list[str]:
    """Why the API server would refuse or silently change ``obj``: unserved version, schema violations,
    fields it would prune. Empty when every CRD that defines it accepts it as sent."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    crds = crds_for(api_version, kind)
    if not crds:
        return [f"{kind} {api_version}: no upstream CRD in the schemas directory defines it"]
    problems = []
    for crd in crds:
        if not crd.served:
            problems.append(f"{kind} {api_version}: version not served by {crd.source}")
            continue
        validator = jsonschema.Draft7Validator(structural(crd.schema, root=True))
        for error in sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path)):
            path = ".".join(str(p) for p in error.absolute_path) or "(root)"
            problems.append(f"{kind} {obj['metadata'].get('name')} at {path}: {error.message} [{crd.source}]")
    return problems


# ---------------------------------------------------------------- Helm values


@dataclass(frozen=True)
class Chart:
    """A chart's values.yaml and values.schema.json (either may be missing) and its subcharts."""

    name: str
    values: dict | None
    schema: dict | None
    subcharts: dict[str, Chart]
    where: str


def _load(source: Source | None) -> Any:
    if source is None:
        return None
    text = source.file.read_text()
    return yaml.safe_load(text)  # JSON is YAML


def chart(name: str, version: str) -> Chart:
    """The pinned chart ``name`` at ``version`` (chart versions with or without the 'v')."""
    tags = {version, f"v{version.lstrip('v')}", version.lstrip("v")}
    rows = [s for s in manifest() if s.tag in tags]

    def at(directory: str) -> Chart:
        def file(basename: str) -> Source | None:
            return next((s for s in rows if s.path == f"{directory}/{basename}"), None)

        sub_names = {s.path[len(directory) + len("/charts/"):].split("/")[0] for s in rows
                     if s.path.startswith(f"{directory}/charts/")}
        values, schema = file("values.yaml"), file("values.schema.json")
        return Chart(directory.rsplit("/", 1)[-1], _load(values), _load(schema),
                     {n: at(f"{directory}/charts/{n}") for n in sorted(sub_names)},
                     str(values or schema or directory))

    directories = {s.path.rsplit("/", 1)[0] for s in rows if s.path.endswith(f"/{name}/values.yaml")}
    if len(directories) != 1:
        raise LookupError(f"chart {name} {version}: {len(directories)} values.yaml in the schemas directory")
    return at(directories.pop())


def leaf_paths(values: Any, prefix: tuple = ()) -> Iterator[tuple]:
    if isinstance(values, dict) and values:
        for k, v in values.items():
            yield from leaf_paths(v, (*prefix, k))
    else:
        yield prefix


def _schema_knows(schema: dict | None, path: tuple) -> bool:
    node = schema
    for key in path:
        if not isinstance(node, dict):
            return False
        props = node.get("properties") or {}
        if key in props:
            node = props[key]
        elif isinstance(node.get("additionalProperties"), dict) or node.get("additionalProperties") is True:
            return True
        else:
            return False
    return True


def values_problems(c: Chart, values: dict, prefix: str = "") -> list[str]:
    """Key paths of ``values`` the chart does not read, and what its values.schema.json refuses."""
    problems = []
    for path in leaf_paths(values):
        if path and path[0] in c.subcharts:
            continue  # checked against the subchart below
        node: Any = c.values
        for i, key in enumerate(path):
            if isinstance(node, dict) and key in node:
                node = node[key]
                if isinstance(node, dict) and not node:
                    break  # a free-form map ({} by default): any key below is the user's
                if not isinstance(node, dict):
                    break  # a leaf or list: set as a whole
            elif c.schema is not None and _schema_knows(c.schema, path[:i + 1]):
                break
            else:
                problems.append(f"{c.where}: {prefix}{'.'.join(path)}: the chart has no {'.'.join(path[:i + 1])!r}")
                break
    if c.schema is not None:
        merged = _merge(copy.deepcopy(c.values or {}), values)
        for error in jsonschema.Draft7Validator(c.schema).iter_errors(merged):
            path = ".".join(str(p) for p in error.absolute_path)
            problems.append(f"{c.where}: {prefix}{path}: {error.message}")
    for name, sub in c.subcharts.items():
        if isinstance(values.get(name), dict):
            problems += values_problems(sub, values[name], f"{prefix}{name}.")
    return problems


def _merge(base: dict, over: dict) -> dict:
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = v
    return base
