"""The up workflow's gate: stop before `pulumi up` when the lab would lose something.

    python -m tools.up_gate diff build/up/diff.json [--allow]    tools.diff's verdict (make diff)
    python -m tools.up_gate preview preview.json [--allow]       `pulumi preview --json`'s steps

Exit 1, listing them, when a resource would be replaced or deleted; with --allow (the workflow was
dispatched with allow_replace_delete) the same list is printed and the exit status is 0. The
preview's ops are the engine's step ops (pulumi/pulumi sdk/go/common/display: OpReplace,
OpCreateReplacement, OpDeleteReplaced, OpDelete, OpDiscardReplaced, OpImportReplacement,
OpRemovePendingReplace); the diff's are make diff's (replace, delete).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

PREVIEW_OPS = ("replace", "create-replacement", "delete-replaced", "delete", "discard-replaced",
               "import-replacement", "remove-pending-replace")
DIFF_OPS = ("replace", "delete")


def from_diff(document: dict[str, Any]) -> list[str]:
    return [f"{c['op']}: {c['type']} {c['name']}" for c in document.get("changes", []) if c["op"] in DIFF_OPS]


def from_preview(document: dict[str, Any]) -> list[str]:
    found = []
    for step in document.get("steps", []):
        if step.get("op") in PREVIEW_OPS:
            urn = step.get("urn", "")
            reasons = step.get("replaceReasons") or []
            found.append(f"{step['op']}: {urn}" + (f" (replaceReasons: {', '.join(reasons)})" if reasons else ""))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("diff", "preview"))
    parser.add_argument("file", type=Path)
    parser.add_argument("--allow", action="store_true", help="report, but do not stop")
    args = parser.parse_args(argv)
    try:
        document = json.loads(args.file.read_text())
    except (OSError, ValueError) as err:
        print(f"error: {args.file}: {err}", file=sys.stderr)
        return 2
    found = from_diff(document) if args.kind == "diff" else from_preview(document)
    for line in found:
        print(line)
    if not found:
        print(f"{args.kind}: nothing would be replaced or deleted")
        return 0
    if args.allow:
        print(f"{args.kind}: {len(found)} replace/delete step(s), allowed by the dispatch input")
        return 0
    print(f"{args.kind}: {len(found)} replace/delete step(s); re-run the workflow by hand with "
          "allow_replace_delete to go ahead", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
