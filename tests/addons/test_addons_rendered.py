"""What `make render` writes under kubernetes/ is what its consumer accepts, secrets redacted.

Every rendered manifest of the lab, Bitfusion and plain-Kubernetes stacks: core kinds against the
Kubernetes schemas (kubernetes-validate, strict), custom resources against the operators' CRDs
(upstream_schemas). The registry Secret's `.dockerconfigjson` stays a docker config after
redaction: the API server parses it as JSON (kubernetes pkg/apis/core/validation, ValidateSecret:
"[secret]" gave `invalid character 's' looking for beginning of value`), and the kubelet decodes
each registry's `auth` as base64("user:password") (pkg/credentialprovider/config.go,
decodeDockerConfigFieldAuth).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import builders
import kubernetes_validate
import pytest
import upstream_schemas as upstream
import yaml

from tools import render
from tools.mockrun import PLACEHOLDER

KUBERNETES_VERSION = "1.33"  # OpenShift 4.20's Kubernetes, as in test_addons_schema.py
CORE = ("v1", "apps/v1", "batch/v1", "rbac.authorization.k8s.io/v1", "admissionregistration.k8s.io/v1")
# OpenShift's own API, not an operator's CRD: no upstream schema in the schemas directory.
PLATFORM_KINDS = {("security.openshift.io/v1", "SecurityContextConstraints")}
STACKS = {
    "lab": builders.lab_stack,
    "bitfusion": lambda: builders.with_value(builders.lab_stack(), "gpu-lab:addons.bitfusion",
                                             {"enabled": True, "clientImage": "registry.lab.local:5000/bf:1"}),
    "kubernetes": lambda: {k: v for k, v in builders.lab_stack().items() if k != "gpu-lab:openshift"},
}


@pytest.fixture(scope="module", params=list(STACKS))
def rendered(request, tmp_path_factory) -> list[dict]:
    directory = tmp_path_factory.mktemp(f"render-{request.param}")
    stack_file = builders.write_stack_file(directory, STACKS[request.param](), request.param)
    out = directory / "out"
    assert render.main(["--stack", request.param, "--stack-file", str(stack_file), "--out", str(out)]) == 0
    return [yaml.safe_load(path.read_text()) for path in sorted(Path(out, "kubernetes").glob("*.yaml"))]


def test_every_rendered_manifest_is_valid_for_its_consumer(rendered):
    failures = []
    for m in rendered:
        where = f"{m['kind']} {m['metadata']['name']}"
        if m["apiVersion"] in CORE:
            try:
                kubernetes_validate.validate(m, KUBERNETES_VERSION, strict=True)
            except kubernetes_validate.ValidationError as err:
                failures.append(f"{where}: {err.message}")
        elif (m["apiVersion"], m["kind"]) not in PLATFORM_KINDS:
            failures += upstream.crd_problems(m)
    assert len(rendered) > 20 and failures == []


def test_the_registry_secret_stays_a_docker_config_with_its_credentials_redacted(rendered):
    (pull,) = [m for m in rendered if m["kind"] == "Secret" and m["type"] == "kubernetes.io/dockerconfigjson"]
    assert set(pull["stringData"]) == {".dockerconfigjson"}
    config = json.loads(pull["stringData"][".dockerconfigjson"])
    # the registries stay (the offline placeholder's), every credential is the marker
    assert config == {"auths": {"registry.invalid": {"auth": base64.b64encode(b"[secret]:[secret]").decode()}}}
    user, _, password = base64.b64decode(config["auths"]["registry.invalid"]["auth"]).decode().partition(":")
    assert (user, password) == ("[secret]", "[secret]")
    assert PLACEHOLDER not in yaml.safe_dump(pull)


def test_every_other_secret_keeps_its_keys_with_marker_values(rendered):
    for m in rendered:
        if m["kind"] == "Secret" and m.get("type") != "kubernetes.io/dockerconfigjson":
            body = m.get("stringData") or {k: base64.b64decode(v).decode() for k, v in (m.get("data") or {}).items()}
            assert body and set(body.values()) == {"[secret]"}, m["metadata"]["name"]
