"""tools.up_gate: the up workflow stops on replace/delete in make diff's verdict and in the real preview's steps."""

from __future__ import annotations

import json

from tools import up_gate

# The shape of `pulumi preview --json` (engine JSON display: steps with op, urn, diffReasons, replaceReasons).
PREVIEW = {"steps": [
    {"op": "same", "urn": "urn:pulumi:lab::gpu-lab::command:remote:Command::a"},
    {"op": "update", "urn": "urn:pulumi:lab::gpu-lab::command:remote:Command::b", "diffReasons": ["create"]},
    {"op": "create-replacement", "urn": "urn:pulumi:lab::gpu-lab::command:remote:Command::c",
     "replaceReasons": ["triggers"]},
    {"op": "replace", "urn": "urn:pulumi:lab::gpu-lab::command:remote:Command::c", "replaceReasons": ["triggers"]},
    {"op": "delete-replaced", "urn": "urn:pulumi:lab::gpu-lab::command:remote:Command::c"},
    {"op": "delete", "urn": "urn:pulumi:lab::gpu-lab::command:remote:Command::d"},
]}


def test_preview_steps_that_replace_or_delete_stop_the_update(tmp_path, capsys):
    path = tmp_path / "preview.json"
    path.write_text(json.dumps(PREVIEW))
    assert up_gate.main(["preview", str(path)]) == 1
    out = capsys.readouterr().out
    assert "replace: urn:pulumi:lab::gpu-lab::command:remote:Command::c (replaceReasons: triggers)" in out
    assert "delete: urn:pulumi:lab::gpu-lab::command:remote:Command::d" in out and "::b" not in out
    assert up_gate.main(["preview", str(path), "--allow"]) == 0


def test_make_diffs_verdict_and_bad_files(tmp_path):
    path = tmp_path / "diff.json"
    path.write_text(json.dumps({"changes": [{"type": "t", "name": "n", "op": "update", "keys": [], "effects": []}]}))
    assert up_gate.main(["diff", str(path)]) == 0
    path.write_text(json.dumps({"changes": [{"type": "t", "name": "n", "op": "delete", "keys": [], "effects": []}]}))
    assert up_gate.main(["diff", str(path)]) == 1
    assert up_gate.main(["diff", str(tmp_path / "missing.json")]) == 2


def _workflow(name):
    import yaml

    from tools.up_gate import __file__ as here

    data = yaml.safe_load((__import__("pathlib").Path(here).parents[1] / ".github" / "workflows" / name).read_text())
    return data.get("on", data.get(True)), data["jobs"]


def test_pull_requests_show_make_diff_against_their_base_in_the_summary():
    _, jobs = _workflow("preview.yml")
    job = jobs["day-2-diff"]
    runs = "\n".join(step.get("run", "") for step in job["steps"])
    assert "make diff STACK=lab BASE=${{ github.event.pull_request.base.sha }}" in runs
    assert "GITHUB_STEP_SUMMARY" in runs and job["steps"][0]["with"]["fetch-depth"] == 0
    assert job["runs-on"] == "ubuntu-latest"  # offline: no lab runner, no secrets


def test_up_gates_on_the_built_commit_and_the_real_preview_then_records_the_commit():
    on, jobs = _workflow("up.yml")
    assert on["workflow_dispatch"]["inputs"]["allow_replace_delete"]["default"] is False
    steps = [step.get("run", "") for step in jobs["up"]["steps"]]
    order = [next(i for i, run in enumerate(steps) if needle in run) for needle in (
        "pulumi stack tag get gpu-lab:commit", "tools.up_gate diff build/up-diff/diff.json",
        "pulumi preview --stack lab --policy-pack policies --policy-pack-config policies/config.up.json",
        "tools.up_gate preview preview.json", "pulumi up --stack lab --yes", "pulumi stack tag set gpu-lab:commit")]
    assert order == sorted(order)
