"""The floor `make bench` compares the program with: the same registrations, no project logic.

    python -m tools.bench.floor record WORKERS MANIFEST.pickle   # run the program once, write what it registered
    python -m tools.bench.floor replay MANIFEST.pickle            # register the same mix again, timed

`record` runs the program under the mocks of tools/mockrun.py on the generated lab of WORKERS
workers and pickles, per resource in registration order: type, name, parent, custom flag, the
inputs as the engine received them, which inputs depended on which resources, and how many
properties the resource class handed to the SDK (every one becomes an Output). It also counts
the program's `Output.apply` calls.

`replay` registers that list with plain `pulumi.CustomResource` / `pulumi.ComponentResource`
under the same mocks: same types, names and parents, the same input values (secrets as secret
Outputs), each dependent input as an apply over the resources it depended on, the same number
of properties per resource, and as many applies in all as the program made, after importing
the same provider SDK modules, with the SDK's default collector settings. No config model,
no address arithmetic, no renderers, no provider classes: what is left is the Pulumi SDK's own
cost for this mix. (Dynamic resources carry their already pickled provider, so the floor
does not pay for pickling it.)
"""

from __future__ import annotations

import functools
import json
import pickle
import sys
import time
from pathlib import Path
from typing import Any

STARTED = time.perf_counter()

MANIFEST_VERSION = 1


class _Counters:
    applies = 0
    outputs = 0


def _count_outputs_and_applies() -> None:
    """Count every Output made and every apply, in whichever process calls this."""
    import pulumi

    original_init, original_apply = pulumi.Output.__init__, pulumi.Output.apply

    def counting_init(self, *args, **kwargs):
        _Counters.outputs += 1
        original_init(self, *args, **kwargs)

    def counting_apply(self, *args, **kwargs):
        _Counters.applies += 1
        return original_apply(self, *args, **kwargs)

    pulumi.Output.__init__ = counting_init
    pulumi.Output.apply = counting_apply


# ---------------------------------------------------------------- record


def record(workers: int, manifest: Path) -> dict:
    from pulumi.resource import Resource

    from tools import mockrun
    from tools.bench.lab import scaled_lab
    from tools.sdk_access import input_type_to_dict

    prop_counts: dict[tuple[str, str], int] = {}
    original_resource_init = Resource.__init__

    def recording_init(self, t, name, custom, props=None, opts=None, *args, **kwargs):
        fields = props if isinstance(props, dict) or props is None else input_type_to_dict(props)
        prop_counts[(t, name)] = len(fields or {})
        original_resource_init(self, t, name, custom, props, opts, *args, **kwargs)

    Resource.__init__ = recording_init
    _count_outputs_and_applies()
    requests: list = []
    original_register = mockrun.RecordingMonitor.RegisterResource

    def keep_request(monitor, request):
        response = original_register(monitor, request)
        if request.type != "pulumi:pulumi:Stack":
            requests.append((request, response.urn))
        return response

    mockrun.RecordingMonitor.RegisterResource = keep_request
    run = mockrun.run_program(scaled_lab(workers), stack=f"bench{workers}")
    # every provider SDK module the program loaded (pulumi_kubernetes.core.v1 alone is 1 s)
    providers = sorted(m for m in sys.modules if m.startswith("pulumi_"))
    resources = []
    for (request, urn), recorded in zip(requests, run.resources, strict=True):
        assert recorded.urn == urn
        resources.append({
            "type": request.type,
            "name": request.name,
            "urn": urn,
            "parent": request.parent,
            "custom": bool(request.custom),
            "inputs": recorded.inputs,
            "propertyDependencies": {k: list(v.urns) for k, v in request.propertyDependencies.items() if v.urns},
            "dependencies": list(request.dependencies),
            "properties": prop_counts.get((request.type, request.name), 0),
        })
    data = {
        "version": MANIFEST_VERSION,
        "workers": workers,
        "stack": run.stack,
        "providerModules": providers,
        "applies": _Counters.applies,
        "outputs": _Counters.outputs,
        "resources": resources,
    }
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_bytes(pickle.dumps(data))
    return data


# ---------------------------------------------------------------- replay


def replay(manifest: Path) -> dict:
    """Register the manifest's resources; return counts and the seconds since this module loaded."""
    data = pickle.loads(manifest.read_bytes())
    if data.get("version") != MANIFEST_VERSION:
        raise SystemExit(f"{manifest}: manifest version {data.get('version')}, expected {MANIFEST_VERSION}")
    import importlib

    import pulumi

    from tools.mockrun import LabMocks, RecordingMonitor, run_under_mocks
    from tools.sdk_access import is_secret_value

    for module in data["providerModules"]:  # the program pays for importing its provider SDKs too
        importlib.import_module(module)
    applies = 0

    def plain(value: Any) -> Any:
        if is_secret_value(value):
            return pulumi.Output.secret(plain(value["value"]))
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    def program() -> None:
        nonlocal applies
        by_urn: dict[str, pulumi.Resource] = {}
        customs: list[pulumi.CustomResource] = []
        for r in data["resources"]:
            opts = pulumi.ResourceOptions(parent=by_urn.get(r["parent"]))
            if not r["custom"]:
                by_urn[r["urn"]] = pulumi.ComponentResource(r["type"], r["name"], None, opts)
                continue
            props: dict[str, Any] = {k: plain(v) for k, v in r["inputs"].items()}
            covered: set[str] = set()
            for key, urns in r["propertyDependencies"].items():
                deps = [by_urn[u] for u in urns if u in by_urn]
                covered.update(urns)
                if deps and key in props:
                    value = props[key]
                    props[key] = pulumi.Output.all(*[d.urn for d in deps]).apply(functools.partial(_constant, value))
                    applies += 1
            for i in range(r["properties"] - len(props)):
                props[f"unsetOutput{i}"] = None  # a provider class passes every output property
            others = [by_urn[u] for u in r["dependencies"] if u not in covered and u in by_urn]
            opts.depends_on = others or None
            resource = pulumi.CustomResource(r["type"], r["name"], props, opts)
            by_urn[r["urn"]] = resource
            customs.append(resource)
        missing = max(0, data["applies"] - applies)
        applies += missing
        for i in range(missing):  # the rest of the program's applies, over resources' outputs
            customs[i % len(customs)].id.apply(lambda v: v)

    monitor = RecordingMonitor(LabMocks())
    pulumi.runtime.set_all_config({}, [])
    run_under_mocks(program, monitor, stack=data["stack"])
    return {"resources": len(monitor.recorded), "applies": applies, "seconds": time.perf_counter() - STARTED}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 3 and args[0] == "record":
        data = record(int(args[1]), Path(args[2]))
        print(f"{len(data['resources'])} resources, {data['applies']} applies, {data['outputs']} Outputs "
              f"recorded in {args[2]}")
        return 0
    if len(args) == 2 and args[0] == "replay":
        print(json.dumps(replay(Path(args[1]))))
        return 0
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())


def _constant(value: Any, _dependencies: Any) -> Any:
    """An apply that waits on its dependencies and yields a value known in advance."""
    return value
