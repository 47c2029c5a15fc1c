"""Time to build a lab: `pulumi up` of the sim stack against lab-vcsim with vCenter's task times,
against the critical path of the program's dependency graph.

    python -m tools.bench.up [--workers 4,64,512] [--scale 0.1] [--parallel 8,64] [--plan-only]
                             [--settings 'default;PULUMI_DIY_BACKEND_GZIP=true'] [--record DIR]

Each vSphere call the program's creates wait for gets a delay from a real vCenter's task time
(DELAYS, each with where the figure comes from), applied by lab-vcsim's -method-delay (the call
takes that long, as the task would). The critical path is the longest chain of the dependency
graph (tools.mockrun records each registration's dependencies) weighted by the calls each
resource's create makes (CREATE_CALLS). `--scale` multiplies every delay (0.1: ten times faster
than life) so a 512-worker run fits a session; the ratio wall / critical path is what the goal
(<= 1.2) is about, and both sides are scaled alike.

The stack is Pulumi.sim.yaml widened like tools.bench.preview (N workers on 128 worker hosts);
scripts/sim-preview.sh --up runs up, a no-change preview and destroy. Exit 0 when every run
passed, 77 with "SKIP <reason>" when the engine or a plugin is missing, 1 on failure.

For each up it also prints the file backend's checkpoint saves (how many, how long, their share of
the wall), timed from the state directory: each save's checkpoint names when it began
(manifest.time) and a watcher (inotify) sees when it was renamed into place; and the state after
up (the copy the backend keeps with the update's history), in bytes per resource and per worker by
kind of resource. `--settings` runs one up per CLI environment, in turn, on the same staged tree.
"""

from __future__ import annotations

import argparse
import base64
import ctypes
import gzip
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import yaml

from tools.bench.preview import HOSTS, REPO, SKIP, _stage, simbench_config

# SOAP method -> (milliseconds, where the figure comes from).
CLONE_SOURCE = ("https://github.com/hashicorp/terraform/issues/3952 (vSphere provider): a thin-provisioned clone "
                "from a template \"takes around 2 mins\"")
VM_SOURCE = ("https://github.com/vmware/terraform-provider-vsphere/pull/1625: vsphere_virtual_machine cloned from "
             "a template, \"Creation complete after 2m25s\", i.e. 25 s after the 2 min clone for the post-clone "
             "reconfigure and the power-on; split evenly between the two (assumed)")
NO_FIGURE = "no published per-call time found; 2 s assumed (a host or switch configuration call, no data copied)"
DELAYS: dict[str, tuple[int, str]] = {
    "CloneVM_Task": (120_000, CLONE_SOURCE),
    "ReconfigVM_Task": (12_500, VM_SOURCE),
    "PowerOnVM_Task": (12_500, VM_SOURCE),
    "PowerOffVM_Task": (12_500, "as PowerOnVM_Task (assumed)"),
    "ShutdownGuest": (12_500, "as PowerOnVM_Task (assumed)"),
    "CreateDVS_Task": (2_000, NO_FIGURE),
    "CreateDVPortgroup_Task": (2_000, NO_FIGURE),
    "AddVirtualNic": (2_000, NO_FIGURE),
    "ReconfigureComputeResource_Task": (2_000, NO_FIGURE),
    "UpdateOptions": (2_000, NO_FIGURE),
    "EnableRuleset": (2_000, NO_FIGURE),
    "UpdateGraphicsConfig": (2_000, NO_FIGURE),
    "UpdateModuleOptionString": (2_000, NO_FIGURE),
}

# What each resource's create waits for, in order (pulumi-vsphere: the terraform provider's create
# functions; ours: components/dynamic/hostops.py). Keyed by resource type, or by a dynamic
# resource's `kind`.
CREATE_CALLS: dict[str, tuple[str, ...]] = {
    "vsphere:index/distributedVirtualSwitch:DistributedVirtualSwitch": ("CreateDVS_Task",),
    "vsphere:index/distributedPortGroup:DistributedPortGroup": ("CreateDVPortgroup_Task",),
    "vsphere:index/vnic:Vnic": ("AddVirtualNic",),
    # clone, the post-clone reconfigure, power on
    "vsphere:index/virtualMachine:VirtualMachine": ("CloneVM_Task", "ReconfigVM_Task", "PowerOnVM_Task"),
    "vsphere:index/computeClusterVmAntiAffinityRule:ComputeClusterVmAntiAffinityRule": (
        "ReconfigureComputeResource_Task",),
    "vsphere-host-advanced-option": ("UpdateOptions",),
    "vsphere-host-firewall-ruleset": ("EnableRuleset",),
    "vsphere-host-graphics": ("UpdateGraphicsConfig",),
    "vsphere-host-module-options": ("UpdateModuleOptionString",),
    # a running VM is shut down, reconfigured and powered on again (hostops.set_vgpu_profile)
    "vsphere-vm-vgpu": ("ShutdownGuest", "ReconfigVM_Task", "PowerOnVM_Task"),
    # a new VM's roll gives it its vGPU profile the same way (roll.py, _first_boot); without one, no call
    "vsphere-vm-roll": ("ShutdownGuest", "ReconfigVM_Task", "PowerOnVM_Task"),
}


def method_delay_flag(scale: float) -> str:
    return ",".join(f"{m}:{round(ms * scale)}" for m, (ms, _) in DELAYS.items())


def create_seconds(resource, scale: float) -> float:
    kind = resource.inputs.get("kind") if resource.type == "pulumi-python:dynamic:Resource" else resource.type
    if kind == "vsphere-vm-roll" and not resource.inputs.get("vgpuProfile"):
        return 0.0
    return sum(DELAYS[m][0] for m in CREATE_CALLS.get(kind, ())) * scale / 1000


def waits_for(resources: Iterable) -> dict[str, set[str]]:
    """Each resource's URN -> the URNs of the resources its create waits for (a dependency on a
    component is one on everything under it)."""
    resources = list(resources)
    by_urn = {r.urn: r for r in resources}
    children: dict[str, list[str]] = {}
    for r in resources:
        children.setdefault(r.parent_urn, []).append(r.urn)

    def expand(urn: str) -> set[str]:
        found = {urn}
        for child in children.get(urn, []):
            found |= expand(child)
        return found

    return {r.urn: {u for dep in r.dependencies for u in expand(dep) if u in by_urn and u != r.urn}
            for r in resources}


def critical_path(resources: Iterable, scale: float) -> tuple[float, list[str]]:
    """The longest chain of creates, in seconds, and its resources' names, first to last."""
    resources = list(resources)
    by_urn = {r.urn: r for r in resources}
    before_of = waits_for(resources)

    memo: dict[str, tuple[float, list[str]]] = {}

    def longest(urn: str) -> tuple[float, list[str]]:
        if urn not in memo:
            r = by_urn[urn]
            before: tuple[float, list[str]] = (0.0, [])
            for u in sorted(before_of[urn]):
                before = max(before, longest(u), key=lambda t: t[0])
            memo[urn] = (before[0] + create_seconds(r, scale), before[1] + [r.name])
        return memo[urn]

    return max((longest(u) for u in by_urn), key=lambda t: t[0])


def _event_times(event_log: Path) -> tuple[float, dict[str, float], dict[str, float]]:
    """From the engine's event log of an update: when it started, and each resource's step start and end
    (the engine's timestamps are whole seconds)."""
    t0: float | None = None
    start: dict[str, float] = {}
    end: dict[str, float] = {}
    for line in event_log.read_text().splitlines():
        event = json.loads(line)
        stamp = float(event.get("timestamp", 0))
        t0 = stamp if t0 is None else min(t0, stamp)
        for key, into in (("resourcePreEvent", start), ("resOutputsEvent", end)):
            body = event.get(key)
            if body and not body.get("planning"):
                into.setdefault(body["metadata"]["urn"], stamp)
    return t0 or 0.0, start, end


def _durations(up_log: str) -> dict[str, float]:
    """Each resource's create as the engine printed it (`<type> <name> created (0.31s)`), by name."""
    found = {}
    for match in re.finditer(r"^ \+ +\S+ (\S+) created \(([\d.]+)(m?)s\)", up_log, re.MULTILINE):
        found[match.group(1)] = float(match.group(2)) * (60 if match.group(3) else 1)
    return found


def realized_chain(resources: Iterable, event_log: Path, up_log: str) -> list[tuple[str, str, float, float]]:
    """The chain of creates the update actually waited on: from the create that finished last, back through
    the dependency that finished last each time. Each link: (kind, name, seconds its create took, seconds it
    waited after what it waited for had finished: the engine's scheduling and checkpoints)."""
    resources = [r for r in resources if r.custom]
    by_urn = {r.urn: r for r in resources}
    before_of = waits_for(resources)
    t0, start, end = _event_times(event_log)
    took = _durations(up_log)
    ended = {u: t for u, t in end.items() if u in by_urn and u in start}
    chain: list[tuple[str, str, float, float]] = []
    current = max(ended, key=lambda u: (ended[u], u), default=None)
    while current is not None:
        r = by_urn[current]
        deps = [u for u in before_of[current] if u in ended]
        previous = max(deps, key=lambda u: (ended[u], u), default=None)
        ready = ended[previous] if previous else t0
        ran = took.get(r.name, ended[current] - start[current])
        waited = max(0.0, ended[current] - ran - ready)
        kind = r.inputs.get("kind") if r.type == "pulumi-python:dynamic:Resource" else r.type.rsplit(":", 1)[-1]
        chain.append((str(kind), r.name, ran, waited))
        current = previous
    return list(reversed(chain))


def chain_table(chain: list[tuple[str, str, float, float]]) -> list[str]:
    """The realized chain grouped by runs of the same kind, in order."""
    rows: list[list] = []
    for kind, name, ran, waited in chain:
        if rows and rows[-1][0] == kind:
            rows[-1][1] += 1
            rows[-1][3] += ran
            rows[-1][4] += waited
            rows[-1][2] = f"{rows[-1][2].split(' .. ')[0]} .. {name}"
        else:
            rows.append([kind, 1, name, ran, waited])
    lines = ["| on the chain | resources | creates took | waited between steps |", "|---|---|---|---|"]
    lines += [f"| {kind} | {count} ({names}) | {ran:.0f} s | {waited:.0f} s |"
              for kind, count, names, ran, waited in rows]
    total_ran = sum(c[2] for c in chain)
    total_waited = sum(c[3] for c in chain)
    lines.append(f"| total | {len(chain)} | {total_ran:.0f} s | {total_waited:.0f} s |")
    return lines


# ---------------------------------------------------------------- checkpoints and state size
# Each save of the file backend ends with the state file renamed into place (gocloud fileblob writes a
# temporary file, then renames it; github.com/pulumi/pulumi/pkg/v3@v3.259.0 backend/diy/state.go:316),
# after the previous file was copied to `<file>.bak` (state.go:301). The checkpoint it writes names
# when the save began: Snap() stamps manifest.time (backend/snapshot.go:769) before it serializes. So a
# save lasts from its manifest.time to the rename, and a watcher of the state directory sees every one.

IN_MOVED_TO, IN_CREATE, IN_ISDIR = 0x80, 0x100, 0x40000000
# enough for the manifest: it comes first; zstd decodes whole blocks (up to 128 kB of JSON)
HEAD_BYTES = {".json": 1024, ".gz": 4096, ".zst": 65536}


class StateWatcher:
    """inotify on a file backend's directory tree: each file renamed into it, when (time.time_ns()), and
    the first bytes of each state file as it was when the rename was seen."""

    def __init__(self, stack: str):
        self.stack = stack
        self.records: list[dict] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def is_state(self, name: str) -> bool:
        return name in (f"{self.stack}.json", f"{self.stack}.json.gz", f"{self.stack}.json.zst")

    def start(self, root: Path) -> None:
        self._thread = threading.Thread(target=self._run, args=(root,), daemon=True)
        self._thread.start()

    def stop(self) -> list[dict]:
        self._stop.set()
        if self._thread:
            self._thread.join(5)
        return self.records

    def _run(self, root: Path) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        dirs: dict[int, Path] = {}

        def watch(path: Path, new: bool) -> None:
            wd = libc.inotify_add_watch(fd, os.fsencode(path), IN_MOVED_TO | IN_CREATE)
            if wd >= 0:
                dirs[wd] = path
                for child in path.iterdir():  # made before the watch was added
                    if child.is_dir():
                        watch(child, new)
                    elif new:  # in a directory made since: a history or backup file
                        self.records.append({"t": time.time_ns(), "path": str(child.relative_to(root))})

        watch(root, False)
        try:
            while not self._stop.is_set():
                if not select.select([fd], [], [], 0.2)[0]:
                    continue
                data = os.read(fd, 1 << 16)
                now = time.time_ns()
                offset = 0
                while offset < len(data):
                    wd, mask, _cookie, size = struct.unpack_from("iIII", data, offset)
                    name = data[offset + 16:offset + 16 + size].rstrip(b"\0").decode()
                    offset += 16 + size
                    path = dirs.get(wd, root) / name
                    if mask & IN_ISDIR:
                        watch(path, True)
                        continue
                    if not mask & IN_MOVED_TO:
                        continue
                    record = {"t": now, "path": str(path.relative_to(root))}
                    if self.is_state(name):
                        try:
                            with open(path, "rb") as f:
                                head = f.read(HEAD_BYTES[Path(name).suffix])
                            record["head"] = base64.b64encode(head).decode()
                        except FileNotFoundError:
                            pass
                    self.records.append(record)
        finally:
            os.close(fd)


def _decompress_head(name: str, head: bytes) -> str:
    if name.endswith(".gz"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head).decode(errors="replace")
    if name.endswith(".zst"):
        done = subprocess.run(["zstd", "-dcq"], input=head, capture_output=True)
        return done.stdout.decode(errors="replace")
    return head.decode(errors="replace")


def manifest_ns(text: str) -> int | None:
    """A checkpoint's manifest.time (Go's RFC 3339 with nanoseconds) in nanoseconds since the epoch."""
    match = re.search(r'"manifest":\{"time":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)"', text)
    if not match:
        return None
    whole = datetime.fromisoformat(match.group(1) + ("+00:00" if match.group(3) == "Z" else match.group(3)))
    return int(whole.timestamp()) * 1_000_000_000 + int((match.group(2) or "0").ljust(9, "0")[:9])


@dataclass
class Save:
    start: int   # ns: the checkpoint's manifest.time
    backup: int  # ns: `<file>.bak` renamed into place (0: not seen)
    end: int     # ns: the state file renamed into place

    @property
    def seconds(self) -> float:
        return (self.end - self.start) / 1e9


def update_saves(records: list[dict]) -> tuple[list[Save], int]:
    """The saves of the first update in a watcher's records (those before its history file or its
    backup, which the backend writes once the update is over: backend/diy/backend.go:1456-1457), and
    how many renames of the state file had no readable manifest (the file was already replaced when read)."""
    saves: list[Save] = []
    unread = 0
    backup = 0
    for record in records:
        parts = Path(record["path"]).parts
        name = parts[-1]
        if "history" in parts or "backups" in parts:
            break
        if name.endswith(".bak"):
            backup = record["t"]
            continue
        if "start" in record:  # as --record writes them
            start = record["start"]
        elif "head" in record:
            start = manifest_ns(_decompress_head(name, base64.b64decode(record["head"])))
        else:
            continue
        if start is None or (saves and start <= saves[-1].start):
            unread += 1  # an empty stack (stack init) or a newer file read late
            continue
        saves.append(Save(start, backup if backup >= start else 0, record["t"]))
    return saves, unread


def recorded(records: list[dict]) -> list[dict]:
    """The watcher's records with each state file's head replaced by its manifest time."""
    out = []
    for record in records:
        record = dict(record)
        head = record.pop("head", None)
        if head is not None:
            record["start"] = manifest_ns(_decompress_head(record["path"], base64.b64decode(head)))
        out.append(record)
    return out


def save_summary(saves: list[Save], wall: float) -> dict[str, float]:
    seconds = sorted(s.seconds for s in saves)
    before_write = [(s.backup - s.start) / 1e9 for s in saves if s.backup]
    # from one save's rename to the next one's start: the check after the write (state.go:386), the
    # next mutation, or no step waiting
    gaps = sorted((b.start - a.end) / 1e9 for a, b in zip(saves, saves[1:], strict=False))
    return {
        "gap": gaps[len(gaps) // 2] if gaps else 0.0,
        "saves": len(saves),
        "seconds": sum(seconds),
        "median": seconds[len(seconds) // 2] if seconds else 0.0,
        "max": seconds[-1] if seconds else 0.0,
        "share": sum(seconds) / wall if wall else 0.0,
        # serialize, verify, marshal and copy the previous file to .bak, against the write itself
        "before_write": sum(before_write),
    }


def read_checkpoint(path: Path) -> dict:
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    elif path.name.endswith(".zst"):
        data = subprocess.run(["zstd", "-dcq"], input=data, capture_output=True, check=True).stdout
    return json.loads(data)


def resource_category(resource: dict) -> str:
    type_ = resource["type"]
    if type_ == "pulumi:pulumi:Stack":
        return "stack outputs"
    if type_.startswith("pulumi:providers:"):
        return "providers"
    if type_ == "vsphere:index/virtualMachine:VirtualMachine":
        return "VM"
    if type_.startswith("command:"):
        return "Command"
    kind = (resource.get("inputs") or {}).get("kind")
    if type_ == "pulumi-python:dynamic:Resource" and kind in ("vsphere-vm-roll", "vsphere-vm-vgpu"):
        return "roll" if kind == "vsphere-vm-roll" else "vGPU"
    if type_ == "pulumi-python:dynamic:Resource" and str(kind).startswith("vsphere-host-"):
        return "host settings"
    if not resource.get("custom"):
        return "components"
    return "other"


CATEGORIES = ("VM", "roll", "vGPU", "Command", "host settings", "components", "stack outputs", "providers", "other")


def state_sizes(checkpoint: dict) -> dict[str, tuple[int, int]]:
    """Category -> (resources, bytes of their compact JSON as the backend writes it: state.go:225)."""
    sizes = {c: (0, 0) for c in CATEGORIES}
    for resource in checkpoint["checkpoint"]["latest"]["resources"]:
        category = resource_category(resource)
        count, size = sizes[category]
        sizes[category] = (count + 1, size + len(json.dumps(resource, separators=(",", ":"),
                                                            ensure_ascii=False).encode()))
    return sizes


def size_table(sizes: dict[str, tuple[int, int]], workers: int, state_bytes: int) -> list[str]:
    total = sum(c for c, _ in sizes.values())
    lines = [f"state after up: {state_bytes:,} B on disk, {total} resources, "
             f"{state_bytes / max(total, 1):,.0f} B per resource, {state_bytes / workers:,.0f} B per worker",
             "| resources | count | bytes | B per resource | B per worker |", "|---|---|---|---|---|"]
    for category, (count, size) in sizes.items():
        if count:
            lines.append(f"| {category} | {count} | {size:,} | {size / count:,.0f} | {size / workers:,.0f} |")
    return lines


def up_history_checkpoint(state_dir: Path, stack: str) -> Path | None:
    """The copy of the state the backend keeps with the first update's history (state.go:701)."""
    found = sorted(state_dir.glob(f".pulumi/history/**/{stack}-*.checkpoint.json*"))
    return found[0] if found else None


@dataclass
class UpRun:
    created: int
    wall: int
    output: str
    records: list[dict] = field(default_factory=list)
    checkpoint: Path | None = None  # the state after up (a copy in the work dir, removed by the caller)


def up_seconds(work: Path, scale: float, parallel: int | None, env: Mapping[str, str],
               event_log: Path, keep: Path, hosts: int = HOSTS) -> UpRun:
    """`pulumi up` (sim-preview.sh --up) against lab-vcsim: resources created, its seconds, the script's
    output, the state directory's renames during the run, and the state after up copied into `keep`;
    the engine's event log of the update goes to `event_log`."""
    run_env = dict(env, SIM_VCSIM_ARGS=f"-cluster 1 -host {hosts} -method-delay {method_delay_flag(scale)}",
                   SIM_EVENT_LOG=str(event_log), SIM_KEEP="1")
    if parallel:
        run_env["SIM_PARALLEL"] = str(parallel)
    watcher = StateWatcher("simbench")
    lines: list[str] = []
    with subprocess.Popen(["bash", str(work / "scripts/sim-preview.sh"), "--stack", "simbench", "--up",
                           "--no-policy"], cwd=work, env=run_env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout
        for line in proc.stdout:
            lines.append(line)
            # the stack exists (its first, empty save is done) and up has not started
            found = re.match(r"PASS stack simbench in (/tmp/sim-preview\.[^/\s]+)/proj ", line)
            if found:
                watcher.start(Path(found.group(1)) / "state")
    records = watcher.stop()
    output = "".join(lines)
    kept = re.search(r"^work dir kept: (/tmp/sim-preview\.[^/\s]+)$", output, re.MULTILINE)
    checkpoint = None
    if kept:
        history = up_history_checkpoint(Path(kept.group(1)) / "state", "simbench")
        if history:
            checkpoint = keep / history.name
            shutil.copy2(history, checkpoint)
        if proc.returncode == 0:
            shutil.rmtree(kept.group(1), ignore_errors=True)
        else:  # the engine's logs of a failed run are what explains it
            print(f"the failed run's logs are kept in {kept.group(1)}", file=sys.stderr)
    if proc.returncode == SKIP:
        print(output.strip().splitlines()[-1])
        raise SystemExit(SKIP)
    match = re.search(r"PASS up(?: --parallel \d+)?: (\d+) created, (\d+)s", output)
    if proc.returncode != 0 or not match:
        print(output[-5000:], file=sys.stderr)
        if match:  # up itself was measured; what failed came after it
            print(f"up: {match.group(1)} created in {match.group(2)} s; the run failed after it", file=sys.stderr)
        raise SystemExit(1)
    return UpRun(int(match.group(1)), int(match.group(2)), output, records, checkpoint)


def run_parts(parts: list[Path], scale: float, parallel: int | None, env: Mapping[str, str], tmp: Path,
              hosts: int) -> list[tuple[UpRun, Path]]:
    """`up_seconds` of each staged part at once, each with its own simulator, state and event log (one part:
    the lab as one stack); each part's run and its event log."""
    def one(index: int) -> tuple[UpRun, Path]:
        event_log = tmp / f"events-{parallel}-{index}.jsonl"
        keep = tmp / f"keep-{index}"
        keep.mkdir(exist_ok=True)
        return up_seconds(parts[index], scale, parallel, env, event_log, keep, hosts), event_log

    if len(parts) == 1:
        return [one(0)]
    with ThreadPoolExecutor(max_workers=len(parts)) as pool:
        return list(pool.map(one, range(len(parts))))


def parse_settings(text: str) -> list[tuple[str, dict[str, str]]]:
    """`default;PULUMI_DIY_BACKEND_GZIP=true;A=1,B=2` -> each setting's label and environment."""
    settings = []
    for item in (i.strip() for i in text.split(";")):
        if item:
            env = {} if item == "default" else dict(pair.split("=", 1) for pair in item.split(","))
            settings.append((item, env))
    return settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="4,64,512", help="comma-separated worker counts")
    parser.add_argument("--scale", type=float, default=0.1, help="multiplies every delay (1 = a real vCenter)")
    parser.add_argument("--parallel", default="0",
                        help="comma-separated engine --parallel values; 0 is the engine's default")
    parser.add_argument("--settings", default="default",
                        help="';'-separated environments for the CLI, each 'default' or K=V[,K=V], "
                             "e.g. 'default;PULUMI_DIY_BACKEND_GZIP=true': one up each, in turn")
    parser.add_argument("--record", type=Path, help="keep each run's state after up, state-directory renames "
                                                    "and output in this directory")
    parser.add_argument("--hosts", type=int, default=HOSTS, help=f"worker hosts (default {HOSTS})")
    parser.add_argument("--stacks", type=int, default=1,
                        help="run this many copies of the stack at once, each with its own simulator and state "
                             "(a lab split into that many parts, each the size given)")
    parser.add_argument("--plan-only", action="store_true", help="critical paths only, no pulumi up")
    args = parser.parse_args(argv)
    from tools.mockrun import run_program

    sim = yaml.safe_load((REPO / "Pulumi.sim.yaml").read_text())
    env = dict(os.environ)
    env.setdefault("PULUMI_CACHE_DIR", str(REPO / ".cache" / "pulumi"))
    env.setdefault("VENV", str(REPO / ".venv"))
    env.setdefault("VCSIM", str(REPO / "build" / "bin" / "lab-vcsim"))
    settings = parse_settings(args.settings)
    print(f"delays (x{args.scale}): "
          + ", ".join(f"{m} {ms * args.scale / 1000:g} s" for m, (ms, _) in DELAYS.items()))
    print("| workers | resources | critical path | engine --parallel | setting | up wall "
          "| wall / critical path | checkpoint saves | time in saves | share of wall | state after up "
          "| B per resource | load before / after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    chains: list[tuple[int, int, str, list[tuple[str, str, float, float]]]] = []
    details: list[tuple[int, int, str, list[str]]] = []
    for workers in (int(w) for w in args.workers.split(",")):
        config = simbench_config(sim, workers, args.hosts)
        run = run_program(config["config"], stack="simbench")
        path_s, chain = critical_path(run.resources, args.scale)
        if args.plan_only:
            print(f"| {workers} | {len(run.resources) + 1} | {path_s:.1f} s ({' > '.join(chain)}) | - | - | - | - "
                  f"| - | - | - | - | - | - |", flush=True)
            continue
        with tempfile.TemporaryDirectory(prefix="bench-up.") as tmp:
            parts = [_stage(REPO, Path(tmp) / f"tree{i}", workers, args.hosts) for i in range(args.stacks)]
            for parallel in (int(p) for p in args.parallel.split(",")):
                for label, extra in settings:
                    t = time.monotonic()
                    load_before = os.getloadavg()[0]
                    runs = run_parts(parts, args.scale, parallel or None, dict(env, **extra), Path(tmp), args.hosts)
                    load_after = os.getloadavg()[0]
                    if len(runs) > 1:
                        print(f"| {workers} x {len(runs)} stacks at once | {sum(r.created for r, _ in runs)} "
                              f"| {path_s:.1f} s | {parallel or 'default'} | {label} | {time.monotonic() - t:.0f} s "
                              f"(slowest up {max(r.wall for r, _ in runs)} s) "
                              f"| {max(r.wall for r, _ in runs) / path_s:.2f} (slowest up) | | | | | | "
                              f"{load_before:.1f} / {load_after:.1f} |", flush=True)
                    up, event_log = max(runs, key=lambda run: run[0].wall)  # the slowest part sets the pace
                    analysis = time.perf_counter()
                    saves, unread = update_saves(up.records)
                    summary = save_summary(saves, up.wall)
                    state_bytes = up.checkpoint.stat().st_size if up.checkpoint else 0
                    sizes = state_sizes(read_checkpoint(up.checkpoint)) if up.checkpoint else {}
                    waited_on = realized_chain(run.resources, event_log, up.output)
                    analysis = time.perf_counter() - analysis
                    ratio = up.wall / path_s if path_s else float("inf")
                    resources = sum(c for c, _ in sizes.values()) or up.created
                    print(f"| {workers} | {up.created} | {path_s:.1f} s | {parallel or 'default'} | {label} "
                          f"| {up.wall} s | {ratio:.2f} | {summary['saves']} | {summary['seconds']:.1f} s "
                          f"| {summary['share']:.0%} | {state_bytes:,} B | {state_bytes / resources:,.0f} "
                          f"| {load_before:.1f} / {load_after:.1f} |  (run {time.monotonic() - t:.0f} s)", flush=True)
                    notes = [f"saves: median {summary['median'] * 1000:.0f} ms, "
                             f"longest {summary['max'] * 1000:.0f} ms;"
                             " before the write (serialize, verify, marshal, copy to .bak)"
                             f" {summary['before_write']:.1f} of the {summary['seconds']:.1f} s;"
                             f" median gap to the next save {summary['gap'] * 1000:.0f} ms;"
                             f" {unread} renames read too late to time",
                             f"tools.bench.up's own analysis of this run (saves, state sizes, chain): {analysis:.2f} s"]
                    if sizes:
                        notes += size_table(sizes, workers, state_bytes)
                    details.append((workers, parallel, label, notes))
                    chains.append((workers, parallel, label, waited_on))
                    if args.record:
                        out = args.record / f"{workers}-{parallel}-{len(details)}"
                        out.mkdir(parents=True, exist_ok=True)
                        (out / "renames.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recorded(up.records)))
                        (out / "output.txt").write_text(up.output)
                        if up.checkpoint:
                            shutil.copy2(up.checkpoint, out / up.checkpoint.name)
                    if up.checkpoint:
                        up.checkpoint.unlink()
    for workers, parallel, label, notes in details:
        print(f"\nCheckpoints and state at {workers} workers, engine --parallel {parallel or 'default'}, {label}:")
        print("\n".join(notes), flush=True)
    for workers, parallel, label, waited_on in chains:
        print(f"\nWhat the update waited on at {workers} workers, engine --parallel {parallel or 'default'}, {label}:")
        print("\n".join(chain_table(waited_on)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
