"""The identity guard under the real engine: no `--target`, `--replace`, refresh or multi-key edit gets
an edit past it that a running lab cannot take.

A small project stands in for the lab: the real `LabIdentity` and `guard_deployed` of
components/dynamic/guard.py, beside a dynamic resource `payload` that writes its value to a file when it
is created or updated (what a step does to the lab). The engine skips `Check` for resources that
are not targeted (pulumi/pulumi pkg/resource/deploy/step_generator.go: "If not targeted, stub out
the provider check") and calls it without the old inputs for a resource targeted for replacement;
this test shows both holes with the program's own guard switched off, then that the guard closes
them. Needs the engine (`make setup-pulumi`) and nothing else: the dynamic providers run in the
engine's own pulumi-python plugin, the state is a file backend.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("PULUMI_CACHE_DIR", ROOT / ".cache" / "pulumi"))

PROGRAM = '''
import pulumi
from pathlib import Path
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

from components.dynamic.guard import OUTPUT, LabIdentity, guard_deployed, identity_digest, read_deployed_state
from components.dynamic.provider import GUARD, explicit_provider
from components.identity_rules import CLUSTER_KEYS

config = pulumi.Config("guard")
cluster = {key: None for key in CLUSTER_KEYS}
cluster["clusterName"] = config.require("clusterName")
identity = {"cluster": cluster, "vsphere": None, "bareMetal": {},
            "helper": {"address": config.require("helperAddress"), "port": config.require_int("helperPort"),
                       "user": "root"}}
if config.get_bool("programGuard") is not False:
    guard_deployed("lab-identity", identity, read_deployed_state())
LabIdentity("lab-identity", identity, pulumi.ResourceOptions(provider=explicit_provider(GUARD)))
pulumi.export(OUTPUT, identity_digest(identity))  # as __main__.py does: a deployed stack has outputs


class _Payload(ResourceProvider):
    def create(self, props):
        Path(props["path"]).write_text(props["value"])
        return CreateResult("payload", props)

    def diff(self, _id, olds, news):
        return DiffResult(changes=olds.get("value") != news.get("value"))

    def update(self, _id, olds, news):
        Path(news["path"]).write_text(news["value"])
        return UpdateResult(news)


class Payload(Resource):
    def __init__(self, name, path, value, protect=False):
        super().__init__(_Payload(), name, {"path": path, "value": value}, pulumi.ResourceOptions(protect=protect))


Payload("payload", config.require("payloadFile"), config.require("value"))
if config.get_bool("withProtected") is not False:
    Payload("protected", config.require("payloadFile") + ".protected", "kept", protect=True)
'''


class Project:
    def __init__(self, work: Path):
        self.dir = work / "project"
        self.dir.mkdir(parents=True)
        (work / "state").mkdir()
        self.payload = work / "payload.txt"
        (self.dir / "__main__.py").write_text(PROGRAM)
        (self.dir / "Pulumi.yaml").write_text(yaml.safe_dump({
            "name": "guard", "runtime": {"name": "python", "options": {"virtualenv": str(ROOT / ".venv")}}}))
        self.env = {**os.environ, "PATH": f"{CACHE}/bin:{os.environ['PATH']}", "PULUMI_HOME": str(CACHE / "home"),
                    "PULUMI_SKIP_UPDATE_CHECK": "1", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
                    "PULUMI_BACKEND_URL": f"file://{work / 'state'}", "PULUMI_CONFIG_PASSPHRASE": "guard",
                    "PYTHONPATH": str(ROOT)}
        self.config = {"guard:clusterName": "kub1", "guard:helperAddress": "10.0.0.5", "guard:helperPort": 22,
                       "guard:value": "v1", "guard:payloadFile": str(self.payload)}
        self.pulumi("stack", "init", "guard")
        self.write()

    def write(self) -> None:
        (self.dir / "Pulumi.guard.yaml").write_text(yaml.safe_dump({"config": self.config}))

    def pulumi(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        extra = ["--non-interactive"] if args[0] in ("up", "preview", "refresh") else []
        done = subprocess.run(["pulumi", *args, *extra], cwd=self.dir, env=self.env, capture_output=True, text=True,
                              timeout=600)
        if check and done.returncode != 0:
            raise AssertionError(f"pulumi {' '.join(args)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
        return done

    def urn(self, name: str) -> str:
        resources = json.loads(self.pulumi("stack", "export").stdout)["deployment"]["resources"]
        return next(r["urn"] for r in resources if r["urn"].endswith(f"::{name}"))

    def edit(self, **values) -> None:
        self.config.update({f"guard:{k}": v for k, v in values.items()})
        self.write()


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    if not (CACHE / "bin" / "pulumi").exists():
        pytest.skip(f"no Pulumi engine in {CACHE}: run make setup-pulumi")
    project = Project(tmp_path_factory.mktemp("guard"))
    project.pulumi("up", "--yes", "--skip-preview")
    assert project.payload.read_text() == "v1"
    return project


def _refused(done: subprocess.CompletedProcess) -> str:
    assert done.returncode != 0, done.stdout
    return done.stdout + done.stderr


def test_without_the_programs_guard_the_engine_skips_the_check_under_target(project):
    """The hole: the cluster renamed and the payload changed; `--target payload` runs the payload's
    update, and lab-identity's check never runs. (A plain `up` is refused by the check.)"""
    project.edit(clusterName="kub2", value="v2", programGuard=False)
    try:
        message = _refused(project.pulumi("up", "--yes", check=False))
        assert "openshift.clusterName: 'kub1' -> 'kub2'" in message
        assert project.payload.read_text() == "v1"
        project.pulumi("up", "--yes", "--skip-preview", "--target", project.urn("payload"))
        assert project.payload.read_text() == "v2"  # the edit got past the check
    finally:
        project.edit(clusterName="kub1", value="v1", programGuard=True)
        project.pulumi("up", "--yes", "--skip-preview")
        assert project.payload.read_text() == "v1"


@pytest.mark.parametrize("how", ["target", "target-skip-preview", "replace-identity", "target-replace",
                                 "refresh-first", "preview-target"])
def test_the_guard_holds_whatever_the_engine_is_told(project, how):
    project.edit(clusterName="kub2", helperAddress="10.0.0.6", value="v2")  # several keys at once
    try:
        identity, payload = project.urn("lab-identity"), project.urn("payload")
        if how == "refresh-first":
            project.pulumi("refresh", "--yes", "--skip-preview")
        args = {
            "target": ("up", "--yes", "--target", payload),
            "target-skip-preview": ("up", "--yes", "--skip-preview", "--target", payload),
            "replace-identity": ("up", "--yes", "--replace", identity),
            "target-replace": ("up", "--yes", "--target-replace", identity),
            "refresh-first": ("up", "--yes", "--refresh"),
            "preview-target": ("preview", "--target", payload),
        }[how]
        message = _refused(project.pulumi(*args, check=False))
        assert "a running lab cannot take this edit" in message
        assert "openshift.clusterName: 'kub1' -> 'kub2'" in message
        assert "openshift.helper.address: '10.0.0.5' -> '10.0.0.6'" in message and "nameserver" in message
        assert project.payload.read_text() == "v1"  # no step ran
        state = json.loads(project.pulumi("stack", "export").stdout)["deployment"]["resources"]
        recorded = next(r for r in state if r["urn"] == identity)
        assert recorded["outputs"]["cluster"]["clusterName"] == "kub1"
    finally:
        project.edit(clusterName="kub1", helperAddress="10.0.0.5", value="v1")


def test_an_edit_the_lab_can_take_goes_through(project):
    project.edit(value="v3")
    project.pulumi("up", "--yes", "--target", project.urn("payload"))
    assert project.payload.read_text() == "v3"
    project.edit(value="v1")
    project.pulumi("up", "--yes", "--skip-preview")


def test_a_protected_delete_fails_the_real_preview_as_make_diff_says(project):
    """make diff marks the delete of a protected resource `refused` and exits 1
    (tests/tools/test_diff_program.py); the real preview fails on it the same way."""
    from tools.diff import Planned, steps_between

    project.edit(withProtected=False)
    try:
        message = _refused(project.pulumi("preview", check=False))
        assert "protected" in message and project.urn("protected") in message
        old = Planned(urn=project.urn("protected"), type="pulumi-python:dynamic:Resource", name="protected",
                      parent="", custom=True, provider="", id="payload", inputs={}, outputs={}, protect=True)
        (step,) = steps_between([old], [])
        assert step.op == "delete" and step.refused and "refused" in step.effects
    finally:
        project.edit(withProtected=True)
