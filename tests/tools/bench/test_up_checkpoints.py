"""tools/bench/up.py: the checkpoint saves and state sizes it reports for an up.

The sample in up_sample/ comes from a real run on the file backend,
`python -m tools.bench.up --workers 4 --scale 0 --record DIR` (Pulumi CLI v3.259.0, pulumi-vsphere
4.18.2, lab-vcsim): renames.jsonl is the first 40 renames the watcher saw in the state directory
during `up` (with each state file's manifest time, as --record writes them) and the update's first
history record; checkpoint.json is the state after that up, keeping the smallest resource of each
kind (resource_category) and the stack.
"""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path

from tools.bench.up import (
    StateWatcher,
    _decompress_head,
    manifest_ns,
    parse_settings,
    read_checkpoint,
    save_summary,
    size_table,
    state_sizes,
    update_saves,
)

SAMPLE = Path(__file__).parent / "up_sample"


def sample_records() -> list[dict]:
    return [json.loads(line) for line in (SAMPLE / "renames.jsonl").read_text().splitlines()]


def test_each_save_lasts_from_its_manifest_time_to_the_state_file_s_rename():
    records = sample_records()
    saves, unread = update_saves(records)
    # 19 renames of the state file before the history file, each after its own `.bak`
    assert (len(saves), unread) == (19, 0)
    assert all(0 < s.seconds < 1 and s.start < s.backup <= s.end for s in saves)
    assert [s.start for s in saves] == sorted(s.start for s in saves)
    first = next(r for r in records if r.get("start"))
    assert saves[0].seconds == (first["t"] - first["start"]) / 1e9
    summary = save_summary(saves, wall=10.0)
    assert summary["saves"] == 19
    assert abs(summary["seconds"] - sum(s.seconds for s in saves)) < 1e-9
    assert summary["share"] == summary["seconds"] / 10.0
    assert 0 < summary["before_write"] < summary["seconds"]
    # the saves came back to back: the next began within milliseconds of the last rename
    assert 0 < summary["gap"] < 0.05


def test_renames_after_the_update_s_history_file_are_not_the_update_s():
    records = sample_records()
    later = dict(records[2], t=records[-1]["t"] + 10**9, start=records[-1]["t"] + 10**8)
    assert len(update_saves(records + [later])[0]) == 19
    # the backup of the state that follows the history file (backend.go:1457) ends the update as well
    backup = {"t": records[-1]["t"], "path": ".pulumi/backups/gpu-lab/simbench/simbench.1795820641.json.gz"}
    assert len(update_saves(records[:-1] + [backup, later])[0]) == 19
    # a file read once it was replaced again (the same or an older manifest) is counted apart
    assert update_saves(records[:5] + [records[2]])[1] == 1


def test_go_s_manifest_time():
    def head(stamp: str) -> str:
        return '{"version":3,"checkpoint":{"stack":"o/p/s","latest":{"manifest":{"time":"' + stamp + '","magic":"x"}'

    assert manifest_ns(head("2026-11-27T23:00:36.282761881Z")) == 1795820436282761881
    assert manifest_ns(head("2026-11-27T23:00:36.5+01:00")) == 1795816836500000000
    assert manifest_ns(head("2026-11-27T23:00:36Z")) == 1795820436000000000
    assert manifest_ns('{"version":3,"checkpoint":{"stack":"o/p/s","latest":null}}') is None
    text = (SAMPLE / "checkpoint.json").read_text()
    packed = gzip.compress(text.encode())[:4096]
    assert manifest_ns(_decompress_head("simbench.json.gz", packed)) == manifest_ns(text[:1024])


def test_state_bytes_by_kind_of_resource():
    checkpoint = read_checkpoint(SAMPLE / "checkpoint.json")
    sizes = state_sizes(checkpoint)
    assert {k: c for k, (c, _) in sizes.items() if c} == {
        "VM": 1, "roll": 1, "host settings": 1, "components": 1, "stack outputs": 1, "providers": 1, "other": 1}
    by_urn = {r["urn"].rsplit("::", 1)[-1]: r for r in checkpoint["checkpoint"]["latest"]["resources"]}
    vm = json.dumps(by_urn["vms-simcp01"], separators=(",", ":"), ensure_ascii=False).encode()
    assert sizes["VM"] == (1, len(vm))
    assert sum(b for _, b in sizes.values()) < (SAMPLE / "checkpoint.json").stat().st_size
    table = size_table(sizes, workers=4, state_bytes=34_673)
    assert table[0] == "state after up: 34,673 B on disk, 7 resources, 4,953 B per resource, 8,668 B per worker"
    assert f"| VM | 1 | {len(vm):,} | {len(vm):,} | {len(vm) / 4:,.0f} |" in table


def test_the_watcher_sees_each_rename_into_the_state_directory(tmp_path):
    state = tmp_path / "state"
    stacks = state / ".pulumi" / "stacks" / "gpu-lab"
    stacks.mkdir(parents=True)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    watcher = StateWatcher("simbench")
    watcher.start(state)
    time.sleep(0.3)

    def put(path: Path, text: str) -> None:  # as gocloud's fileblob writes: a temporary file, renamed
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = scratch / "tmp"
        temp.write_text(text)
        os.rename(temp, path)

    for i in range(3):
        stamp = f"2026-11-27T23:00:0{i}.5Z"
        put(stacks / "simbench.json.bak", "{}")
        put(stacks / "simbench.json", json.dumps({"version": 3, "checkpoint": {"latest": {"manifest": {"time": stamp}}}},
                                                 separators=(",", ":")))
        time.sleep(0.05)
    put(state / ".pulumi" / "history" / "gpu-lab" / "simbench" / "simbench-1.history.json", "{}")
    time.sleep(0.5)
    records = watcher.stop()
    saves, unread = update_saves(records)
    assert (len(saves), unread) == (3, 0)
    assert [s.start for s in saves] == [1795820400500000000, 1795820401500000000, 1795820402500000000]
    assert all(s.backup for s in saves)


def test_settings_one_environment_each():
    assert parse_settings("default; PULUMI_DIY_BACKEND_GZIP=true;A=1,B=x=y") == [
        ("default", {}), ("PULUMI_DIY_BACKEND_GZIP=true", {"PULUMI_DIY_BACKEND_GZIP": "true"}),
        ("A=1,B=x=y", {"A": "1", "B": "x=y"})]
