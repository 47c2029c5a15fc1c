"""Fabric acceptance report: read the jobs' logs, judge them against line rate, print a table.

    python -m tools.report LOGS_DIR [--stack lab] [--link-gbps G] [--nics-per-node N]
                                    [--ib-threshold 90] [--nccl-threshold 85] [--min-speedup X]
    make report LOGS=dir [STACK=lab]

Each node's RDMA NICs come from the stack: one PVRDMA NIC per worker VM on vSphere, one per
SR-IOV rail (`addons.network.sriov.rails`) on bare metal, each at its link rate
(`vsphere.networks.rdma.linkGbps`, `addons.network.sriov.rails[].linkGbps`; default 100, the
guides' ConnectX ports). --link-gbps and --nics-per-node override the stack.

LOGS_DIR holds the logs as the tools print them (`kubectl logs` of the ib_write_bw client, of
the NCCL and Horovod MPIJob launchers). Each file is recognised by its content:

- ib_write_bw (perftest): the result row's average bandwidth against the link rate;
- nccl-tests all_reduce_perf: the bus bandwidth at the largest message size against the
  combined rate of one node's NICs (bus bandwidth is normalised per rank, and a node's NICs
  are what its ranks share to leave the node);
- Horovod / tf_cnn_benchmarks: total images per second.

RDMA and TCP runs are told apart by NCCL's own log lines (`Using network IB|Socket`, with
NCCL_DEBUG=INFO as the jobs set it), else by `rdma`/`tcp` in the file name; with both present
the report gives the RDMA-over-TCP speed-up.

A share above 100 % of line rate is not a pass but an invalid measurement: the line rate is
wrong, or NCCL ran its tree algorithm, whose bus bandwidth on two nodes can exceed the link
(the acceptance jobs set NCCL_ALGO=Ring).

A run on one node is no measurement of the fabric either: its ranks never leave the node. The
span comes from the log: NCCL's `nRanks N nNodes M` and `nranks N` lines (NCCL_DEBUG=INFO), else
the hosts of nccl-tests' `#  Rank ... on <host>` lines. An NCCL or Horovod run whose log says one
node or one rank is invalid; a valid run needs ranks on at least two nodes.

nccl-tests' table is read by its header's column names (`busbw`, out-of-place then in-place), so
the layouts of 2.x (with or without `root`, `error` or `#wrong`, `time` or `cputime`, per-iteration
columns, a trailing timestamp) all parse.

Exit status: 0 all thresholds met; 1 a measurement below its threshold; 2 an invalid run: a
log that cannot be read (truncated, malformed, empty, or holding no result at all, such as a
kubectl error saved as a log), a share above 100 %, a run on one node, nothing to judge (no log, or
only figures no threshold applies to: TCP baselines, throughput), or a bad stack.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

EXIT_OK, EXIT_BELOW, EXIT_BAD_INPUT = 0, 1, 2
MEBIBYTE = 2 ** 20


class LogError(Exception):
    """A log the report cannot use; the message says which file and why."""


@dataclass(frozen=True)
class IbWriteBw:
    file: str
    size_bytes: int
    peak_gbps: float
    average_gbps: float


@dataclass(frozen=True)
class Span:
    """How many nodes and ranks a run's log says it had (None: the log does not say)."""

    nodes: int | None = None
    ranks: int | None = None
    says: str = "nothing about its nodes"

    @property
    def one_node(self) -> bool:
        return self.nodes == 1 or self.ranks == 1


@dataclass(frozen=True)
class NcclAllReduce:
    file: str
    transport: str
    size_bytes: int
    busbw_gbs: float
    wrong: int
    span: Span = Span()


@dataclass(frozen=True)
class Throughput:
    file: str
    transport: str
    images_per_sec: float
    gpus: int | None
    span: Span = Span()


# ---------------------------------------------------------------- recognising a log

_IB_MARK = re.compile(r"RDMA_Write BW Test|#bytes\s+#iterations\s+BW peak")
_NCCL_MARK = re.compile(r"^#\s*nThread\b|^#\s+size\s+count\s+type|Avg bus bandwidth", re.M)
_IMAGES_MARK = re.compile(r"img/sec|images/sec|Running (benchmark|warm)|tf_cnn_benchmarks|Number of GPUs:", re.I)
_MPI_MARK = re.compile(r"NCCL INFO|mpirun|ORTE|PRTE")


def kind_of(text: str) -> str | None:
    if _IB_MARK.search(text):
        return "ib_write_bw"
    if _NCCL_MARK.search(text):
        return "nccl"
    if _IMAGES_MARK.search(text):
        return "images"
    if _MPI_MARK.search(text):
        return "mpi"  # an MPI job's log that never got to print a benchmark line
    return None


def transport_of(text: str, name: str) -> str:
    """rdma or tcp, from NCCL's log lines or else the file name."""
    used = re.findall(r"NCCL INFO Using network (\w+)", text)
    if used:
        return "rdma" if used[-1] == "IB" else "tcp"
    if re.search(r"NCCL INFO NET/IB : Using", text):
        return "rdma"
    if re.search(r"NCCL INFO NET/Socket : Using", text):
        return "tcp"
    lowered = name.lower()
    if "rdma" in lowered or "roce" in lowered:
        return "rdma"
    if "tcp" in lowered or "socket" in lowered:
        return "tcp"
    raise LogError(f"{name}: cannot tell an RDMA run from a TCP run; run with NCCL_DEBUG=INFO "
                   "or name the file *-rdma.log / *-tcp.log")


_NCCL_SPAN = re.compile(r"NCCL INFO comm \S+ rank \d+ nRanks (\d+) nNodes (\d+)")
_NCCL_NRANKS = re.compile(r"NCCL INFO .*\bnranks (\d+)\b")
# nccl-tests' device lines: `#  Rank  0 Group  0 Pid 1266 on vm device 0 ...` (older: no Group).
_TESTS_RANK = re.compile(r"^#\s+Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\b", re.M)


def span_of(text: str) -> Span:
    """The nodes and ranks the log says the run had: NCCL's own count first, else nccl-tests' hosts."""
    said = []
    nodes = ranks = None
    counted = [(int(r), int(n)) for r, n in _NCCL_SPAN.findall(text)]
    if counted:
        ranks, nodes = max(r for r, _ in counted), max(n for _, n in counted)
        said.append(f"NCCL: nRanks {ranks} nNodes {nodes}")
    else:
        nranks = [int(n) for n in _NCCL_NRANKS.findall(text)]
        if nranks:
            ranks = max(nranks)
            said.append(f"NCCL: nranks {ranks}")
    devices = _TESTS_RANK.findall(text)
    if devices:
        hosts = sorted({host for _, host in devices})
        if nodes is None:
            nodes = len(hosts)
        if ranks is None:
            ranks = len(devices)
        said.append(f"nccl-tests: {len(devices)} rank(s) on {len(hosts)} host(s) ({', '.join(hosts[:4])}"
                    f"{', ...' if len(hosts) > 4 else ''})")
    return Span(nodes, ranks, "; ".join(said) or Span.says)


# ---------------------------------------------------------------- parsers

_IB_HEADER = re.compile(r"#bytes\s+#iterations\s+BW peak\[(Gb|MB)/sec\]\s+BW average\[(Gb|MB)/sec\]")
_IB_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+(?:\.\d+)?)\s+(\d+(?:\.\d+)?)\s+(\d+(?:\.\d+)?)\s*$")


def parse_ib_write_bw(text: str, name: str) -> IbWriteBw:
    header = _IB_HEADER.search(text)
    if not header:
        raise LogError(f"{name}: ib_write_bw log without its results header (#bytes #iterations BW peak ...); "
                       "truncated before the test ran?")
    rows = [_IB_ROW.match(line) for line in text[header.end():].splitlines()]
    matched = [m for m in rows if m]
    if not matched:
        raise LogError(f"{name}: ib_write_bw log ends before its result row (truncated, or the peer never connected)")
    last = matched[-1]  # with -a, the largest message size comes last
    scale = 1.0 if header.group(2) == "Gb" else MEBIBYTE * 8 / 1e9
    return IbWriteBw(name, int(last.group(1)), float(last.group(3)) * scale, float(last.group(4)) * scale)


_NCCL_HEADER = re.compile(r"^#\s+size\s+count\s+type\s+redop\s.*$", re.M)
# nccl-tests prints a figure too wide for its column in e-notation (util.cu, getFloatStr).
_NUMBER = re.compile(r"^\d+(\.\d+)?(e[+-]?\d+)?$")


def parse_nccl(text: str, name: str) -> NcclAllReduce:
    header = _NCCL_HEADER.search(text)
    if not header:
        raise LogError(f"{name}: nccl-tests log without its table header (# size count type redop ...); "
                       "truncated before the first measurement?")
    # A row has one value per header name (a trailing timestamp adds a token after them all).
    names = header.group(0).lstrip("#").split()
    columns = [i for i, column in enumerate(names) if column == "busbw"]
    if len(columns) != 2:
        raise LogError(f"{name}: nccl-tests table header without its out-of-place and in-place busbw columns: "
                       f"{header.group(0).strip()!r}")
    rows = []
    for line in text[header.end():].splitlines():
        cols = line.split()
        if len(cols) > columns[1] and cols[0].isdigit() and cols[1].isdigit():
            oop, inplace = cols[columns[0]], cols[columns[1]]
            if not (_NUMBER.match(oop) and _NUMBER.match(inplace)):
                raise LogError(f"{name}: malformed nccl-tests row: {line.strip()!r}")
            rows.append((int(cols[0]), max(float(oop), float(inplace))))
    if not rows:
        raise LogError(f"{name}: nccl-tests log has a header but no measurements (truncated?)")
    if "Avg bus bandwidth" not in text:
        raise LogError(f"{name}: nccl-tests log ends before '# Avg bus bandwidth' (truncated at "
                       f"{rows[-1][0]} bytes); rerun or collect the whole launcher log")
    wrong = re.search(r"#\s*Out of bounds values\s*:\s*(\d+)", text)
    size, busbw = max(rows)
    return NcclAllReduce(name, transport_of(text, name), size, busbw, int(wrong.group(1)) if wrong else 0,
                         span_of(text))


_HOROVOD_TOTAL = re.compile(r"Total img/sec on (\d+) GPU\(s\):\s*(\d+(?:\.\d+)?)")
_TF_CNN_TOTAL = re.compile(r"total images/sec:\s*(\d+(?:\.\d+)?)")


def parse_images(text: str, name: str) -> Throughput:
    horovod = _HOROVOD_TOTAL.findall(text)
    if horovod:
        gpus, rate = horovod[-1]
        return Throughput(name, transport_of(text, name), float(rate), int(gpus), span_of(text))
    tf_cnn = _TF_CNN_TOTAL.findall(text)
    if tf_cnn:
        return Throughput(name, transport_of(text, name), float(tf_cnn[-1]), None, span_of(text))
    raise LogError(f"{name}: benchmark log without its throughput summary ('Total img/sec on N GPU(s)' or "
                   "'total images/sec'); truncated or the run failed")


def read_logs(directory: Path) -> tuple[list[object], list[str], list[str]]:
    """(results, errors, skipped files) for every file in the directory."""
    if not directory.is_dir():
        raise LogError(f"{directory}: not a directory of logs")
    results: list[object] = []
    errors: list[str] = []
    skipped: list[str] = []
    for path in sorted(p for p in directory.iterdir() if p.is_file()):
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            errors.append(f"{path.name}: not a text log (undecodable bytes)")
            continue
        if not text.strip():
            errors.append(f"{path.name}: empty log")
            continue
        kind = kind_of(text)
        try:
            if kind == "ib_write_bw":
                results.append(parse_ib_write_bw(text, path.name))
            elif kind == "nccl":
                results.append(parse_nccl(text, path.name))
            elif kind == "images":
                results.append(parse_images(text, path.name))
            elif kind == "mpi":
                raise LogError(f"{path.name}: an MPI job's log without benchmark output; the run failed or the "
                               "log was cut before the first result")
            else:
                raise LogError(f"{path.name}: no ib_write_bw, nccl-tests or Horovod result in it (an error "
                               "message saved as the log?); a log without a result is an invalid run")
        except LogError as err:
            errors.append(str(err))
    return results, errors, skipped


# ---------------------------------------------------------------- judging


@dataclass(frozen=True)
class Row:
    test: str
    transport: str
    result: str
    reference: str = "-"
    share: str = "-"
    threshold: str = "-"
    verdict: str = "info"
    why: str = ""  # an INVALID row's reason, printed under the table


INVALID = "INVALID"
ON_TWO_NODES = "ranks on >= 2 nodes"


def one_node_reason(file: str, span: Span) -> str:
    return (f"{file}: a run on one node is no measurement of the fabric (the log says {span.says}): its ranks "
            "never left the node; a valid run needs ranks on at least two nodes (the MPIJob's workers on two "
            "GPU nodes)")


def _against(value: float, threshold: float | None, unit: str, share: bool = False) -> tuple[str, str]:
    """(threshold text, verdict) of a value judged against an optional minimum."""
    if share and value > 100:
        return "<= 100 %", INVALID
    if threshold is None:
        return "-", "info"
    return f">= {threshold:g}{unit}", "PASS" if value >= threshold else "FAIL"


def judge(results: list[object], link_gbps: float, nics_per_node: int, ib_threshold: float,
          nccl_threshold: float, min_speedup: float | None) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    shares: list[float] = []
    node_rate_gbs = nics_per_node * link_gbps / 8
    for ib in (r for r in results if isinstance(r, IbWriteBw)):
        share = 100 * ib.average_gbps / link_gbps
        shares.append(share)
        rows.append(Row(f"ib_write_bw {_size(ib.size_bytes)} ({ib.file})", "rdma", f"{ib.average_gbps:.2f} Gb/s",
                        f"{link_gbps:g} Gb/s link", f"{share:.1f} %", *_against(share, ib_threshold, " %", True)))
    for nccl in (r for r in results if isinstance(r, NcclAllReduce)):
        test = f"NCCL all_reduce busbw {_size(nccl.size_bytes)} ({nccl.file})"
        reference = f"{node_rate_gbs:g} GB/s ({nics_per_node} x {link_gbps:g} Gb/s)"
        if nccl.span.one_node:
            rows.append(Row(test, nccl.transport, f"{nccl.busbw_gbs:.2f} GB/s", reference, "-", ON_TWO_NODES, INVALID,
                            one_node_reason(nccl.file, nccl.span)))
            continue
        share = 100 * nccl.busbw_gbs / node_rate_gbs
        shares.append(share)
        # Only the RDMA run has to reach line rate; the TCP run is the baseline it is compared to.
        threshold = nccl_threshold if nccl.transport == "rdma" else None
        rows.append(Row(test, nccl.transport, f"{nccl.busbw_gbs:.2f} GB/s", reference,
                        f"{share:.1f} %", *_against(share, threshold, " %", True)))
        if nccl.wrong:
            rows.append(Row(f"NCCL results check ({nccl.file})", nccl.transport, f"{nccl.wrong} out-of-bounds values",
                            threshold="0 wrong", verdict="FAIL"))
    for run in (r for r in results if isinstance(r, Throughput)):
        gpus = f" on {run.gpus} GPUs" if run.gpus else ""
        if run.span.one_node:
            rows.append(Row(f"images/s{gpus} ({run.file})", run.transport, f"{run.images_per_sec:.1f} img/s",
                            threshold=ON_TWO_NODES, verdict=INVALID, why=one_node_reason(run.file, run.span)))
            continue
        rows.append(Row(f"images/s{gpus} ({run.file})", run.transport, f"{run.images_per_sec:.1f} img/s"))
    for label, kind, attr in (("NCCL busbw", NcclAllReduce, "busbw_gbs"),
                              ("Horovod img/s", Throughput, "images_per_sec")):
        # a run on one node compares nothing across the fabric
        best = {t: max((getattr(r, attr) for r in results
                        if isinstance(r, kind) and r.transport == t and not r.span.one_node), default=None)
                for t in ("rdma", "tcp")}
        if best["rdma"] and best["tcp"]:
            speedup = best["rdma"] / best["tcp"]
            speedup_threshold, verdict = _against(speedup, min_speedup, "x")
            rows.append(Row(f"RDMA over TCP speed-up, {label}", "rdma/tcp", f"{speedup:.2f}x",
                            threshold=speedup_threshold, verdict=verdict))
    notes = []
    if any(share > 100 for share in shares):
        notes.append("a share above 100 % of line rate is an invalid measurement: the line rate is wrong (check "
                     "--stack, --link-gbps, --nics-per-node) or NCCL ran its tree algorithm (run with NCCL_ALGO=Ring)")
    return rows, notes


def _size(size: int) -> str:
    for unit, factor in (("GB", 2 ** 30), ("MB", 2 ** 20), ("KB", 2 ** 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} B"


def render_table(rows: list[Row]) -> str:
    header = ("test", "transport", "result", "line rate", "share", "threshold", "verdict")
    cells = [header] + [(r.test, r.transport, r.result, r.reference, r.share, r.threshold, r.verdict) for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def stack_line_rate(stack: str, path: Path | None = None) -> tuple[int, float, str]:
    """(RDMA NICs per GPU node, Gb/s of each, where that comes from) for a stack's planned nodes."""
    from components.config import gpu_lab_sections, load_lab
    from tools.stackfile import load_stack_config

    lab = load_lab(gpu_lab_sections(load_stack_config(stack, path)))
    if lab.plan.addons.network.mode == "sriov":
        rails = lab.addons.network.sriov.rails
        # the slowest rail bounds what an all-reduce over every rail can reach per NIC
        link = min(r.link_gbps for r in rails)
        return len(rails), link, f"bare metal, one NIC per SR-IOV rail: {', '.join(r.pf_name for r in rails)}"
    if lab.vsphere is None:
        raise ValueError(f"stack {stack!r} has neither vSphere workers nor SR-IOV rails to grade against")
    return 1, lab.vsphere.networks.rdma.link_gbps, "vSphere workers, one PVRDMA NIC each"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", type=Path, help="directory with the jobs' logs")
    parser.add_argument("--stack", default="lab",
                        help="read each node's RDMA NICs and link rate from Pulumi.<stack>.yaml "
                             "(default lab; make report: STACK)")
    parser.add_argument("--stack-file", type=Path, help="read this file instead of Pulumi.<stack>.yaml")
    parser.add_argument("--link-gbps", type=float, default=None,
                        help="line rate of one RDMA link, Gb/s (default: from the stack)")
    parser.add_argument("--nics-per-node", type=int, default=None,
                        help="RDMA NICs each node's ranks share (default: from the stack)")
    parser.add_argument("--ib-threshold", type=float, default=90.0, help="ib_write_bw %% of link (default 90)")
    parser.add_argument("--nccl-threshold", type=float, default=85.0,
                        help="NCCL RDMA bus bandwidth %% of the node's combined links (default 85)")
    parser.add_argument("--min-speedup", type=float, default=None,
                        help="fail when RDMA is not at least this many times faster than TCP (default: report only)")
    args = parser.parse_args(argv)
    if (args.link_gbps is not None and args.link_gbps <= 0) or (args.nics_per_node is not None
                                                                and args.nics_per_node < 1):
        parser.error("--link-gbps must be positive and --nics-per-node at least 1")
    try:
        stack_nics, stack_gbps, source = stack_line_rate(args.stack, args.stack_file)
    except ValueError as err:  # the stack's own problems (ConfigError is one), as tools.plan prints them
        print(f"report: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    link_gbps = args.link_gbps or stack_gbps
    nics_per_node = args.nics_per_node or stack_nics
    print(f"line rate: {nics_per_node} x {link_gbps:g} Gb/s per node (stack {args.stack!r}: {source}"
          f"{'; overridden on the command line' if args.link_gbps or args.nics_per_node else ''})")

    try:
        results, errors, skipped = read_logs(args.logs)
    except LogError as err:
        print(f"report: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    rows, notes = judge(results, link_gbps, nics_per_node, args.ib_threshold, args.nccl_threshold,
                        args.min_speedup)
    if rows:
        print(render_table(rows))
    for note in notes:
        print(f"note: {note}")
    for name in skipped:
        print(f"skipped {name}: not an ib_write_bw, nccl-tests or Horovod log")
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    if errors:
        return EXIT_BAD_INPUT
    if not rows:
        print(f"report: no benchmark logs in {args.logs}: nothing to judge", file=sys.stderr)
        return EXIT_BAD_INPUT
    invalid = [r for r in rows if r.verdict == INVALID]
    for row in invalid:
        if row.why:
            print(f"invalid: {row.why}", file=sys.stderr)
    if invalid:
        one_node = sum(1 for r in invalid if r.why)
        above = len(invalid) - one_node
        causes = ([f"{above} measurement(s) above line rate"] if above else []) + (
            [f"{one_node} run(s) on one node"] if one_node else [])
        print(f"{', '.join(causes)}: an invalid run, not a pass", file=sys.stderr)
        return EXIT_BAD_INPUT
    if all(r.verdict == "info" for r in rows):
        print(f"report: nothing judged in {args.logs}: no threshold applies to any of its figures (a TCP baseline "
              "and throughput are information); an acceptance needs an ib_write_bw or NCCL RDMA run",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    failed = [r for r in rows if r.verdict == "FAIL"]
    if failed:
        print(f"{len(failed)} measurement(s) below threshold", file=sys.stderr)
        return EXIT_BELOW
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
