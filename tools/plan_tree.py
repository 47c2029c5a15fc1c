"""Plan another checkout's program with this checkout's harness; print its resources as JSON.

    python tools/plan_tree.py <tree> <stack>

`make diff` runs it on a temporary worktree of the base commit. That tree goes first on sys.path, so
its program imports its own components/ and labrules/ and its stack file is checked by its own
rules; the `tools` package (mocks, recording, the comparable form of tools.diff) is this checkout's,
so a base commit that predates a recorded field is still planned the same way as the working tree.
Secrets leave the process only as hashes.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    tree, stack = Path(argv[0]).resolve(), argv[1]
    sys.path[:] = [str(tree)] + [p for p in sys.path if Path(p or ".").resolve() != HARNESS]
    spec = importlib.util.spec_from_file_location("tools", HARNESS / "__init__.py",
                                                  submodule_search_locations=[str(HARNESS)])
    assert spec is not None and spec.loader is not None
    tools = importlib.util.module_from_spec(spec)
    sys.modules["tools"] = tools
    spec.loader.exec_module(tools)

    from components.model import ConfigError  # the base tree's
    from tools.diff.recording import snapshot  # not tools.diff's rules: they read this tree's components
    from tools.mockrun import run_program
    from tools.stackfile import load_stack_config, offline_secrets

    try:
        config = load_stack_config(stack, tree / f"Pulumi.{stack}.yaml")
        secrets = offline_secrets(config)
        run = run_program(config, stack=stack, secrets=secrets, program_dir=tree)
        # The lab as built and then updated once more: a program that reads the deployed state (which
        # nodes run) registers the same on every later update, so that is what a lab in use holds.
        run = run_program(config, stack=stack, secrets=secrets, program_dir=tree, deployed=run)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except Exception as err:
        if type(err).__name__ == "RunError":
            print(f"error: {err}", file=sys.stderr)
            return 2
        raise
    json.dump([r.document() for r in snapshot(run)], sys.stdout, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
