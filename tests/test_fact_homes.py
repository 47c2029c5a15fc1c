"""Each fact has one home: a value the program, the tools and the policy pack share is written once
and read from there, so two copies cannot drift apart. Each test fails on a second copy."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import builders

from components.config import gpu_lab_sections, load_lab

ROOT = Path(__file__).resolve().parents[1]


def _sources(*parts: str) -> dict[str, str]:
    """Relative path -> text of every .py file under `parts` (a file or a folder)."""
    found: dict[str, str] = {}
    for part in parts:
        path = ROOT / part
        for p in sorted([path] if path.is_file() else path.rglob("*.py")):
            if "__pycache__" not in p.parts:
                found[str(p.relative_to(ROOT))] = p.read_text()
    return found


# ---------------------------------------------------------------- the node drain timeout


def _assigned_names(source: str, pattern: str) -> list[str]:
    """Module-level and class-level names assigned in `source` that match `pattern`."""
    return [t.id for node in ast.walk(ast.parse(source)) if isinstance(node, (ast.Assign, ast.AnnAssign))
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(t, ast.Name) and re.search(pattern, t.id)]


def test_the_drain_timeout_is_defined_in_labrules_only():
    from components.openshift.files import cluster_nodes
    from components.openshift.model import OpenShiftConfig
    from labrules.openshift import NODE_DRAIN_TIMEOUT_S

    defined = {path: names for path, text in _sources("components", "tools", "__main__.py").items()
               if (names := _assigned_names(text, "DRAIN_TIMEOUT"))}
    assert defined == {}
    assert OpenShiftConfig.model_fields["drain_timeout_s"].default == NODE_DRAIN_TIMEOUT_S
    import inspect
    default = inspect.signature(cluster_nodes.render_remove_node_script).parameters["drain_timeout_s"].default
    assert default == NODE_DRAIN_TIMEOUT_S
    # the check finds the definitions it replaced
    assert _assigned_names("DEFAULT_DRAIN_TIMEOUT_S = 900\nDRAIN_TIMEOUT_S: int = 900\n", "DRAIN_TIMEOUT") == [
        "DEFAULT_DRAIN_TIMEOUT_S", "DRAIN_TIMEOUT_S"]


# ---------------------------------------------------------------- oc and the drain timeout: the lab plan


def test_the_lab_plan_decides_how_the_rolls_drain_a_node():
    from components.openshift.model import DEFAULT_OC
    from labrules.openshift import NODE_DRAIN_TIMEOUT_S

    config = builders.with_value(builders.lab_stack(), "gpu-lab:openshift.oc", "/opt/bin/oc")
    config = builders.with_value(config, "gpu-lab:openshift.drainTimeoutS", 60)
    plan = load_lab(gpu_lab_sections(config)).plan
    assert (plan.oc, plan.drain_timeout_s) == ("/opt/bin/oc", 60)
    without = builders.lab_stack()
    del without["gpu-lab:openshift"]
    plan = load_lab(gpu_lab_sections(without)).plan
    assert (plan.oc, plan.drain_timeout_s) == (DEFAULT_OC, NODE_DRAIN_TIMEOUT_S)


def _raw_section_reads(source: str) -> list[int]:
    """Lines of `source` that read a value of a raw section of the loaded lab (`lab.openshift.oc`,
    `lab.vsphere.<key>`) where the lab plan has the fact; whether a section is there is no such value."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
            and node.value.attr in ("openshift", "vsphere")
            and isinstance(node.value.value, ast.Name) and node.value.value.id == "lab"]


def test_the_program_reads_the_lab_plan_not_the_raw_sections():
    assert _raw_section_reads((ROOT / "__main__.py").read_text()) == []
    # the check finds the reads it replaced
    assert _raw_section_reads('oc = lab.openshift.oc if lab.openshift else "oc"\n') == [1]


# ---------------------------------------------------------------- a vGPU VM's memory reservation


def _vgpu_conditionals(source: str) -> list[int]:
    """Lines of `source` with a conditional expression on a VM's vGPU profile (`... if vm.vgpu_profile else ...`)."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.IfExp) and isinstance(node.test, ast.Attribute)
            and node.test.attr == "vgpu_profile"]


def test_the_memory_reservation_is_decided_once():
    from components.facts import PlannedVm
    from components.vsphere import vms

    assert len(_vgpu_conditionals((ROOT / "components" / "vsphere" / "vms.py").read_text())) == 1
    worker = PlannedVm("w01", "worker", "esx1", 8, 64, 100, None, None, None, "grid_v100-16c")
    control = PlannedVm("cp01", "control-plane", "mgmt", 4, 16, 100, None, None, None, None)
    assert vms.memory_reservation_mb(worker) == vms.memory_mb(worker) == 64 * 1024
    assert vms.memory_reservation_mb(control) is None
    # the check finds the copies it replaced
    assert _vgpu_conditionals("a = m if vm.vgpu_profile else None\nb = True if vm.vgpu_profile else None\n") == [
        1, 2]


# ---------------------------------------------------------------- the components' type tokens

TYPE_TOKEN = re.compile(r"^gpu-lab:[a-z]+:[A-Za-z]+$")


def _type_tokens(source: str) -> set[str]:
    return {node.value for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and TYPE_TOKEN.match(node.value)}


def test_each_component_type_token_is_spelled_once():
    # The program and its tools (the policy pack never imports the program: it has its own names).
    spelled: dict[str, list[str]] = {}
    for path, text in _sources("components", "tools", "__main__.py").items():
        for token in _type_tokens(text):
            spelled.setdefault(token, []).append(path)
    assert {token: paths for token, paths in spelled.items() if len(paths) > 1} == {}
    from components.vsphere.vms import TYPE
    from tools.diff.rules import LAB_VMS

    assert LAB_VMS is TYPE and spelled[TYPE] == ["components/vsphere/vms.py"]


# ---------------------------------------------------------------- the RDMA network's MTU


def _spelled(source: str, value: int) -> list[int]:
    """Lines of `source` that spell `value` (as a number, or in a string or docstring)."""
    return [i for i, line in enumerate(source.splitlines(), 1) if re.search(rf"(?<![\d.]){value}(?![\d.])", line)]


def test_the_rdma_mtu_is_spelled_in_labrules_only():
    from components.switch.plan import host_side
    from components.vsphere.model import DistributedSwitch, RdmaNetwork
    from labrules.vsphere import RDMA_MIN_MTU, RDMA_MTU
    from rules.network import MTU_SCHEMA, check_rdma_mtu

    spelled = {path: lines for path, text in _sources("components", "policies", "tools", "__main__.py").items()
               if (lines := _spelled(text, RDMA_MTU))}
    assert spelled == {}
    named = [line for text in _sources("labrules").values() for line in text.splitlines()
             if _spelled(line, RDMA_MTU) and not line.startswith("#")]
    assert named == [f"RDMA_MTU = {RDMA_MTU}"]
    # the default the lab configures, on every hop that has one
    assert RdmaNetwork().mtu == DistributedSwitch().mtu == host_side(None, 3, "dscp").mtu == RDMA_MTU
    # the least the rule allows: the program's check and the pack's minMtu default, named in its description
    assert MTU_SCHEMA.properties["minMtu"]["default"] == RDMA_MIN_MTU
    assert f"jumbo frames, {RDMA_MIN_MTU} by default" in " ".join((check_rdma_mtu.__doc__ or "").split())
    # the check finds the copies it replaced, and not a larger number holding the digits
    assert _spelled("BAREMETAL_MTU = 9000\nmtu = 19000\nx = 9000.5\n", 9000) == [1]


# ---------------------------------------------------------------- the OpenShift load balancer's ports


def test_the_pack_names_the_load_balancer_ports_from_labrules():
    from labrules.openshift import API_PORT, HTTP_PORT, HTTPS_PORT, LOAD_BALANCER_PORTS, MACHINE_CONFIG_PORT
    from rules.openshift import LB_SCHEMA, check_lb_ports

    spelled = {path: lines for path, text in _sources("policies").items()
               if (lines := [n for port in (API_PORT, MACHINE_CONFIG_PORT) for n in _spelled(text, port)])}
    assert spelled == {}
    assert LB_SCHEMA.properties["requiredPorts"]["default"] == list(LOAD_BALANCER_PORTS)
    assert (f"serves {API_PORT} (API), {MACHINE_CONFIG_PORT} (machine config), {HTTP_PORT} and {HTTPS_PORT} "
            "(ingress)") in " ".join((check_lb_ports.__doc__ or "").split())
