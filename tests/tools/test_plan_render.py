"""make plan / make render: what a reviewer reads must be complete and never carry a secret."""

import json
import tomllib
from pathlib import Path

import builders
import pytest
import yaml

import tools.mockrun
from tools import plan, render
from tools.mockrun import PLACEHOLDER

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lab_file(tmp_path_factory):
    """The test lab as a stack file: `--stack lab --stack-file <it>`, the way a user points at a copy."""
    return ["--stack", "lab", "--stack-file", str(builders.write_stack_file(tmp_path_factory.mktemp("stack"),
                                                                              builders.lab_stack(), "lab"))]


@pytest.fixture(scope="module")
def planned(tmp_path_factory, lab_file):
    out = tmp_path_factory.mktemp("plan")
    status = plan.main([*lab_file, "--out", str(out)])
    return status, out


def test_plan_exits_zero_and_writes_plan_and_policy_report(planned):
    status, out = planned
    assert status == 0
    document = json.loads((out / "plan.json").read_text())
    assert document["stack"] == "lab"
    assert document["resourceCount"] == len(document["resources"]) > 50
    report = json.loads((out / "policy-report.json").read_text())
    assert report  # the pack ran and said something about the lab
    # the pack's version as the CLI reports it (PulumiPolicy.yaml's), which is the project's
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert yaml.safe_load((REPO / "policies" / "PulumiPolicy.yaml").read_text())["version"] == project
    assert report["pack"] == {"name": "gpu-lab", "version": project}


def test_plan_records_parents_and_redacts_every_secret(planned):
    _, out = planned
    text = (out / "plan.json").read_text()
    document = json.loads(text)
    by_name = {r["name"]: r for r in document["resources"]}
    assert by_name["roce-vds"]["parent"] == "roce"
    assert by_name["vms-w01"]["parent"] == "vms"
    assert by_name["roce"]["parent"] is None
    # every placeholder secret the program was given shows up only as [secret]
    assert PLACEHOLDER not in text
    secret_holders = [r for r in document["resources"] if r["secretInputs"]]
    assert secret_holders, "the lab passes secrets to some resources"
    for r in secret_holders:
        for path in r["secretInputs"]:
            node = r["inputs"]
            for step in path.replace("]", "").replace("[", ".").split("."):
                node = node[int(step)] if isinstance(node, list) else node[step]
            assert node == "[secret]", (r["name"], path)


def test_plan_tree_indents_children_under_parents():
    run = tools.mockrun.run_program(builders.lab_stack())
    lines = plan.tree_lines(run)
    fabric = lines.index("gpu-lab:vsphere:RoceFabric  roce")
    assert lines[fabric + 1].startswith("  ") and not lines[fabric].startswith(" ")
    assert len(lines) == len(run.resources)


def test_invalid_configuration_exits_2_with_every_problem(tmp_path, capsys):
    config = builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.vds.lacp", True)
    config = builders.with_value(config, "gpu-lab:vsphere.workers.sizing.cpus", 2)
    stack_file = builders.write_stack_file(tmp_path, config, "broken")
    assert plan.main(["--stack-file", str(stack_file), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "vsphere.vds.lacp" in err and "vsphere.workers.sizing.cpus" in err
    assert not (tmp_path / "plan.json").exists()


def test_unknown_stack_names_the_stacks_there(tmp_path, capsys):
    assert plan.main(["--stack", "nope", "--out", str(tmp_path)]) == 2
    assert "Pulumi.nope.yaml" in capsys.readouterr().err


def test_render_writes_the_documented_layout(tmp_path, lab_file):
    assert render.main([*lab_file, "--out", str(tmp_path)]) == 0
    files = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    for expected in ["plan.json", f"switch/{builders.SWITCH}.onyx.conf", f"switch/{builders.SWITCH}.onyx.revert"]:
        assert expected in files
    kubernetes = [f for f in files if f.startswith("kubernetes/")]
    assert kubernetes, files
    for name in kubernetes:
        text = (tmp_path / name).read_text()
        assert PLACEHOLDER not in text or "Secret" in text
        assert ": 1.0\n" not in text  # whole numbers stay integers


def test_render_leaves_helm_releases_and_remote_manifests_to_plan_json(tmp_path, lab_file):
    assert render.main([*lab_file, "--out", str(tmp_path)]) == 0
    kinds = {yaml_kind(p) for p in (tmp_path / "kubernetes").glob("*.yaml")}
    assert "ConfigFile" not in kinds and "Release" not in kinds
    document = json.loads((tmp_path / "plan.json").read_text())
    releases = [r for r in document["resources"] if r["type"] == "kubernetes:helm.sh/v3:Release"]
    assert releases and all({"chart", "version"} <= set(r["inputs"]) for r in releases)


def yaml_kind(path):
    import yaml
    return yaml.safe_load(path.read_text())["kind"]


def test_two_plans_in_fresh_processes_are_byte_identical(tmp_path, lab_file):
    import subprocess
    import sys

    outs = []
    for run in ("a", "b"):
        out = tmp_path / run
        proc = subprocess.run([sys.executable, "-m", "tools.plan", *lab_file, "--out", str(out)],
                              cwd=tools.mockrun.REPO, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        outs.append(out)
    for name in ("plan.json", "policy-report.json"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    text = (outs[0] / "plan.json").read_text()
    assert " object at 0x" not in text
    urns = [r["urn"] for r in json.loads(text)["resources"]]
    assert urns == sorted(urns)


def test_assets_show_kind_size_and_sha256():
    import hashlib

    import pulumi

    described = plan.describe_assets({"files": pulumi.asset.AssetArchive({"b": pulumi.asset.StringAsset("xy")}),
                                      "remote": pulumi.asset.RemoteAsset("https://example.invalid/a")})
    assert described == {
        "files": {"archive": "AssetArchive", "assets": {
            "b": {"asset": "StringAsset", "size": 2, "sha256": hashlib.sha256(b"xy").hexdigest()}}},
        "remote": {"asset": "RemoteAsset", "uri": "https://example.invalid/a"},
    }


STACKS = {
    "lab": builders.lab_stack,
    "openshift": builders.baremetal_stack,
    "bitfusion": lambda: builders.with_value(builders.lab_stack(), "gpu-lab:addons.bitfusion",
                                             {"enabled": True, "clientImage": "registry.lab.local:5000/bf:1"}),
}


@pytest.mark.parametrize("stack", list(STACKS))
def test_render_works_offline_for_every_stack_and_secrets_keep_their_keys(stack, tmp_path):
    import kubernetes_validate
    import yaml

    # Kubernetes 1.33: OpenShift 4.20's (as tests/addons/test_addons_schema.py).
    args = ["--stack", stack, "--stack-file", str(builders.write_stack_file(tmp_path, STACKS[stack](), stack))]
    out = tmp_path / "out"
    assert render.main([*args, "--out", str(out)]) == 0
    secrets = [yaml.safe_load(p.read_text()) for p in (out / "kubernetes").glob("secret-*.yaml")] \
        if (out / "kubernetes").is_dir() else []
    if stack == "openshift":
        return  # no add-ons on the bare-metal example
    assert secrets
    for manifest in secrets:
        kubernetes_validate.validate(manifest, "1.33", strict=True)
        body = manifest.get("stringData") or manifest.get("data")
        assert isinstance(body, dict) and body, manifest
        assert PLACEHOLDER not in yaml.safe_dump(manifest)
    if stack == "bitfusion":
        token = next(m for m in secrets if m["metadata"]["name"] == "bitfusion-secret")
        assert set(token["stringData"]) == {"ca.crt", "client.yaml", "servers.conf"}
        assert set(token["stringData"].values()) == {"[secret]"}


def test_a_dockerconfigjson_is_redacted_inside_its_structure_in_string_data_and_in_data():
    import base64

    from tools.sdk_access import SECRET_SIG, SIG_KEY

    def secret(value):
        return {SIG_KEY: SECRET_SIG, "value": value}

    config = json.dumps({"auths": {"registry.lab.local:5000": {"auth": "dXNlcjpwYXNz", "email": "ops@lab"}},
                         "HttpHeaders": {"User-Agent": "x"}})
    expected = {"auths": {"registry.lab.local:5000": {"auth": base64.b64encode(b"[secret]:[secret]").decode(),
                                                      "email": "[secret]"}},
                "HttpHeaders": {"User-Agent": "[secret]"}}
    as_string = render.redact_per_key({"stringData": secret({".dockerconfigjson": config})})
    assert json.loads(as_string["stringData"][".dockerconfigjson"]) == expected
    as_data = render.redact_per_key({"data": secret({".dockerconfigjson": base64.b64encode(config.encode()).decode()})})
    assert json.loads(base64.b64decode(as_data["data"][".dockerconfigjson"])) == expected
    # what is not a docker config tells nothing of itself; a value that is not secret stays as it is
    assert render.redact_per_key({"stringData": secret({".dockerconfigjson": "user:pass"})}) == {
        "stringData": {".dockerconfigjson": '{"auths": {}}'}}
    assert render.redact_per_key({"stringData": {".dockerconfigjson": config}}) == {"stringData": {".dockerconfigjson": config}}
