#!/usr/bin/env python3
"""Run the CrossGuard pack over a list of resources, talking to it the way the Pulumi CLI does.

    python tools/policy_check.py STACK.json [--pack policies] [--policy-config CONFIG.json]
                                 [--out report.json] [--python PYTHON]

What happens, in the CLI's order (pulumi/pulumi: plugin.NewPolicyAnalyzer, engine
installAndLoadPolicyPlugins, step generator, AnalyzeStack at the end of the update):

1. A small Engine gRPC server is started on 127.0.0.1 (the address every plugin is given).
2. The pack is started as pulumi-analyzer-policy-python starts it: in the pack directory,
   ``<virtualenv>/bin/python -u -m pulumi.policy <engine address> .`` with the virtualenv from
   PulumiPolicy.yaml (else ``python3``), and PULUMI_PROJECT / STACK / ORGANIZATION / DRY_RUN /
   CONFIG in its environment. The first line it prints is its port.
3. Handshake (the Python SDK answers UNIMPLEMENTED, which the CLI accepts), ConfigureStack,
   GetAnalyzerInfo, then Configure with the reconciled policy config: schema defaults, the pack's
   initial config, then ``--policy-config`` (the format of ``--policy-pack-config``), validated
   against each policy's JSON schema.
4. Remediate (only when a policy is at the remediate level) then Analyze for every resource, in
   order, several requests in flight; AnalyzeStack once with all of them.
5. The pack is stopped (SIGINT, then SIGKILL) and the Engine server shut down, whatever happened.

Verdicts are printed and, with ``--out``, written as JSON. Exit status: 0 no mandatory violation,
1 mandatory violations, 2 the check itself failed (bad input, pack did not start, bad config).

Input (STACK.json): either a list of resources or an object::

    {"project": "gpu-lab", "stack": "lab", "organization": "organization", "dryRun": true,
     "config": {"gpu-lab:key": "value"},            # stack config the pack sees (PULUMI_CONFIG)
     "resources": [
       {"type": "vsphere:index/virtualMachine:VirtualMachine",   # type token
        "name": "sckubw01",                                        # logical name
        "urn": "urn:pulumi:...",          # optional; else built from stack/project/parent chain
        "parent": "lab-vms",              # optional; name (unique) or URN of another resource
        "provider": "pyvmomi",            # optional; name or URN of the explicit provider resource
        "properties": {...},              # inputs as the engine sees them (camelCase keys)
        "outputs": {...},                 # optional; what AnalyzeStack sees (default: properties)
        "secretPaths": ["connection.password"],   # values the engine would carry as secrets
        "unknownPaths": ["networkInterfaces[1].networkId"],  # values unknown during preview
        "dependencies": ["lab-rdma-pg"],  # optional; names or URNs
        "propertyDependencies": {"networkInterfaces": ["lab-rdma-pg"]}}   # optional
     ]}

Paths are ``a.b[0].c``, with ``a["b.c"]`` for keys that contain dots (unquoted dotted keys are
found too when unambiguous). ``inputs`` and ``secretInputs`` are accepted for ``properties`` and
``secretPaths`` (the names plan.json uses). A value already in the engine's wire form (the secret signature object)
is passed through unchanged. Secret values never appear in the output. A resource's
``provider`` reaches the pack as the CLI sends it (``args.provider``: the provider resource's
type, name, URN and inputs); a plan holds only explicit providers, where the CLI would also
send the default provider of the others.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import signal
import subprocess
import sys
import threading
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import jsonschema
import yaml
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc, engine_pb2, engine_pb2_grpc

from tools.policy_sdk_access import serialize_properties
from tools.sdk_access import Unknown

SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
UNKNOWN_STRING = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # what the engine sends for any unknown
ROOT_STACK_TYPE = "pulumi:pulumi:Stack"
LEVELS = {analyzer_pb2.ADVISORY: "advisory", analyzer_pb2.MANDATORY: "mandatory",
          analyzer_pb2.DISABLED: "disabled", analyzer_pb2.REMEDIATE: "remediate"}
LEVEL_CODES = {v: k for k, v in LEVELS.items()}
GRPC_OPTIONS = [("grpc.max_receive_message_length", 400 * 1024 * 1024),
                ("grpc.max_send_message_length", 400 * 1024 * 1024)]
START_TIMEOUT = 60.0
PACK = Path(__file__).resolve().parent.parent / "policies"  # the repository's pack
ANALYZE_IN_FLIGHT = 16  # Analyze requests sent ahead of the answers being read


class CheckError(Exception):
    """The check could not run (exit status 2)."""


# ---------------------------------------------------------------- input


@dataclass
class Resource:
    type: str
    name: str
    urn: str
    parent: str
    properties: dict
    outputs: dict
    dependencies: list[str] = field(default_factory=list)
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    provider: str = ""  # URN of an explicit provider resource in the same stack


@dataclass
class Stack:
    project: str
    stack: str
    organization: str
    dry_run: bool
    config: dict
    resources: list[Resource]


def load_stack(path: Path) -> Stack:
    data = json.loads(Path(path).read_text())
    return parse_stack(data)


def parse_stack(data: Any) -> Stack:
    if isinstance(data, list):
        data = {"resources": data}
    if not isinstance(data, dict) or not isinstance(data.get("resources"), list):
        raise CheckError("the input must be a list of resources or an object with a 'resources' list")
    project, stack = data.get("project", "gpu-lab"), data.get("stack", "lab")
    raw = data["resources"]
    for i, r in enumerate(raw):
        if not isinstance(r, dict) or not r.get("type") or not r.get("name"):
            raise CheckError(f"resources[{i}] needs at least 'type' and 'name'")

    by_name: dict[str, list[int]] = {}
    for i, r in enumerate(raw):
        by_name.setdefault(r["name"], []).append(i)
    urns: dict[int, str] = {}

    def ref(value: str, where: str) -> int | str:
        if value.startswith("urn:pulumi:"):
            for i, r in enumerate(raw):
                if r.get("urn") == value:
                    return i
            return value  # a URN outside the file: pass it on as is
        hits = by_name.get(value, [])
        if len(hits) != 1:
            raise CheckError(f"{where}: {value!r} names {len(hits)} resources; use a unique name or a URN")
        return hits[0]

    def urn_of(i: int, seen: tuple = ()) -> str:
        if i in urns:
            return urns[i]
        r = raw[i]
        if r.get("urn"):
            urns[i] = r["urn"]
            return urns[i]
        if i in seen:
            raise CheckError(f"resource {r['name']!r}: parent cycle")
        qualified = r["type"]
        if r.get("parent"):
            parent = ref(r["parent"], f"resource {r['name']!r} parent")
            parent_urn = parent if isinstance(parent, str) else urn_of(parent, seen + (i,))
            parent_type = parent_urn.split("::")[2] if parent_urn.count("::") >= 3 else ""
            if parent_type and parent_type != ROOT_STACK_TYPE:
                qualified = f"{parent_type}${r['type']}"
        urns[i] = f"urn:pulumi:{stack}::{project}::{qualified}::{r['name']}"
        return urns[i]

    def urn_ref(value: str, where: str) -> str:
        target = ref(value, where)
        return target if isinstance(target, str) else urn_of(target)

    def provider_ref(value: str, where: str) -> str:
        target = ref(value, where)
        if isinstance(target, str) or not raw[target]["type"].startswith("pulumi:providers:"):
            raise CheckError(f"{where}: {value!r} is not a provider resource in this stack")
        return urn_of(target)

    resources = []
    for i, r in enumerate(raw):
        where = f"resource {r['name']!r}"
        secret_paths = r.get("secretPaths", r.get("secretInputs")) or []
        unknown_paths = r.get("unknownPaths") or []
        props = mark(r.get("properties", r.get("inputs")) or {}, secret_paths, unknown_paths, where)
        outputs = props if "outputs" not in r else mark(r["outputs"], secret_paths, unknown_paths, where)
        resources.append(Resource(
            type=r["type"], name=r["name"], urn=urn_of(i),
            parent=urn_ref(r["parent"], f"{where} parent") if r.get("parent") else "",
            properties=props, outputs=outputs,
            dependencies=[urn_ref(d, f"{where} dependencies") for d in r.get("dependencies", [])],
            property_dependencies={k: [urn_ref(d, f"{where} propertyDependencies") for d in v]
                                   for k, v in (r.get("propertyDependencies") or {}).items()},
            provider=provider_ref(r["provider"], f"{where} provider") if r.get("provider") else "",
        ))
    return Stack(project, stack, data.get("organization", "organization"), bool(data.get("dryRun", True)),
                 data.get("config") or {}, resources)


_STEP = re.compile(r'\["([^"]*)"\]|\[(\d+)\]|([^.\[\]]+)')


def _steps(path: str) -> list[str | int]:
    """``a.b[0].c``; a key with dots or brackets is written ``a["b.c"]``."""
    steps: list[str | int] = [q if q else int(i) if i else k for q, i, k in _STEP.findall(path)]
    if not steps:
        raise CheckError(f"empty property path {path!r}")
    return steps


def mark(props: dict, secret_paths: list[str], unknown_paths: list[str], where: str) -> dict:
    """A copy of ``props`` in the engine's wire form: unknowns as sentinels, secrets wrapped.

    ``pulumi.output.Unknown`` objects (what the SDK's mocks record for preview unknowns) become
    the engine's sentinel too, and assets / archives their signature objects, so a mock run's
    inputs can be passed as they are.
    """
    out = _wire_copy(props)
    for path in unknown_paths:
        _replace(out, path, lambda _old: UNKNOWN_STRING, where, must_exist=False)
    for path in secret_paths:
        if _under_unknown(out, path):
            continue  # a secret inside a value that is unknown as a whole is just unknown
        _replace(out, path, lambda old: old if _is_secret_wire(old) else {SIG_KEY: SECRET_SIG, "value": old},
                 where, must_exist=True)
    return out


_JSON_SCALARS = (str, int, float, bool, type(None))


def _wire_copy(value: Any) -> Any:
    """A fresh copy of ``value`` in wire form, in one walk: JSON values (all of plan.json) as they
    are, ``Unknown`` as the sentinel, anything else (assets, archives, secrets) as the SDK writes it."""
    kind = type(value)
    if kind is dict:
        return {k: _wire_copy(v) for k, v in value.items()}
    if kind is list:
        return [_wire_copy(v) for v in value]
    if kind in _JSON_SCALARS:
        return value
    return serialize_properties({"v": _unknown_objects_to_sentinels(copy.deepcopy(value))})["v"]


def _unknown_objects_to_sentinels(value: Any) -> Any:
    if isinstance(value, Unknown):
        return UNKNOWN_STRING
    if isinstance(value, dict):
        return {k: _unknown_objects_to_sentinels(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unknown_objects_to_sentinels(v) for v in value]
    return value


def _under_unknown(root: dict, path: str) -> bool:
    node: Any = root
    for step in _steps(path):
        if node == UNKNOWN_STRING:
            return True
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return False
    return node == UNKNOWN_STRING


def _is_secret_wire(v: Any) -> bool:
    return isinstance(v, dict) and v.get(SIG_KEY) == SECRET_SIG


def _join_dotted(node: Any, steps: list) -> list:
    """Re-join unquoted keys that contain dots (``stringData.a.tok`` for the key ``a.tok``)."""
    out: list = []
    i = 0
    while i < len(steps):
        step = steps[i]
        if _is_secret_wire(node):
            node = node["value"]
        if isinstance(node, dict) and isinstance(step, str) and step not in node:
            for j in range(i + 1, len(steps)):
                if not isinstance(steps[j], str):
                    break
                joined = ".".join(steps[i:j + 1])
                if joined in node:
                    step, i = joined, j
                    break
        out.append(step)
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            out.extend(steps[i + 1:])
            return out
        i += 1
    return out


def _replace(root: dict, path: str, fn, where: str, must_exist: bool) -> None:
    steps = _join_dotted(root, _steps(path))
    node: Any = root
    for step in steps[:-1]:
        if _is_secret_wire(node):
            node = node["value"]
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            raise CheckError(f"{where}: property path {path!r} does not exist") from None
    if _is_secret_wire(node):
        node = node["value"]
    last = steps[-1]
    exists = (isinstance(node, dict) and last in node) or (isinstance(node, list) and isinstance(last, int)
                                                          and last < len(node))
    if not exists and (must_exist or not isinstance(node, dict)):
        raise CheckError(f"{where}: property path {path!r} does not exist")
    node[last] = fn(node[last] if exists else None)


def to_struct(value: dict) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(value)
    return s


# ---------------------------------------------------------------- the engine side


class _Engine(engine_pb2_grpc.EngineServicer):
    """What a plugin may call back on: logging, and the root resource."""

    def __init__(self):
        self.logs: list[str] = []

    def Log(self, request, context):
        self.logs.append(request.message)
        print(f"[pack log] {request.message}", file=sys.stderr)
        return empty_pb2.Empty()

    def GetRootResource(self, request, context):
        return engine_pb2.GetRootResourceResponse(urn="")

    def SetRootResource(self, request, context):
        return engine_pb2.SetRootResourceResponse()


def pack_python(pack: Path, override: str | None) -> tuple[str, dict]:
    """The interpreter the analyzer plugin would use, and the PATH change it makes."""
    if override:
        return override, {}
    spec = yaml.safe_load((pack / "PulumiPolicy.yaml").read_text()) or {}
    runtime = spec.get("runtime")
    options = runtime.get("options", {}) if isinstance(runtime, dict) else {}
    venv = options.get("virtualenv")
    if not venv:
        return "python3", {}
    venv_path = Path(venv) if Path(venv).is_absolute() else (pack / venv)
    python = venv_path / "bin" / "python"
    if not python.is_file():
        raise CheckError(f'"{venv_path}" doesn\'t appear to be a virtual environment')
    return str(python), {"PATH": f"{venv_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}


class PackProcess:
    """The policy pack, started as the CLI's analyzer plugin starts it."""

    def __init__(self, pack: Path, stack: Stack, engine_address: str, python: str | None = None):
        self.pack = pack.resolve()
        if not (self.pack / "PulumiPolicy.yaml").is_file():
            raise CheckError(f"{self.pack} has no PulumiPolicy.yaml")
        exe, env_change = pack_python(self.pack, python)
        env = dict(os.environ)
        env.pop("PYTHONHOME", None)
        env.update(env_change)
        for key in ("PULUMI_CONFIG", "PULUMI_ORGANIZATION", "PULUMI_PROJECT", "PULUMI_STACK", "PULUMI_DRY_RUN"):
            env.pop(key, None)
        if stack.config:
            env["PULUMI_CONFIG"] = json.dumps(stack.config)
        env.update({"PULUMI_ORGANIZATION": stack.organization, "PULUMI_PROJECT": stack.project,
                    "PULUMI_STACK": stack.stack, "PULUMI_DRY_RUN": "true" if stack.dry_run else "false"})
        self.stderr_lines: list[str] = []
        self.proc = subprocess.Popen(
            [exe, "-u", "-m", "pulumi.policy", engine_address, "."],
            cwd=self.pack, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, start_new_session=True,
        )
        self._stderr_reader = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_reader.start()

    def _drain_stderr(self) -> None:
        if self.proc.stderr is None:  # Popen(stderr=PIPE) always sets it
            return
        try:
            for line in self.proc.stderr:
                self.stderr_lines.append(line.rstrip("\n"))
        except (OSError, ValueError):
            pass  # the pipe was closed under us: the process is gone

    def port(self, timeout: float = START_TIMEOUT) -> int:
        box: list[str] = []
        stdout = self.proc.stdout
        if stdout is None:  # Popen(stdout=PIPE) always sets it
            raise CheckError("the policy pack's standard output is not a pipe")
        reader = threading.Thread(target=lambda: box.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        line = box[0].strip() if box else ""
        if not line.isdigit():
            self.stop()
            why = "timed out" if not box else f"printed {line!r}" if line else "exited"
            raise CheckError(f"the policy pack did not report its port ({why}):\n" + "\n".join(self.stderr_lines[-30:]))
        return int(line)

    def stop(self) -> None:
        if self.proc.poll() is None:
            # SIGINT is what PolicyPack waits for to stop its server cleanly
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._stderr_reader.join(2)  # EOF follows the exit; keep the last lines for error messages
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                try:
                    stream.close()
                except OSError:
                    pass


# ---------------------------------------------------------------- config, as the CLI reconciles it


def reconcile_config(info, from_file: dict | None) -> tuple[dict, list[str]]:
    """CLI semantics: schema defaults, then the pack's initial config, then the file; validated."""
    result: dict[str, dict] = {}
    schemas: dict[str, dict] = {}
    for p in info.policies:
        props = json_format.MessageToDict(p.configSchema.properties) if p.HasField("configSchema") else {}
        defaults = {k: v["default"] for k, v in props.items() if isinstance(v, dict) and "default" in v}
        result[p.name] = {"level": LEVELS[p.enforcementLevel], "properties": defaults or None}
        schema: dict[str, Any] = {"type": "object", "properties": dict(props)}
        schema["properties"]["enforcementLevel"] = {"type": "string",
                                                    "enum": ["advisory", "mandatory", "remediate", "disabled"]}
        if p.HasField("configSchema") and p.configSchema.required:
            schema["required"] = list(p.configSchema.required)
        schemas[p.name] = schema

    initial = {k: {"level": LEVELS[v.enforcementLevel] if v.enforcementLevel in LEVELS else None,
                   "properties": json_format.MessageToDict(v.properties) or None}
               for k, v in info.initialConfig.items()}
    _apply(result, initial)
    if from_file:
        _apply(result, _parse_config_file(from_file))

    errors = []
    for name, schema in schemas.items():
        doc = result.get(name, {}).get("properties") or {}
        for err in jsonschema.Draft7Validator(schema).iter_errors(doc):
            where = ".".join(str(x) for x in err.absolute_path) or "(root)"
            errors.append(f"{name}: {where}: {err.message}")
    return result, errors


def _parse_config_file(data: dict) -> dict:
    out: dict[str, dict[str, Any]] = {}
    for name, value in data.items():
        if isinstance(value, str):
            if value not in LEVEL_CODES:
                raise CheckError(f"policy config {name!r}: {value!r} is not an enforcement level")
            out[name] = {"level": value, "properties": None}
        elif isinstance(value, dict):
            value = dict(value)
            level = value.pop("enforcementLevel", None)
            if level is not None and level not in LEVEL_CODES:
                raise CheckError(f"policy config {name!r}: {level!r} is not an enforcement level")
            out[name] = {"level": level, "properties": value or None}
        else:
            raise CheckError(f"policy config {name!r}: must be a string or an object")
    return out


def _apply(result: dict, given: dict) -> None:
    if given.get("all", {}).get("level"):
        for v in result.values():
            v["level"] = given["all"]["level"]
    for name, cfg in given.items():
        if name == "all":
            continue
        current = result.setdefault(name, {"level": None, "properties": None})
        if cfg.get("level"):
            current["level"] = cfg["level"]
        if cfg.get("properties"):
            current["properties"] = {**(current["properties"] or {}), **cfg["properties"]}


# ---------------------------------------------------------------- the run


@dataclass
class Verdict:
    policy: str
    level: str
    urn: str
    resource: str
    type: str
    message: str
    description: str

    def as_dict(self) -> dict:
        return self.__dict__.copy()


@dataclass
class Report:
    pack: dict
    policies: list[dict]
    verdicts: list[Verdict]
    not_applicable: list[dict]
    engine_logs: list[str]

    @property
    def mandatory(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.level == "mandatory"]

    def as_dict(self) -> dict:
        return {
            "pack": self.pack,
            "policies": self.policies,
            "violations": [v.as_dict() for v in self.verdicts],
            "notApplicable": self.not_applicable,
            "summary": {"mandatory": len(self.mandatory), "advisory": len(self.verdicts) - len(self.mandatory)},
        }


def check(stack: Stack, pack: Path, policy_config: dict | None = None, python: str | None = None) -> Report:
    engine = _Engine()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), options=GRPC_OPTIONS)
    engine_pb2_grpc.add_EngineServicer_to_server(engine, server)
    engine_port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    process = None
    channel = None
    try:
        engine_address = f"127.0.0.1:{engine_port}"
        process = PackProcess(pack, stack, engine_address, python)
        port = process.port()
        channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=GRPC_OPTIONS)
        grpc.channel_ready_future(channel).result(timeout=START_TIMEOUT)
        client = analyzer_pb2_grpc.AnalyzerStub(channel)
        return _session(client, stack, process.pack, engine_address, policy_config, engine)
    except grpc.RpcError as err:
        detail = "\n".join(process.stderr_lines[-30:]) if process else ""
        raise CheckError(f"the policy pack failed: {err.code().name}: {err.details()}\n{detail}") from None
    finally:
        if channel is not None:
            channel.close()
        if process is not None:
            process.stop()
        server.stop(0)


def needs_remediate_pass(levels: dict[str, str]) -> bool:
    """Whether any policy is at the level at which pulumi_policy runs remediations."""
    return "remediate" in levels.values()


def _session(client, stack: Stack, pack_dir: Path, engine_address: str, policy_config, engine) -> Report:
    pack_str = str(pack_dir)
    try:
        client.Handshake(analyzer_pb2.AnalyzerHandshakeRequest(
            engine_address=engine_address, root_directory=pack_str, program_directory=pack_str))
    except grpc.RpcError as err:
        if err.code() != grpc.StatusCode.UNIMPLEMENTED:
            raise
    try:
        client.ConfigureStack(analyzer_pb2.AnalyzerStackConfigureRequest(
            stack=stack.stack, project=stack.project, organization=stack.organization, dry_run=stack.dry_run,
            config=to_struct(stack.config)))
    except grpc.RpcError as err:
        if err.code() != grpc.StatusCode.UNIMPLEMENTED:
            raise

    info = client.GetAnalyzerInfo(empty_pb2.Empty())
    levels = {p.name: LEVELS.get(p.enforcementLevel, "advisory") for p in info.policies}
    if info.supportsConfig:
        config, errors = reconcile_config(info, policy_config)
        if errors:
            raise CheckError("validating policy config:\n  " + "\n  ".join(sorted(errors)))
        request = analyzer_pb2.ConfigureAnalyzerRequest()
        for name, cfg in config.items():
            pc = request.policyConfig[name]
            pc.enforcementLevel = LEVEL_CODES[cfg["level"] or "advisory"]
            if cfg["properties"]:
                pc.properties.update(cfg["properties"])
        if config:
            client.Configure(request)
        levels.update({name: cfg["level"] or "advisory" for name, cfg in config.items()})
    elif policy_config:
        raise CheckError(f"policy pack {info.name!r} does not support config")

    verdicts: list[Verdict] = []
    not_applicable: list[dict] = []
    by_urn = {r.urn: r for r in stack.resources}

    def collect(response, default_urn: str) -> None:
        for d in response.diagnostics:
            urn = default_urn or d.urn
            res = by_urn.get(urn)
            level = LEVELS.get(d.enforcementLevel, "advisory")
            message = d.message
            if message.startswith(d.description + "\n"):
                message = message[len(d.description) + 1:]
            verdicts.append(Verdict(
                policy=d.policyName, level="mandatory" if level == "remediate" else level, urn=urn,
                resource=res.name if res else "", type=res.type if res else "", message=message,
                description=d.description))
        for n in response.not_applicable:
            not_applicable.append({"policy": n.policy_name, "urn": default_urn, "reason": n.reason})

    # The pack runs a remediation only for a policy at the "remediate" level (pulumi_policy's
    # Remediate skips every other policy, after decoding the properties), so without one the
    # first pass would decode every resource for nothing.
    remediates = needs_remediate_pass(levels)
    in_flight: list = []
    structs: dict[str, struct_pb2.Struct] = {}  # built once; AnalyzeStack reuses them for outputs
    providers: dict[str, analyzer_pb2.AnalyzerProviderResource] = {}  # the CLI sends one with each resource

    def provider_of(r: Resource) -> analyzer_pb2.AnalyzerProviderResource | None:
        if not r.provider:
            return None
        if r.provider not in providers:
            p = by_urn[r.provider]
            providers[r.provider] = analyzer_pb2.AnalyzerProviderResource(
                type=p.type, properties=to_struct(p.properties), urn=p.urn, name=p.name)
        return providers[r.provider]

    for r in stack.resources:
        structs[r.urn] = to_struct(r.properties)
        request = analyzer_pb2.AnalyzeRequest(
            type=r.type, properties=structs[r.urn], urn=r.urn, name=r.name,
            options=analyzer_pb2.AnalyzerResourceOptions(parent=r.parent), provider=provider_of(r))
        if remediates:
            client.Remediate(request)  # first pass, as the step generator does
        # Requests go out while earlier answers are computed; answers are read in resource order.
        in_flight.append((client.Analyze.future(request), r.urn))
        if len(in_flight) >= ANALYZE_IN_FLIGHT:
            future, urn = in_flight.pop(0)
            collect(future.result(), urn)  # the engine pins a resource's diagnostics to that resource
    for future, urn in in_flight:
        collect(future.result(), urn)

    stack_request = analyzer_pb2.AnalyzeStackRequest()
    for r in stack.resources:
        outputs = structs[r.urn] if r.outputs is r.properties else to_struct(r.outputs)
        ar = stack_request.resources.add(
            type=r.type, properties=outputs, urn=r.urn, name=r.name,
            options=analyzer_pb2.AnalyzerResourceOptions(parent=r.parent), parent=r.parent,
            dependencies=r.dependencies)
        for key, urns in r.property_dependencies.items():
            ar.propertyDependencies[key].urns.extend(urns)
    collect(client.AnalyzeStack(stack_request), "")

    policies = [{"name": p.name, "enforcementLevel": LEVELS[p.enforcementLevel],
                 "type": "stack" if p.policy_type == analyzer_pb2.POLICY_TYPE_STACK else "resource",
                 "description": p.description} for p in info.policies]
    # the version the CLI reports: PulumiPolicy.yaml's (the Python SDK always answers 0.0.1)
    version = (yaml.safe_load((pack_dir / "PulumiPolicy.yaml").read_text()) or {}).get("version") or info.version
    return Report({"name": info.name, "version": str(version)}, policies, verdicts, not_applicable,
                  list(engine.logs))


# ---------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stack", type=Path, help="JSON file of resources (format: see this file's docstring)")
    parser.add_argument("--pack", type=Path, default=PACK,
                        help="policy pack directory (default: the repository's policies/)")
    parser.add_argument("--policy-config", type=Path, help="policy config JSON, as for --policy-pack-config")
    parser.add_argument("--out", type=Path, help="write the verdicts here as JSON")
    parser.add_argument("--python", help="interpreter for the pack (default: PulumiPolicy.yaml's virtualenv)")
    args = parser.parse_args(argv)
    try:
        config = json.loads(args.policy_config.read_text()) if args.policy_config else None
    except (OSError, json.JSONDecodeError) as err:
        print(f"policy check failed: {err}", file=sys.stderr)
        return 2
    return report(lambda: load_stack(args.stack), args.pack, config, args.out, args.python)


def report(load, pack: Path = PACK, config: dict | None = None,
           out: Path | None = None, python: str | None = None) -> int:
    """Check the stack ``load()`` returns, print the verdicts, write them to ``out``; the exit status."""
    try:
        stack = load()
        result = check(stack, pack, config, python)
    except (CheckError, OSError, json.JSONDecodeError) as err:
        print(f"policy check failed: {err}", file=sys.stderr)
        return 2

    for v in result.verdicts:
        where = f"{v.resource} ({v.type})" if v.resource else (v.urn or "(stack)")
        print(f"{v.level.upper():9} {v.policy}  {where}\n          {v.message}")
    counts = result.as_dict()["summary"]
    print(f"{result.pack['name']}: {len(stack.resources)} resources, {len(result.policies)} policies, "
          f"{counts['mandatory']} mandatory and {counts['advisory']} advisory violation(s)")
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result.as_dict(), indent=2) + "\n")
    return 1 if result.mandatory else 0

if __name__ == "__main__":
    sys.exit(main())
