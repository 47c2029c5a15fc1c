"""`make bench` (tools/bench/program.py): each size is measured in its own process, so no run waits on
another's Stack."""

import pytest

from tools import mockrun
from tools.bench import floor, program


def test_sizes_are_independent_of_order_and_each_runs_in_a_fresh_process(tmp_path, monkeypatch):
    # Each child process records the same resource count whatever ran before it; a Stack reused
    # across sizes would make the second size wait on the first one's Outputs and, with one
    # process, every result would carry the same pid.
    forward = program.run_bench([4, 8], repeat=1, directory=tmp_path)
    backward = program.run_bench([8, 4], repeat=1, directory=tmp_path)
    counts = {}
    for result in forward + backward:
        counts.setdefault((result["kind"], result["workers"]), set()).add(result["resources"])
    assert all(len(c) == 1 for c in counts.values()), counts
    assert counts[("program", 4)] == counts[("floor", 4)]  # the floor registers the same resources
    assert counts[("program", 8)] != counts[("program", 4)]
    pids = [r["pid"] for r in forward + backward]
    assert len(set(pids)) == len(pids)


def test_a_measurement_refuses_a_process_that_already_ran_a_stack(monkeypatch):
    monkeypatch.setattr(mockrun, "runs_in_this_process", 1)
    with pytest.raises(SystemExit, match="fresh process"):
        program.measure_one("program", 4, None)


def test_two_runs_in_one_process_get_separate_root_stacks():
    # set_mocks keeps an existing root Stack; mockrun must start each run with a new one.
    first = mockrun.run_program(program.scaled_lab(4), stack="first")
    root_after_first = mockrun.get_root_resource()
    second = mockrun.run_program(program.scaled_lab(4), stack="second")
    assert mockrun.get_root_resource() is not root_after_first
    assert len(first.resources) == len(second.resources)
    assert all(r.urn.startswith("urn:pulumi:second::") for r in second.resources)


def test_floor_manifest_matches_the_program(tmp_path):
    manifest = program.record_manifest(4, tmp_path)
    import pickle

    data = pickle.loads(manifest.read_bytes())
    registered = mockrun.run_program(program.scaled_lab(4), stack="bench4")
    # the same resources; the order of registrations may differ between processes
    assert sorted((r["type"], r["name"], r["parent"]) for r in data["resources"]) == sorted(
        (r.type, r.name, r.parent_urn) for r in registered.resources)
    assert data["applies"] > len(data["resources"])  # the program's applies are counted
    assert floor.MANIFEST_VERSION == data["version"]


def test_registration_gc_settings_are_restored_after_a_run():
    import gc

    before = (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count())
    mockrun.run_program(program.scaled_lab(4), stack="gc")
    assert (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()) == before


def test_bench_reports_each_size_as_it_goes_and_keeps_no_manifest(tmp_path, capsys):
    # A time limit smaller than the first size's run: the first size is measured and printed with
    # its dependency counts, the next one is named as not measured, and no floor manifest stays.
    assert program.main(["--sizes", "4,8", "--repeat", "1", "--time-limit", "0.001", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[-3:] == ["edges/res", "state", "URNs/res"]
    assert lines[2].split()[0] == "4" and lines[2].endswith("an estimate after two sizes]")
    assert lines[3].startswith("not measured: 8 workers (")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]
    import json

    (row,) = json.loads((tmp_path / "results.json").read_text())["rows"]
    assert row["program"]["edges"] > row["program"]["resources"] > 0
    assert row["program"]["stateUrns"] >= row["program"]["edges"]


def test_bench_estimates_a_size_from_the_two_largest_measured():
    assert program.estimate_seconds(512, {4: 10.0}) is None
    assert program.estimate_seconds(512, {4: 10.0, 64: 40.0}) == pytest.approx(40.0 + 0.5 * 448)
    assert program.estimate_seconds(8, {4: 10.0, 64: 40.0}) == 40.0  # never below what is measured


def test_bench_refuses_bad_sizes(capsys):
    assert program.main(["--sizes", "4,lots"]) == 2
    assert "--sizes: '4,lots' is not a comma-separated list" in capsys.readouterr().err
