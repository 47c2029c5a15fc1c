"""The program's vSphere and command resources through the real provider plugins' Check.

The plugins validate inputs offline, with no vCenter and no SSH: pulumi-vsphere's Check runs the
terraform provider's validators (adapter types, hardware versions, ...), pulumi-command's Check and
preview Create judge the command resources. Each resource the program registers, as the engine
would send it, goes through them. The plugins are the ones `pulumi plugin install` put in the
Pulumi home (the versions requirements.txt pins); where they are not installed, this skips with
the reason. Nothing here dials a lab address: connection hosts are rewritten to loopback, and
preview Create does not connect.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
from pathlib import Path

import builders
import pytest
from google.protobuf import struct_pb2

from tools import sdk_access
from tools.mockrun import LabMocks, run_program

grpc = pytest.importorskip("grpc")
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc  # noqa: E402

pytestmark = pytest.mark.built_by_hand

ROOT = Path(__file__).resolve().parents[2]
PINS = dict(re.findall(r"^pulumi-(vsphere|command)==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M))


def plugin_binary(name: str) -> Path:
    version = PINS[name]
    homes = [Path(os.environ["PULUMI_HOME"])] if os.environ.get("PULUMI_HOME") else []
    homes += [Path(os.environ.get("PULUMI_CACHE_DIR", ROOT / ".cache" / "pulumi")).resolve() / "home", Path.home() / ".pulumi"]
    for home in homes:
        binary = home / "plugins" / f"resource-{name}-v{version}" / f"pulumi-resource-{name}"
        if binary.is_file():
            return binary
    pytest.skip(f"the {name} {version} provider plugin is not installed (looked in "
                f"{', '.join(str(h / 'plugins') for h in homes)}); `pulumi plugin install resource {name} {version}`")


@pytest.fixture(scope="module", params=["vsphere", "command"])
def provider(request):
    binary = plugin_binary(request.param)
    # The engine address is only used for logging; nothing listens there and nothing is logged.
    proc = subprocess.Popen([str(binary), "127.0.0.1:1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, text=True)
    try:
        port = int(proc.stdout.readline())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = provider_pb2_grpc.ResourceProviderStub(channel)
            if request.param == "command":
                stub.Configure(provider_pb2.ConfigureRequest(acceptSecrets=True, acceptResources=True,
                                                             args=struct_pb2.Struct()), timeout=30)
            yield request.param, stub
    finally:
        proc.kill()
        proc.wait(timeout=10)


def wire(value):
    """A recorded input as the engine sends it (unknowns, assets and secrets in their wire form)."""
    if isinstance(value, sdk_access.Unknown):
        return sdk_access.UNKNOWN
    if isinstance(value, dict):
        return {k: wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [wire(v) for v in value]
    if hasattr(value, "text") and type(value).__name__ == "StringAsset":
        return {sdk_access.SIG_KEY: sdk_access.ASSET_SIG, "text": value.text}
    return value


def loopback(props: dict) -> dict:
    props = copy.deepcopy(props)
    conn = props.get("connection")
    if isinstance(conn, dict):
        target = conn["value"] if sdk_access.SIG_KEY in conn else conn
        target["host"] = "127.0.0.1"
    return props


class InstallerNotRun(LabMocks):
    """A first preview: the ignition step has not run, so its stdout is unknown."""

    def new_resource(self, args):
        id_, outputs = super().new_resource(args)
        if args.typ == "command:local:Command" and args.name.endswith("-ignition"):
            outputs.pop("stdout", None)
        return id_, outputs


@pytest.fixture(scope="module")
def runs(monkeypatch_module):
    import tools.mockrun as mockrun

    lab = builders.lab_stack()
    customized = {k: v for k, v in copy.deepcopy(lab).items() if k not in ("gpu-lab:openshift", "gpu-lab:addons")}
    found = {"lab": run_program(lab), "lab-customized": run_program(customized),
             "openshift": run_program(builders.baremetal_stack(), stack="openshift")}
    monkeypatch_module.setattr(mockrun, "LabMocks", InstallerNotRun)
    found["lab-first-preview"] = run_program(lab, preview=True)
    return found


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_every_resource_passes_the_real_provider_check(provider, runs):
    name, stub = provider
    failures, checked = [], 0
    for stack, run in runs.items():
        for r in run.resources:
            if not r.custom or not r.type.startswith(f"{name}:"):
                continue
            news = struct_pb2.Struct()
            news.update(loopback(wire(r.inputs)))
            response = stub.Check(provider_pb2.CheckRequest(urn=r.urn, news=news, olds=struct_pb2.Struct(),
                                                            randomSeed=b"0" * 32), timeout=60)
            failures += [f"{stack} {r.name}: {f.property} {f.reason}" for f in response.failures]
            if name == "command" and not response.failures:
                # pulumi-command's preview Create works out the outputs without connecting.
                stub.Create(provider_pb2.CreateRequest(urn=r.urn, properties=response.inputs, preview=True),
                            timeout=60)
            checked += 1
    assert checked > 0
    assert failures == []
