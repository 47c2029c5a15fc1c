"""The hosts' half: nmlx5 module options for ESXi and the bare-metal script, run against fake tools."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from components.config import load_lab
from components.roce.host import mlnx_qos_pfc_list, nmlx5_module_options, render_baremetal_script, roce_tos
from components.switch.render import render_files


@pytest.mark.parametrize("priority, trust, lossless, options", [
    (3, "dscp", True, "pfctx=0x08 pfcrx=0x08 trust_state=2"),
    (0, "pcp", True, "pfctx=0x01 pfcrx=0x01 trust_state=1"),
    (7, "dscp", True, "pfctx=0x80 pfcrx=0x80 trust_state=2"),
    (3, "dscp", False, "pfctx=0x00 pfcrx=0x00 trust_state=2"),
])
def test_nmlx5_module_options(priority, trust, lossless, options):
    assert nmlx5_module_options(priority, trust, lossless=lossless) == options


@pytest.mark.parametrize("priority, trust", [(8, "dscp"), (-1, "dscp"), (3, "both")])
def test_nmlx5_module_options_refuse_what_the_driver_cannot_take(priority, trust):
    with pytest.raises(ValueError):
        nmlx5_module_options(priority, trust)


def test_mlnx_qos_pfc_list_and_roce_tos():
    assert mlnx_qos_pfc_list(3) == "0,0,0,1,0,0,0,0"
    assert mlnx_qos_pfc_list(5, lossless=False) == "0,0,0,0,0,0,0,0"
    assert roce_tos(3) == 106  # DSCP 26 with ECT(0): the value NVIDIA's RoCE guides use
    assert roce_tos(4) >> 2 >> 3 == 4  # the default DSCP -> priority map is dscp >> 3


@pytest.fixture
def fake_node(tmp_path) -> dict:
    """Fake mlnx_qos, ip and cma_roce_tos that log their arguments, and a sysfs copy with two ports."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    for tool in ("mlnx_qos", "ip", "cma_roce_tos"):
        script = bin_dir / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{log}"\n')
        script.chmod(0o755)
    for ifc, dev in (("enp5s0", "mlx5_0"), ("enp132s0", "mlx5_1")):
        (tmp_path / "sys" / "class" / "net" / ifc / "device" / "infiniband" / dev).mkdir(parents=True)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", SYSFS=str(tmp_path / "sys"))
    return {"env": env, "log": log, "dir": tmp_path}


def run_script(fake_node, script: str, *args: str) -> subprocess.CompletedProcess:
    path = fake_node["dir"] / "hosts-baremetal.sh"
    path.write_text(script)
    return subprocess.run(["sh", str(path), *args], env=fake_node["env"], capture_output=True, text=True)


def calls(fake_node) -> list[str]:
    log: Path = fake_node["log"]
    return log.read_text().splitlines() if log.exists() else []


def test_baremetal_script_sets_each_rail_interface(fake_node, lab_sections):
    lab_sections["switches"].append({
        "name": "sw02", "os": "cumulus", "managementAddress": "172.16.31.3",
        "ports": {"rails": [{"subnet": "10.10.11.0/24", "ports": ["swp1"], "hostInterface": "enp5s0"},
                            {"subnet": "10.10.12.0/24", "ports": ["swp2"], "hostInterface": "enp132s0"}]},
    })
    lab = load_lab(lab_sections)
    script = render_files(list(lab.plan.switches))["switch/hosts-baremetal.sh"]
    done = run_script(fake_node, script)
    assert done.returncode == 0, done.stderr
    assert calls(fake_node) == [
        "mlnx_qos -i enp5s0 --pfc 0,0,0,1,0,0,0,0 --trust dscp",
        "ip link set dev enp5s0 mtu 9000",
        "cma_roce_tos -d mlx5_0 -t 106",
        "mlnx_qos -i enp132s0 --pfc 0,0,0,1,0,0,0,0 --trust dscp",
        "ip link set dev enp132s0 mtu 9000",
        "cma_roce_tos -d mlx5_1 -t 106",
    ]


def test_baremetal_script_takes_interfaces_as_arguments(fake_node):
    script = render_baremetal_script(4, "pcp", 9100, lossless=False, interfaces=["enp5s0"], switches=["sw"])
    done = run_script(fake_node, script, "enp132s0")
    assert done.returncode == 0, done.stderr
    assert calls(fake_node) == [
        "mlnx_qos -i enp132s0 --pfc 0,0,0,0,0,0,0,0 --trust pcp",
        "ip link set dev enp132s0 mtu 9100",
        f"cma_roce_tos -d mlx5_1 -t {roce_tos(4)}",
    ]


def test_baremetal_script_without_interfaces_asks_for_them(fake_node):
    script = render_baremetal_script(3, "dscp", 9000, lossless=True, interfaces=[], switches=["sw"])
    done = run_script(fake_node, script)
    assert done.returncode == 2 and "name the RoCE interfaces" in done.stderr
    assert calls(fake_node) == []


def test_baremetal_script_stops_when_a_tool_fails(fake_node):
    (fake_node["dir"] / "bin" / "mlnx_qos").write_text("#!/bin/sh\nexit 3\n")
    script = render_baremetal_script(3, "dscp", 9000, lossless=True, interfaces=["enp5s0"], switches=["sw"])
    done = run_script(fake_node, script)
    assert done.returncode == 3
    assert calls(fake_node) == []
