"""`make plan STACK=lab`: run the program offline under mocks, print the resource tree, write
plan.json (every resource's inputs, secrets redacted), then run the policy pack over the same
resources through its gRPC analyzer interface and print its verdicts.

The pack is handed each resource's inputs as the Pulumi CLI hands them: whole, with their
structure, secret values carried as secrets (the engine's secret signature), not plan.json's
"[secret]" strings. A connection that pulumi-command marks secret as a whole still shows the
pack its host, port and hostKey. The secret values are make plan's placeholders (every secret
key gets one, tools.stackfile.offline_secrets); the stack's real secrets are never read.

Exit status: 0 when the plan holds no mandatory policy violation, 1 when it does, 2 when the
configuration is invalid.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import pulumi

from components.model import ConfigError
from tools.mockrun import PROJECT, Run, run_program
from tools.program_model import whole_numbers
from tools.stackfile import load_stack_config, offline_secrets


def tree_lines(run: Run) -> list[str]:
    """The resource tree, children indented under their parents, in registration order."""
    urns = {r.urn for r in run.resources}  # once: a set per resource made this O(n^2)
    children: dict[str, list] = {}
    for r in run.resources:
        children.setdefault(r.parent_urn if r.parent_urn in urns else "", []).append(r)
    lines: list[str] = []

    def walk(parent: str, depth: int) -> None:
        for r in sorted(children.get(parent, []), key=lambda x: x.name):
            lines.append(f"{'  ' * depth}{r.type}  {r.name}")
            walk(r.urn, depth + 1)

    walk("", 0)
    return lines


def describe_assets(value):
    """Assets and archives by kind, size and sha256 of their content (their repr holds a memory address)."""
    if isinstance(value, pulumi.asset.AssetArchive):
        return {"archive": "AssetArchive", "assets": {k: describe_assets(v) for k, v in sorted(value.assets.items())}}
    if isinstance(value, (pulumi.asset.Asset, pulumi.asset.Archive)):
        kind = type(value).__name__
        content: bytes | None
        if isinstance(value, pulumi.asset.StringAsset):
            content = value.text.encode()
        elif isinstance(value, (pulumi.asset.FileAsset, pulumi.asset.FileArchive)):
            content = Path(value.path).read_bytes() if Path(value.path).is_file() else None
        else:  # remote: the address is what identifies it
            uri = getattr(value, "uri", None)  # RemoteAsset, RemoteArchive
            return {"asset" if isinstance(value, pulumi.asset.Asset) else "archive": kind, "uri": uri}
        described = {"asset" if isinstance(value, pulumi.asset.Asset) else "archive": kind}
        if content is None:
            return {**described, "path": str(value.path)}
        return {**described, "size": len(content), "sha256": hashlib.sha256(content).hexdigest()}
    if isinstance(value, dict):
        return {k: describe_assets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [describe_assets(v) for v in value]
    return value


def plan_document(run: Run) -> dict:
    """What plan.json holds; resources in URN order, so two runs of one stack are byte-identical."""
    urns = {r.urn: r.name for r in run.resources}
    return {
        "stack": run.stack,
        "resourceCount": len(run.resources),
        "resources": [
            {
                "type": r.type,
                "name": r.name,
                "urn": r.urn,
                "parent": urns.get(r.parent_urn),
                "custom": r.custom,
                **({"provider": r.provider_name} if r.provider else {}),
                "inputs": describe_assets(whole_numbers(r.redacted())),
                "secretInputs": r.secret_paths(),
            }
            for r in sorted(run.resources, key=lambda r: r.urn)
        ],
        "outputs": describe_assets(run.outputs),
    }


def pack_input(run: Run) -> dict:
    """What the policy pack is given (tools.policy_check's input format): plan.json's resources, in
    the same order and form (assets described, numbers tidied), with secrets left in the engine's
    wire form instead of redacted. Kept in memory, never written."""
    urns = {r.urn: r.name for r in run.resources}
    return {
        "project": PROJECT,
        "stack": run.stack,
        "dryRun": True,
        "resources": [
            {
                "type": r.type,
                "name": r.name,
                "urn": r.urn,
                **({"parent": r.parent_urn} if r.parent_urn in urns else {}),
                **({"provider": r.provider.rsplit("::", 1)[0]} if r.provider else {}),
                "inputs": describe_assets(whole_numbers(r.inputs)),
            }
            for r in sorted(run.resources, key=lambda r: r.urn)
        ],
    }


def write_plan(run: Run, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "plan.json"
    path.write_text(json.dumps(plan_document(run), indent=2, sort_keys=False) + "\n")
    return path


def run_plan(stack: str, out: Path, quiet: bool = False, stack_file: Path | None = None) -> tuple[Run, float]:
    started = time.perf_counter()
    config = load_stack_config(stack, stack_file)
    run = run_program(config, stack=stack, secrets=offline_secrets(config))
    elapsed = time.perf_counter() - started
    write_plan(run, out)
    if not quiet:
        print("\n".join(tree_lines(run)))
        print(f"\n{len(run.resources)} resources in stack {stack!r} ({elapsed:.2f} s); "
              f"plan written to {out / 'plan.json'}")
    return run, elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="lab")
    parser.add_argument("--stack-file", type=Path, help="read this file instead of Pulumi.<stack>.yaml")
    parser.add_argument("--out", type=Path, help="output directory (default build/<stack>)")
    parser.add_argument("--no-policy", action="store_true", help="skip the policy pack")
    args = parser.parse_args(argv)
    out = args.out or Path("build") / args.stack
    try:
        run, _ = run_plan(args.stack, out, stack_file=args.stack_file)
    except ConfigError as err:  # the stack file's problems, before the program runs
        print(f"error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # the program's own errors (config, secrets) are the user's message
        if type(err).__name__ == "RunError":
            print(f"error: {err}", file=sys.stderr)
            return 2
        raise
    if args.no_policy:
        return 0
    return check_policies(run, out)


def check_policies(run: Run, out: Path) -> int:
    """The policy pass of make plan: verdicts printed and written to policy-report.json."""
    from tools import policy_check

    print("\npolicy pack (policies/), served over its gRPC analyzer interface:")
    return policy_check.report(lambda: policy_check.parse_stack(pack_input(run)), out=out / "policy-report.json")


if __name__ == "__main__":
    sys.exit(main())
