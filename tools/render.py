"""`make render STACK=lab OUT=dir`: write every generated artifact for review, no credentials needed.

Layout under OUT: plan.json; switch/<switch>.<os>.conf|.revert; openshift/... (install-config
with the pull secret redacted, dnsmasq, HAProxy, PXE, pointer ignition); kubernetes/*.yaml (every
Kubernetes object the program registers, secrets redacted).
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from components.addons.render import render_files as render_addons
from components.config import gpu_lab_sections, load_lab
from components.model import ConfigError, whole_numbers
from components.openshift.render import render_files as render_openshift
from components.switch.render import render_files as render_switch
from tools.mockrun import Run, run_program
from tools.plan import write_plan
from tools.sdk_access import is_secret_value
from tools.stackfile import load_stack_config, offline_secrets

KUBERNETES_PREFIX = "kubernetes:"
# Registered by pulumi-kubernetes but not Kubernetes objects themselves: Helm releases and
# remote manifests are fetched by the provider at preview time; plan.json lists them (chart,
# repository, version; manifest URL).
NOT_OBJECT_PREFIXES = ("kubernetes:helm.sh/", "kubernetes:yaml/", "pulumi:providers:")


def rendered_sections(config: dict[str, Any]) -> dict[str, str]:
    """Each section's files (components/<section>/render.py: render_files), from the lab plan."""
    plan = load_lab(gpu_lab_sections(config)).plan
    files: dict[str, str] = {}
    if plan.cluster is not None:
        files.update(render_openshift(plan.cluster))
    files.update(render_switch(list(plan.switches)))
    files.update(render_addons(plan.addons))
    return files


def kubernetes_manifest(inputs: dict[str, Any], type_token: str) -> dict[str, Any]:
    """A manifest from a pulumi-kubernetes resource's inputs (apiVersion/kind from the token)."""
    group_version, kind = type_token[len(KUBERNETES_PREFIX):].rsplit(":", 1)
    api_version = group_version[len("core/"):] if group_version.startswith("core/") else group_version
    manifest = {"apiVersion": api_version, "kind": kind}
    manifest.update({k: v for k, v in inputs.items() if k not in ("apiVersion", "kind") and not k.startswith("__")})
    return manifest


REDACTED = "[secret]"
DOCKER_CONFIG_KEY = ".dockerconfigjson"  # a kubernetes.io/dockerconfigjson Secret's one key


def redact_per_key(value: Any, secret: bool = False, base64_leaves: bool = False) -> Any:
    """Inputs with each secret leaf redacted, keeping the structure (a Secret's keys stay visible).

    A Secret's `data` values must be base64, so theirs are redacted as base64 of the marker; a
    `.dockerconfigjson` value stays a docker config (redact_docker_config).
    """
    if is_secret_value(value):
        return redact_per_key(value["value"], True, base64_leaves)
    if isinstance(value, dict):
        return {k: _redact_docker_config_value(v, base64_leaves)
                if k == DOCKER_CONFIG_KEY and _is_secret_text(v, secret)
                else redact_per_key(v, secret, base64_leaves or k == "data") for k, v in value.items()}
    if isinstance(value, list):
        return [redact_per_key(v, secret, base64_leaves) for v in value]
    if not secret:
        return value
    return _b64(REDACTED) if base64_leaves else REDACTED


def redact_docker_config(text: str) -> str:
    """A docker config.json with its credentials redacted per key, still one its consumers read.

    The API server parses a .dockerconfigjson as JSON (kubernetes pkg/apis/core/validation,
    ValidateSecret); the kubelet reads `auths` as registry -> entry and decodes an entry's `auth`
    as base64("user:password") (pkg/credentialprovider/config.go, decodeDockerConfigFieldAuth). So
    registries and keys stay, every value becomes the marker, and `auth` the base64 of
    "marker:marker". What is not such a document says nothing of itself: an empty one.
    """
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("auths"), dict):
        return json.dumps({"auths": {}})
    redacted: dict[str, Any] = {key: _markers(value) for key, value in doc.items() if key != "auths"}
    redacted["auths"] = {
        registry: {key: _b64(f"{REDACTED}:{REDACTED}") if key == "auth" else _markers(value)
                   for key, value in entry.items()} if isinstance(entry, dict) else _markers(entry)
        for registry, entry in doc["auths"].items()}
    return json.dumps(redacted, sort_keys=True)


def _is_secret_text(value: Any, secret: bool) -> bool:
    if is_secret_value(value):
        return _is_secret_text(value["value"], True)
    return secret and isinstance(value, str)


def _redact_docker_config_value(value: Any, base64_leaves: bool) -> str:
    while is_secret_value(value):
        value = value["value"]
    if base64_leaves:
        try:
            return _b64(redact_docker_config(base64.b64decode(value, validate=True).decode()))
        except (ValueError, UnicodeDecodeError):
            return _b64(redact_docker_config(""))
    return redact_docker_config(value)


def _markers(value: Any) -> Any:
    """Every leaf of a plain structure replaced by the marker; dicts and lists stay."""
    if isinstance(value, dict):
        return {k: _markers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_markers(v) for v in value]
    return REDACTED


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def kubernetes_files(run: Run) -> dict[str, str]:
    files: dict[str, str] = {}
    for r in run.resources:
        if not r.type.startswith(KUBERNETES_PREFIX) or r.type.startswith(NOT_OBJECT_PREFIXES):
            continue
        manifest = kubernetes_manifest(whole_numbers(redact_per_key(r.inputs)), r.type)
        kind = manifest["kind"].lower()
        name = (manifest.get("metadata") or {}).get("name") or r.name
        namespace = (manifest.get("metadata") or {}).get("namespace")
        stem = "-".join(x for x in (kind, namespace, name) if x)
        files[f"kubernetes/{_safe(stem)}.yaml"] = yaml.safe_dump(manifest, sort_keys=False)
    return files


def _safe(stem: str) -> str:
    return re.sub(r"[^a-z0-9.-]+", "-", stem.lower())


def render(stack: str, out: Path, stack_file: Path | None = None,
           secrets: dict[str, Any] | None = None) -> list[Path]:
    """Write every file of the stack under `out`; `secrets` replaces the offline placeholders (tests)."""
    config = load_stack_config(stack, stack_file)
    run = run_program(config, stack=stack, secrets=offline_secrets(config) if secrets is None else secrets)
    written = [write_plan(run, out)]
    for rel, content in {**rendered_sections(config), **kubernetes_files(run)}.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        if path.suffix == ".sh":
            path.chmod(0o755)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="lab")
    parser.add_argument("--stack-file", type=Path, help="read this file instead of Pulumi.<stack>.yaml")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    out = args.out or Path("build") / args.stack
    try:
        written = render(args.stack, out, args.stack_file)
    except Exception as err:
        if isinstance(err, ConfigError) or type(err).__name__ == "RunError":
            print(f"error: {err}", file=sys.stderr)
            return 2
        raise
    for path in sorted(written):
        print(path)
    print(f"{len(written)} files written under {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
