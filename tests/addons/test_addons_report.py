"""The acceptance report on logs in each tool's own format: figures, thresholds, bad input."""

from __future__ import annotations

import csv
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import builders
import pytest
from required_tools import require_tool

from tools import report
from tools.report import LogError, main, parse_ib_write_bw, parse_images, parse_nccl

LOGS = Path(__file__).parent / "logs"
DEEPOPS = LOGS / "deepops"
FORMATS = LOGS / "formats"
# Logs real runs printed, unchanged (provenance: logs/MANIFEST.tsv and logs/README.md).
REAL = LOGS / "real"
ONE_GPU = REAL / "nccl-tests-2.19.6-all_reduce-h200-1gpu.log"
REPO = Path(__file__).resolve().parents[2]


def text(path: Path) -> str:
    return path.read_text()


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.report", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60)


def stack_args(tmp_path: Path, shape: str, stack: str) -> list[str]:
    """`--stack <stack> --stack-file <a test stack of that shape>` (tests/builders.py)."""
    path = builders.write_stack_file(tmp_path, builders.stack(shape), stack)
    return ["--stack", stack, "--stack-file", str(path)]


def copy_logs(tmp_path: Path, *names: str, source: Path = DEEPOPS) -> Path:
    for name in names or [p.name for p in source.iterdir()]:
        shutil.copy(source / name, tmp_path / name)
    return tmp_path


# ---------------------------------------------------------------- parsers on the samples


def test_ib_write_bw_guide_figure():
    r = parse_ib_write_bw(text(DEEPOPS / "ib-write-bw-client.log"), "client.log")
    assert (r.size_bytes, r.peak_gbps, r.average_gbps) == (65536, 92.42, 92.40)


def test_ib_write_bw_in_mb_per_second_is_converted():
    r = parse_ib_write_bw(text(FORMATS / "ib-write-bw-mbps.log"), "mbps.log")
    assert r.average_gbps == pytest.approx(11016.84 * 2 ** 20 * 8 / 1e9)


def test_nccl_bus_bandwidth_at_the_largest_message():
    r = parse_nccl(text(DEEPOPS / "nccl-allreduce-rdma.log"), "x.log")
    assert (r.transport, r.size_bytes, r.busbw_gbs, r.wrong) == ("rdma", 2 ** 31, 22.92, 0)
    tcp = parse_nccl(text(DEEPOPS / "nccl-allreduce-tcp.log"), "x.log")
    assert (tcp.transport, tcp.busbw_gbs) == ("tcp", 10.41)


def test_nccl_tests_without_the_root_column():
    r = parse_nccl(text(FORMATS / "nccl-tests-no-root-rdma.log"), "nccl-tests-no-root-rdma.log")
    assert (r.transport, r.size_bytes, r.busbw_gbs) == ("rdma", 2 ** 31, 10.90)


def test_horovod_and_tf_cnn_benchmarks_throughput():
    h = parse_images(text(DEEPOPS / "horovod-resnet50-rdma.log"), "h.log")
    assert (h.transport, h.images_per_sec, h.gpus) == ("rdma", 3756.0, 16)
    tf = parse_images(text(FORMATS / "tf-cnn-benchmarks-rdma.log"), "tf.log")
    assert (tf.transport, tf.images_per_sec, tf.gpus) == ("rdma", 891.84, None)


def test_transport_from_the_file_name_when_nccl_is_quiet():
    quiet = "\n".join(ln for ln in text(DEEPOPS / "nccl-allreduce-tcp.log").splitlines() if "NCCL INFO" not in ln)
    assert parse_nccl(quiet, "run-tcp.log").transport == "tcp"
    with pytest.raises(LogError, match="cannot tell an RDMA run from a TCP run"):
        parse_nccl(quiet, "run.log")


# ---------------------------------------------------------------- the CLI


def test_guide_figures_pass_with_the_deepops_nics():
    done = run_cli(str(DEEPOPS), "--nics-per-node", "2")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "92.40 Gb/s" in out and "92.4 %" in out
    assert "22.92 GB/s" in out and "25 GB/s (2 x 100 Gb/s)" in out and "91.7 %" in out
    assert "RDMA over TCP speed-up, NCCL busbw" in out and "2.20x" in out
    assert "RDMA over TCP speed-up, Horovod img/s" in out and "1.40x" in out
    assert "3756.0 img/s" in out
    assert out.count("PASS") == 2 and "FAIL" not in out


def test_one_nic_per_node_flags_an_impossible_share(tmp_path):
    # The lab's workers have one PVRDMA NIC: the DeepOps nodes' NCCL figure is 183 % of that, which no
    # run can reach; that is an invalid measurement, not a pass.
    done = run_cli(str(DEEPOPS), *stack_args(tmp_path, "lab", "lab"))
    assert done.returncode == 2, done.stdout + done.stderr
    row = next(ln for ln in done.stdout.splitlines() if "nccl-allreduce-rdma.log" in ln)
    assert "183.4 %" in row and row.rstrip().endswith("INVALID")
    assert "NCCL_ALGO=Ring" in done.stdout and "an invalid run, not a pass" in done.stderr


def test_readme_sample_grades_at_the_readme_figures_on_a_baremetal_stack(tmp_path):
    # The sample's nodes are the DeepOps DGX systems: two ConnectX-5 rails each (10.10.11.x is the
    # first rail's subnet), which is a bare-metal stack's default.
    done = run_cli(str(DEEPOPS), *stack_args(tmp_path, "baremetal", "openshift"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 x 100 Gb/s per node (stack 'openshift': bare metal, one NIC per SR-IOV rail: enp5s0, enp132s0)" in done.stdout
    doc = (REPO / "docs" / "parts.md").read_text()  # where the sample's figures are quoted
    for figure in ("92.4 %", "91.7 %", "22.92 GB/s", "92.40 Gb/s"):
        assert figure in done.stdout and figure in doc, figure


def test_a_garbage_log_is_an_invalid_run(tmp_path):
    logs = copy_logs(tmp_path, "ib-write-bw-client.log")
    (logs / "nccl-allreduce-rdma.log").write_text(
        'Error from server (NotFound): jobs.batch "nccl-allreduce-rdma-launcher" not found\n')
    done = run_cli(str(logs), *stack_args(tmp_path / "stack", "baremetal", "openshift"))
    assert done.returncode == 2
    assert "nccl-allreduce-rdma.log: no ib_write_bw, nccl-tests or Horovod result in it" in done.stderr


def test_below_threshold_exits_one(tmp_path):
    logs = copy_logs(tmp_path)
    ib = logs / "ib-write-bw-client.log"
    ib.write_text(text(ib).replace("92.42              92.40", "88.31              86.05"))
    done = run_cli(str(logs), "--nics-per-node", "2")
    assert done.returncode == 1
    assert "86.05 Gb/s" in done.stdout and "86.0 %" in done.stdout
    row = next(ln for ln in done.stdout.splitlines() if ln.startswith("ib_write_bw"))
    assert row.rstrip().endswith("FAIL")
    assert "1 measurement(s) below threshold" in done.stderr


@pytest.mark.parametrize("flags, failing", [
    (["--nics-per-node", "2", "--ib-threshold", "95"], "ib_write_bw"),
    (["--nics-per-node", "2", "--nccl-threshold", "95"], "NCCL all_reduce busbw 2 GB (nccl-allreduce-rdma.log)"),
    (["--nics-per-node", "2", "--link-gbps", "200"], "ib_write_bw"),
    (["--nics-per-node", "2", "--min-speedup", "2.5"], "RDMA over TCP speed-up, NCCL busbw"),
])
def test_flags_move_the_bar(flags, failing):
    done = run_cli(str(DEEPOPS), *flags)
    assert done.returncode == 1, done.stdout
    row = next(ln for ln in done.stdout.splitlines() if ln.startswith(failing))
    assert row.rstrip().endswith("FAIL")


def test_tcp_run_is_never_judged_against_line_rate():
    row = next(ln for ln in run_cli(str(DEEPOPS), "--nics-per-node", "2").stdout.splitlines()
               if "nccl-allreduce-tcp.log" in ln)
    assert "41.6 %" in row and row.rstrip().endswith("info")


def test_wrong_values_in_nccl_results_fail(tmp_path):
    logs = copy_logs(tmp_path, "nccl-allreduce-rdma.log")
    path = logs / "nccl-allreduce-rdma.log"
    path.write_text(text(path).replace("# Out of bounds values : 0 OK", "# Out of bounds values : 12 FAILED"))
    done = run_cli(str(logs), "--nics-per-node", "2")
    assert done.returncode == 1 and "12 out-of-bounds values" in done.stdout


def cut(path: Path, marker: str) -> str:
    """The log as it looks when the pod died just before `marker`."""
    content = text(path)
    return content[:content.index(marker)]


@pytest.mark.parametrize("name, marker, words", [
    ("ib-write-bw-client.log", " 65536      5000", "ends before its result row"),
    ("ib-write-bw-client.log", " #bytes", "without its results header"),
    ("nccl-allreduce-rdma.log", "   268435456", "ends before '# Avg bus bandwidth' (truncated at 134217728 bytes)"),
    ("nccl-allreduce-rdma.log", "#       size", "without its table header"),
    ("horovod-resnet50-rdma.log", "Total img/sec", "without its throughput summary"),
])
def test_truncated_logs_are_a_clear_error(tmp_path, name, marker, words):
    (tmp_path / name).write_text(cut(DEEPOPS / name, marker))
    done = run_cli(str(tmp_path))
    assert done.returncode == 2
    assert words in done.stderr and name in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_malformed_logs_are_a_clear_error(tmp_path):
    nccl = text(DEEPOPS / "nccl-allreduce-rdma.log").replace("  22.92       0   175853", "  garbage       0   175853")
    (tmp_path / "nccl-allreduce-rdma.log").write_text(nccl)
    (tmp_path / "empty.log").write_text("")
    (tmp_path / "binary.log").write_bytes(b"\xff\xfe\x00RDMA_Write BW Test\x81")
    done = run_cli(str(tmp_path))
    assert done.returncode == 2
    assert "malformed nccl-tests row" in done.stderr
    assert "empty.log: empty log" in done.stderr
    assert "binary.log: not a text log" in done.stderr
    assert "Traceback" not in done.stderr


def test_one_bad_log_spoils_the_run_but_the_rest_is_still_shown(tmp_path):
    logs = copy_logs(tmp_path)
    (logs / "horovod-resnet50-tcp.log").write_text(cut(DEEPOPS / "horovod-resnet50-tcp.log", "Running benchmark"))
    done = run_cli(str(logs), "--nics-per-node", "2")
    assert done.returncode == 2
    assert "92.40 Gb/s" in done.stdout and "horovod-resnet50-tcp.log" in done.stderr


def test_a_file_without_a_result_is_not_skipped(tmp_path):
    logs = copy_logs(tmp_path, "ib-write-bw-client.log")
    (logs / "nvidia-smi.log").write_text("| NVIDIA-SMI 550.127.05   Driver Version: 550.127.05 |\n")
    done = run_cli(str(logs))
    assert done.returncode == 2 and "nvidia-smi.log: no ib_write_bw" in done.stderr


def test_nothing_to_judge(tmp_path):
    assert run_cli(str(tmp_path)).returncode == 2
    missing = run_cli(str(tmp_path / "nope"))
    assert missing.returncode == 2 and "not a directory" in missing.stderr and "Traceback" not in missing.stderr


def test_bad_flags_are_refused():
    done = run_cli(str(DEEPOPS), "--link-gbps", "0")
    assert done.returncode == 2 and "--link-gbps must be positive" in done.stderr


def test_main_in_process_matches_the_cli(capsys):
    assert main([str(DEEPOPS), "--nics-per-node", "2"]) == report.EXIT_OK
    assert "91.7 %" in capsys.readouterr().out


def test_make_report_runs_the_cli(tmp_path):
    require_tool("make")
    stack = " ".join(stack_args(tmp_path, "baremetal", "openshift")[2:])
    done = subprocess.run(["make", "-s", "report", f"LOGS={DEEPOPS}", "STACK=openshift", f"REPORT_ARGS={stack}"],
                          cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "22.92 GB/s" in done.stdout
    usage = subprocess.run(["make", "-s", "report"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert usage.returncode != 0 and "usage: make report LOGS=" in usage.stdout


def test_an_mpi_log_that_died_in_nccl_init_is_an_error(tmp_path):
    head = "\n".join(ln for ln in text(DEEPOPS / "nccl-allreduce-rdma.log").splitlines() if "NCCL INFO" in ln)
    (tmp_path / "nccl-allreduce-rdma.log").write_text(head + "\n")
    done = run_cli(str(tmp_path))
    assert done.returncode == 2 and "without benchmark output" in done.stderr


def test_link_rate_comes_from_the_stack(tmp_path):
    # The same DeepOps logs against 200 Gb/s rails: ib_write_bw's 92.40 Gb/s is 46.2 % of the link.
    config = builders.baremetal_stack()
    rails = [{"pfName": f"enp{i}s0", "vlan": 111 + i, "networkName": f"sriov11{1 + i}",
              "resourceName": f"sriov_11{1 + i}", "cidr": f"10.10.1{1 + i}.0/24", "linkGbps": 200} for i in range(2)]
    config["gpu-lab:addons"] = {"network": {"enabled": True, "mode": "sriov", "sriov": {"rails": rails}},
                                "jobs": {"nodes": list(builders.METAL_WORKERS)}}
    stack_file = builders.write_stack_file(tmp_path, config, "fast")
    done = run_cli(str(DEEPOPS), "--stack", "fast", "--stack-file", str(stack_file))
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"line rate: {len(rails)} x 200 Gb/s per node" in done.stdout
    assert "46.2 %" in done.stdout


# ---------------------------------------------------------------- today's nccl-tests (2.19.6) and NCCL (2.28.9)


def test_current_nccl_tests_format_parses():
    # `# nccl-tests version` and `# Collective test starting` header lines, `[0000:00:06]` bus ids,
    # `#wrong`, NCCL's `nRanks 1 nNodes 1` line
    r = parse_nccl(text(ONE_GPU), ONE_GPU.name)
    assert (r.transport, r.size_bytes, r.busbw_gbs, r.wrong) == ("tcp", 2 ** 28, 0.0, 0)
    assert (r.span.nodes, r.span.ranks, r.span.one_node) == (1, 1, True)
    assert r.span.says == "NCCL: nRanks 1 nNodes 1; nccl-tests: 1 rank(s) on 1 host(s) (vm)"


def test_a_run_on_one_node_is_invalid(tmp_path):
    logs = copy_logs(tmp_path, ONE_GPU.name, source=REAL)
    done = run_cli(str(logs))
    assert done.returncode == 2, done.stdout + done.stderr
    row = next(ln for ln in done.stdout.splitlines() if ONE_GPU.name in ln)
    assert "ranks on >= 2 nodes" in row and row.rstrip().endswith("INVALID")
    assert "0.0 %" not in row  # one rank moved nothing across a network: no share of line rate
    assert (f"invalid: {ONE_GPU.name}: a run on one node is no measurement of the fabric (the log says NCCL: "
            "nRanks 1 nNodes 1; nccl-tests: 1 rank(s) on 1 host(s) (vm))") in done.stderr
    assert "a valid run needs ranks on at least two nodes" in done.stderr
    assert "1 run(s) on one node: an invalid run, not a pass" in done.stderr
    assert "Traceback" not in done.stderr


def two_nodes(log: str, busbw: str = "11.00") -> str:
    """The 1-GPU log as a 2-node, 1-GPU-per-node RDMA run would print it: DERIVED, not a measured run.

    Changed: NCCL's span lines (nRanks/nNodes, nranks), a second nccl-tests device line on another
    host, NCCL's IB transport lines, and the 256 MB row's out-of-place busbw (`busbw`, a made-up
    figure). Everything else is the real log's."""
    log = log.replace("nRanks 1 nNodes 1", "nRanks 2 nNodes 2").replace(" nranks 1 ", " nranks 2 ")
    first = "#  Rank  0 Group  0 Pid   1266 on         vm device  0 [0000:00:06] NVIDIA H200\n"
    log = log.replace(first, first + first.replace("Rank  0", "Rank  1").replace("        vm", "       vm2"))
    log = log.replace("NET/IB : No device found.", "NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:192.0.2.2<0>")
    log = log.replace("Using network Socket", "Using network IB")
    last = next(ln for ln in log.splitlines() if ln.split()[:1] == ["268435456"])
    cols = last.split()
    cols[7] = busbw  # size count type redop root time algbw busbw ...
    return log.replace(last, "  ".join(cols))


def test_a_two_node_run_in_the_current_format_is_judged_as_before(tmp_path):
    (tmp_path / "nccl-allreduce-rdma.log").write_text(two_nodes(text(ONE_GPU)))
    r = parse_nccl(two_nodes(text(ONE_GPU)), "x.log")
    assert (r.transport, r.size_bytes, r.busbw_gbs) == ("rdma", 2 ** 28, 11.0)
    assert (r.span.nodes, r.span.ranks, r.span.one_node) == (2, 2, False)
    done = run_cli(str(tmp_path), "--nics-per-node", "1", "--link-gbps", "100")
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(ln for ln in done.stdout.splitlines() if "nccl-allreduce-rdma.log" in ln)
    assert "11.00 GB/s" in row and "88.0 %" in row and row.rstrip().endswith("PASS")
    (tmp_path / "nccl-allreduce-rdma.log").write_text(two_nodes(text(ONE_GPU), busbw="9.00"))
    below = run_cli(str(tmp_path), "--nics-per-node", "1", "--link-gbps", "100")
    assert below.returncode == 1 and "72.0 %" in below.stdout


def per_iteration(log: str) -> str:
    """The log with nccl-tests' per-iteration columns (util.cu, writeResultHeader: four after each #wrong)."""
    out = []
    for line in log.splitlines():
        cols = line.split()
        if cols[:2] == ["#", "size"]:
            line = "# " + " ".join(cols[1:10] + ["i_min", "i_max", "i_p99", "i_cv%"] + cols[10:14]
                                   + ["i_min", "i_max", "i_p99", "i_cv%"])
        elif cols and cols[0].isdigit() and len(cols) == 13:
            line = " ".join(cols[:9] + ["1.00"] * 4 + cols[9:] + ["1.00"] * 4)
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("variant, edit", [
    ("cputime and timestamps (-C, -T)", lambda log: log.replace("   time ", "cputime ").replace(
        "       0\n", "       0  2026-11-27 19:59:00\n")),
    ("per-iteration columns", per_iteration),
])
def test_nccl_tests_columns_are_found_by_their_names(variant, edit):
    log = edit(two_nodes(text(ONE_GPU), busbw="11.00"))
    assert log != two_nodes(text(ONE_GPU), busbw="11.00"), variant
    r = parse_nccl(log, "x.log")
    assert (r.size_bytes, r.busbw_gbs) == (2 ** 28, 11.0), variant


def test_a_header_without_two_busbw_columns_is_a_clear_error():
    log = text(ONE_GPU).replace("busbw  #wrong     time", "bw  #wrong     time")
    with pytest.raises(LogError, match="without its out-of-place and in-place busbw columns"):
        parse_nccl(log, "x.log")


def test_a_horovod_run_on_one_node_is_invalid_and_leaves_the_speed_up_out(tmp_path):
    logs = copy_logs(tmp_path)
    one = logs / "horovod-resnet50-tcp.log"
    # DERIVED from the DeepOps TCP log: one DGX node's 8 GPUs, as NCCL and Horovod print it
    log = text(one).replace("nranks 16", "nranks 8").replace("16 GPU(s)", "8 GPU(s)")
    init = next(ln for ln in log.splitlines() if "Init COMPLETE" in ln)
    span = init.split(" NCCL INFO ")[0] + " NCCL INFO comm 0x7f19e400 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0"
    one.write_text(log.replace(init, span + "\n" + init))
    done = run_cli(str(logs), "--nics-per-node", "2")
    assert done.returncode == 2, done.stdout + done.stderr
    row = next(ln for ln in done.stdout.splitlines() if "horovod-resnet50-tcp.log" in ln)
    assert row.rstrip().endswith("INVALID")
    assert "invalid: horovod-resnet50-tcp.log: a run on one node" in done.stderr and "NCCL: nranks 8" not in done.stderr
    assert "RDMA over TCP speed-up, Horovod img/s" not in done.stdout
    assert "RDMA over TCP speed-up, NCCL busbw" in done.stdout


def test_nothing_judged_is_an_invalid_run(tmp_path):
    empty = run_cli(str(tmp_path))
    assert empty.returncode == 2 and "nothing to judge" in empty.stderr
    # a TCP baseline and a throughput have no threshold: alone they pass nothing
    logs = copy_logs(tmp_path, "nccl-allreduce-tcp.log", "horovod-resnet50-tcp.log")
    done = run_cli(str(logs), "--nics-per-node", "2")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "nothing judged" in done.stderr and "PASS" not in done.stdout


def test_real_logs_are_what_the_manifest_says():
    with open(LOGS / "MANIFEST.tsv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    listed = {r["file"]: r for r in rows}
    assert len(listed) == len(rows), "a log is listed twice"
    assert sorted(str(p.relative_to(LOGS)) for p in REAL.iterdir()) == sorted(listed)
    for name, row in listed.items():
        assert hashlib.sha256((LOGS / name).read_bytes()).hexdigest() == row["sha256"], name
        assert all(row[c] for c in ("repository", "commit", "version", "command", "run", "date", "licence")), row
