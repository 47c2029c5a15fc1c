"""Run the Pulumi program offline under `pulumi.runtime.set_mocks` and record what it registers.

This is what `make plan`, `make render`, `make bench` and the program-level tests share. The
mocks answer the vSphere look-ups (datacenter, hosts, template, ...) with made-up ids and give
every resource plausible computed outputs, so the whole program runs with no vCenter, no
cluster and no credentials: every secret key is given a placeholder value that stays marked secret.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import get_root_resource  # noqa: F401  (tests compare the root Stack across runs)
from pulumi.runtime.mocks import MockMonitor

from components.runtime_tuning import relaxed_gc
from tools.sdk_access import deserialize_properties, is_secret_value, stack_exports

REPO = Path(__file__).resolve().parent.parent
ROOT_STACK_TYPE = "pulumi:pulumi:Stack"
PROJECT = "gpu-lab"
PLACEHOLDER = "<redacted>"
# Secrets whose format the program checks get a placeholder of that format, still carrying PLACEHOLDER.
FORMATTED_PLACEHOLDERS = {
    "gpu-lab:pullSecret": json.dumps({"auths": {"registry.invalid": {"auth": PLACEHOLDER}}}),
    "gpu-lab:registryAuth": json.dumps({"auths": {"registry.invalid": {"auth": PLACEHOLDER}}}),
    # an ed25519 public key of 32 zero bytes
    "gpu-lab:sshPublicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA "
                            + PLACEHOLDER,
}

runs_in_this_process = 0  # `make bench` refuses to measure in a process that already ran a stack


@dataclass
class Recorded:
    """One registered resource as the engine would see it."""

    type: str
    name: str
    urn: str
    parent_urn: str
    custom: bool
    inputs: dict[str, Any]
    outputs: dict[str, Any] = field(default_factory=dict)
    id: str = ""  # the mocks' made-up id (custom resources)
    provider: str = ""  # an explicit provider's reference ("<urn>::<id>"); empty for the default provider
    # The resource options as the SDK sent them in the RegisterResourceRequest (what the engine acts on):
    protect: bool = False
    retain_on_delete: bool = False
    delete_before_replace: bool | None = None  # None: not set, the provider decides
    ignore_changes: list[str] = field(default_factory=list)
    replace_on_changes: list[str] = field(default_factory=list)
    aliases: list[dict[str, Any]] = field(default_factory=list)
    """Each {"urn": ...} or a spec {"name", "type", "stack", "project", "parentUrn" | "noParent"} (fields set only)."""
    dependencies: list[str] = field(default_factory=list)
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    """Input key -> URNs its value came from."""
    additional_secret_outputs: list[str] = field(default_factory=list)
    deleted_with: str = ""

    @property
    def provider_name(self) -> str | None:
        return self.provider.split("::")[-2] if self.provider else None

    @property
    def parent_name(self) -> str | None:
        if not self.parent_urn or "::pulumi:pulumi:Stack::" in self.parent_urn:
            return None
        return self.parent_urn.rsplit("::", 1)[-1]

    def plain(self) -> dict[str, Any]:
        """Inputs with secret wrappers removed (for assertions in tests)."""
        return unwrap_secrets(self.inputs)

    def redacted(self) -> dict[str, Any]:
        """Inputs with every secret replaced by a marker (for files people read)."""
        return redact_secrets(self.inputs)

    def secret_paths(self) -> list[str]:
        return list(_secret_paths(self.inputs, ""))


@dataclass
class Run:
    resources: list[Recorded]
    outputs: dict[str, Any]
    stack: str

    def of_type(self, type_token: str) -> list[Recorded]:
        return [r for r in self.resources if r.type == type_token]

    def named(self, name: str) -> Recorded:
        matches = [r for r in self.resources if r.name == name]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} resources named {name!r}")
        return matches[0]

    def by_urn(self, urn: str) -> Recorded:
        return next(r for r in self.resources if r.urn == urn)

    def children_of(self, name: str) -> list[Recorded]:
        parent = self.named(name)
        return [r for r in self.resources if r.parent_urn == parent.urn]


# ---------------------------------------------------------------- secrets in recorded inputs


def unwrap_secrets(value: Any) -> Any:
    if is_secret_value(value):
        return unwrap_secrets(value["value"])
    if isinstance(value, dict):
        return {k: unwrap_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap_secrets(v) for v in value]
    return value


def redact_secrets(value: Any) -> Any:
    if is_secret_value(value):
        return "[secret]"
    if isinstance(value, dict):
        return {k: redact_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_secrets(v) for v in value]
    return value


def _secret_paths(value: Any, path: str):
    if is_secret_value(value):
        yield path
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _secret_paths(v, f"{path}.{k}" if path else k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _secret_paths(v, f"{path}[{i}]")


# ---------------------------------------------------------------- mocks


class LabMocks(pulumi.runtime.Mocks):
    """Plausible ids and computed outputs for the providers the program uses."""

    def __init__(self, deployed: Mapping[str, Any] | None = None) -> None:
        self.counter = 0
        self.deployed = deployed or {}
        """URN -> {"type", "outputs"}: the last deployment's state, as the engine's builtin
        pulumi:pulumi:readStackResourceOutputs returns it (empty: a stack never deployed)."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.counter += 1
        # Made-up ids from the logical name, not the counter: registration order varies between
        # runs, and these ids flow into other resources' inputs (plan.json must not change).
        number = int(hashlib.sha256(args.name.encode()).hexdigest()[:4], 16)
        outputs = dict(args.inputs)
        kind = args.typ
        # spelled out, not provider_facts.VIRTUAL_MACHINE: tools/plan_tree.py runs this module on old
        # releases, whose components/ lack it
        if kind == "vsphere:index/virtualMachine:VirtualMachine":
            outputs.setdefault("moid", f"vm-{number}")
            outputs.setdefault("uuid", f"4213{number:04x}-0000-0000-0000-000000000000")
        elif kind == "vsphere:index/vnic:Vnic":
            # pulumi-vsphere ids a vmk as "<host id>_<device>"; the device is vSphere's choice.
            return f"{args.inputs.get('host', 'host')}_vmk1", outputs
        elif kind == "vsphere:index/distributedVirtualSwitch:DistributedVirtualSwitch":
            outputs.setdefault("configVersion", "1")
            outputs.setdefault("uuid", f"50 1a {number:04x} 00")
        elif kind == "vsphere:index/distributedPortGroup:DistributedPortGroup":
            outputs.setdefault("key", f"dvportgroup-{number}")
        elif kind == "command:local:Command" and args.name.endswith("-ignition"):
            # What `openshift-install create ignition-configs` would print, with placeholder content,
            # so the VMs' ignition and the add-ons' kubeconfig are not empty under mocks.
            try:
                from components.openshift.files.installer import placeholder_ignition_stdout
            except ModuleNotFoundError:  # make diff's base tree from before the openshift files were a package
                from components.openshift.files import placeholder_ignition_stdout  # type: ignore[attr-defined,no-redef]

            outputs["stdout"] = placeholder_ignition_stdout()
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        token, a = args.token, args.args
        if token == "pulumi:pulumi:readStackResourceOutputs":
            return {"name": a.get("stackName"), "outputs": dict(self.deployed)}
        if token == "pulumi:pulumi:readStackOutputs":  # a deployed stack has outputs (components/dynamic/guard.py)
            return {"name": a.get("name"), "outputs": {"labIdentity": "deployed"} if self.deployed else {}}
        if token == "vsphere:index/getDatacenter:getDatacenter":
            return {"id": f"datacenter-{a.get('name')}", "name": a.get("name")}
        if token == "vsphere:index/getHost:getHost":
            return {"id": f"host-{a.get('name')}", "name": a.get("name"), "resourcePoolId": f"resgroup-{a.get('name')}"}
        if token == "vsphere:index/getComputeCluster:getComputeCluster":
            # the cluster's root resource pool is the cluster's own: a renamed cluster moves its VMs
            return {"id": f"domain-c-{a.get('name')}", "name": a.get("name"),
                    "resourcePoolId": f"resgroup-{a.get('name')}"}
        if token == "vsphere:index/getDatastore:getDatastore":
            return {"id": f"datastore-{a.get('name')}", "name": a.get("name")}
        if token == "vsphere:index/getNetwork:getNetwork":
            return {"id": f"network-{a.get('name')}", "name": a.get("name"), "type": "Network"}
        if token == "vsphere:index/getVirtualMachine:getVirtualMachine":
            return {
                "id": f"4213abcd-template-{a.get('name')}",
                "name": a.get("name"),
                "guestId": "rhel8_64Guest",
                "scsiType": "pvscsi",
                "firmware": "efi",
                "networkInterfaceTypes": ["vmxnet3"],
                "disks": [{"size": 50, "eagerlyScrub": False, "thinProvisioned": True,
                           "label": "disk0", "unitNumber": 0}],
            }
        return {}


class RecordingMonitor(MockMonitor):
    """MockMonitor that also keeps each registration's parent and custom flag.

    `set_mocks` takes a MockMonitor for this; the public MockResourceArgs carry no parent.
    """

    def __init__(self, mocks: LabMocks) -> None:
        super().__init__(mocks)
        self.recorded: list[Recorded] = []

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        """The URN the engine gives (`resource.NewURN`, pulumi/pulumi sdk/go/common/resource/urn.go):
        the parent's whole qualified type before the type, none under the root Stack. The SDK's mock
        takes only the parent's last type and keeps the Stack's, so its URNs are not the engine's."""
        if parent:
            qualified = parent.split("::")[2]
            if qualified != ROOT_STACK_TYPE:
                type_ = f"{qualified}${type_}"
        return super().make_urn("", type_, name)

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            inputs = deserialize_properties(request.object)
            self.recorded.append(Recorded(
                type=request.type, name=request.name, urn=response.urn, parent_urn=request.parent,
                custom=bool(request.custom), inputs=inputs, provider=request.provider,
                **registered_options(request),
            ))
        return response


def registered_options(request: Any) -> dict[str, Any]:
    """A RegisterResourceRequest's resource options, as Recorded fields."""
    aliases: list[dict[str, Any]] = []
    for alias in request.aliases:  # the SDK sends specs when the monitor supports them (aliasSpecs)
        if alias.WhichOneof("alias") == "urn":
            aliases.append({"urn": alias.urn})
        else:
            spec = alias.spec
            entry = {k: getattr(spec, k) for k in ("name", "type", "stack", "project") if getattr(spec, k)}
            if spec.WhichOneof("parent") == "parentUrn":
                entry["parentUrn"] = spec.parentUrn
            elif spec.WhichOneof("parent") == "noParent":
                entry["noParent"] = spec.noParent
            aliases.append(entry)
    aliases += [{"urn": urn} for urn in request.aliasURNs]  # older SDKs: URNs only
    return {
        "protect": bool(request.protect),
        "retain_on_delete": bool(request.retainOnDelete),
        "delete_before_replace": bool(request.deleteBeforeReplace) if request.deleteBeforeReplaceDefined else None,
        "ignore_changes": list(request.ignoreChanges),
        "replace_on_changes": list(request.replaceOnChanges),
        "aliases": aliases,
        # depends_on and every resource whose outputs an input uses, as the engine orders by them
        "dependencies": sorted({*request.dependencies,
                                *(urn for deps in request.propertyDependencies.values() for urn in deps.urns)}),
        "property_dependencies": {k: list(v.urns) for k, v in sorted(request.propertyDependencies.items())},
        "additional_secret_outputs": list(request.additionalSecretOutputs),
        "deleted_with": request.deletedWith,
    }


# ---------------------------------------------------------------- stack config


def stack_file(stack: str) -> Path:
    return REPO / f"Pulumi.{stack}.yaml"


def stack_config(stack: str) -> dict[str, Any]:
    """The `config:` block of Pulumi.<stack>.yaml ({"ns:key": value})."""
    path = stack_file(stack)
    if not path.exists():
        raise FileNotFoundError(f"no stack file {path.name}; stacks here: "
                                + ", ".join(p.name[7:-5] for p in sorted(REPO.glob("Pulumi.*.yaml"))))
    data = yaml.safe_load(path.read_text()) or {}
    return dict(data.get("config") or {})


def placeholder_secrets(config: Mapping[str, Any]) -> dict[str, Any]:
    """A placeholder for every secret key, so the program runs without credentials."""
    from components.secrets import SECRET_KEYS

    values: dict[str, Any] = {}
    for _, namespace, key, is_object in SECRET_KEYS:
        if is_object:  # switchPasswords: one entry per configured switch
            switches = config.get(f"{PROJECT}:switches") or []
            values[f"{namespace}:{key}"] = {s.get("name"): PLACEHOLDER for s in switches if isinstance(s, dict)}
        else:
            values[f"{namespace}:{key}"] = FORMATTED_PLACEHOLDERS.get(f"{namespace}:{key}", PLACEHOLDER)
    return values


def run_under_mocks(program: Callable[[], Any], monitor: MockMonitor, *, stack: str = "lab",
                    preview: bool = False) -> None:
    """Run `program` under `monitor`'s mocks, public API only, and wait for every RPC and Output it
    left outstanding, and for the Output it returns, if any. Each call starts from a new root Stack
    (set_mocks alone keeps the previous one, and each run would also wait on every Output the
    previous runs left on it)."""
    pulumi.runtime.reset_options()
    pulumi.runtime.set_mocks(monitor.mocks, project=PROJECT, stack=stack, preview=preview, monitor=monitor)
    pulumi.runtime.test(program)()


def run_program(
    config: Mapping[str, Any],
    *,
    stack: str = "lab",
    secrets: Mapping[str, Any] | None = None,
    preview: bool = False,
    program_dir: Path | None = None,
    deployed: Run | Mapping[str, Mapping[str, Any]] | None = None,
) -> Run:
    """Run __main__.py's main() under mocks with the given config; return what it registered.

    `program_dir` holds the __main__.py to run (default: this checkout's); `make diff` runs an
    earlier commit's program with this harness.

    `deployed`: the stack's last deployment, as a lab that runs: an earlier run (its resources' outputs
    are what the program reads back from the state) or the state itself (URN -> {"type", "outputs"},
    as the engine's readStackResourceOutputs returns it); default a stack never deployed.

    `config` maps "namespace:key" to values (objects allowed) as in a stack file. `secrets`
    maps secret keys to values; by default every secret key gets a placeholder. Entries of
    `secrets` set to None are left unset (to test missing-secret errors).
    """
    if secrets is None:
        secrets = placeholder_secrets(config)
    all_config: dict[str, str] = {}
    for key, value in {**{k: v for k, v in config.items() if not _is_secure(v)}, **secrets}.items():
        if value is None:
            continue
        all_config[key] = value if isinstance(value, str) else json.dumps(value)
    secret_keys = [k for k, v in secrets.items() if v is not None]

    global runs_in_this_process
    runs_in_this_process += 1
    state = dict(deployed) if isinstance(deployed, Mapping) else {
        r.urn: {"type": r.type, "outputs": unwrap_secrets(r.outputs)} for r in (deployed.resources if deployed else [])}
    monitor = RecordingMonitor(LabMocks(state))
    exports = _StackExports()

    def run_main() -> pulumi.Output:
        program.main()
        return exports.watch()

    # The program's own process relaxes the collector before its imports (components/runtime_tuning.py).
    with relaxed_gc(), engine_config(all_config, secret_keys):
        program = load_program(program_dir or REPO)
        run_under_mocks(run_main, monitor, stack=stack, preview=preview)
        registered = monitor.get_registered_resources()
        for recorded in monitor.recorded:
            if recorded.urn in registered:
                recorded.outputs = registered[recorded.urn].state
                recorded.id = registered[recorded.urn].id or ""
    return Run(resources=monitor.recorded, outputs=exports.resolved(), stack=stack)


CONFIG_ENV = ("PULUMI_CONFIG", "PULUMI_CONFIG_SECRET_KEYS")


@contextmanager
def engine_config(config: Mapping[str, str], secret_keys: list[str]) -> Iterator[None]:
    """The stack config as the engine hands it to a program: PULUMI_CONFIG and PULUMI_CONFIG_SECRET_KEYS
    in the environment, loaded into pulumi.Config as the Python language host does (set_all_config of
    the two), for the block; the environment as it was afterwards."""
    before = {name: os.environ.get(name) for name in CONFIG_ENV}
    os.environ["PULUMI_CONFIG"] = json.dumps(dict(config))
    os.environ["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(list(secret_keys))
    try:
        pulumi.runtime.set_all_config(pulumi.runtime.get_config_env(), pulumi.runtime.get_config_secret_keys_env())
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_stack(stack: str, **kwargs) -> Run:
    return run_program(stack_config(stack), stack=stack, **kwargs)


def _is_secure(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"secure"}


def load_program(root: Path):
    """The __main__.py under `root` as a module (its imports done, main() not run)."""
    spec = importlib.util.spec_from_file_location("gpu_lab_program", root / "__main__.py")
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"no program at {root / '__main__.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _StackExports:
    """The program's stack exports, resolved: "[secret]" if secret, None if unknown in a preview."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.values: dict[str, Any] = {}
        self.secret: dict[str, bool] = {}

    def watch(self) -> pulumi.Output:
        """An Output that settles once every export's value and secretness are known."""
        pending: list[Any] = []
        for name, value in stack_exports().items():
            self.names.append(name)
            output = pulumi.Output.from_input(value)
            pending += [output.apply(self._keeper(name)), self._note_secret(name, output)]
        return pulumi.Output.all(*pending)

    def resolved(self) -> dict[str, Any]:
        return {name: "[secret]" if self.secret[name] else self.values.get(name) for name in self.names}

    def _keeper(self, name: str):
        return lambda value: self.values.__setitem__(name, value)

    async def _note_secret(self, name: str, output: pulumi.Output) -> None:
        self.secret[name] = await output.is_secret()
