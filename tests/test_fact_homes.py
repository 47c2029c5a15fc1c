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
    from labrules.openshift import DEFAULT_OC, NODE_DRAIN_TIMEOUT_S

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

TYPE_TOKEN = re.compile(r"gpu-lab:[a-z]+:[A-Z][A-Za-z]*")
"""A component's type token, `gpu-lab:<section>:<Name>`, wherever it stands in a line (a constant, part of a
URN or a message, a comment); config keys (`gpu-lab:openshift.oc`, `gpu-lab:kubeconfig`) are not tokens."""


def _type_tokens(source: str) -> list[tuple[int, str]]:
    return [(i, token) for i, line in enumerate(source.splitlines(), 1) for token in TYPE_TOKEN.findall(line)]


def test_each_component_type_token_is_spelled_in_labrules_only():
    import labrules.types
    from components.addons import component as addons
    from components.openshift import component as openshift
    from components.switch import component as switch
    from components.vsphere import fabric, vms
    from rules import commands, mirror, props
    from tools.diff.rules import LAB_VMS

    # The program, its tools and the policy pack read them from labrules.types (the tests keep the literals
    # that pin the wire format of old state).
    spelled = {path: tokens for path, text in _sources("components", "policies", "tools", "__main__.py").items()
               if (tokens := _type_tokens(text))}
    assert spelled == {}
    defined = {name: value for name, value in vars(labrules.types).items()
               if name.isupper() and not name.endswith("_KIND")}  # the kinds: the test below
    assert sorted(token for _, token in _type_tokens((ROOT / "labrules" / "types.py").read_text())) == sorted(
        defined.values())
    # every token the program registers is one of them, and the pack selects by the same objects
    assert (vms.TYPE, switch.TYPE, openshift.TYPE, openshift.NODES_TYPE) == (
        labrules.types.LAB_VMS, labrules.types.SPECTRUM_SWITCH, labrules.types.OPENSHIFT_UPI,
        labrules.types.CLUSTER_NODES)
    assert fabric.ROCE_FABRIC is labrules.types.ROCE_FABRIC and addons.CLUSTER_ADDONS is labrules.types.CLUSTER_ADDONS
    assert (props.ROCE_FABRIC, props.LAB_VMS, props.SPECTRUM, props.OPENSHIFT, mirror.CLUSTER_ADDONS) == (
        labrules.types.ROCE_FABRIC, labrules.types.LAB_VMS, labrules.types.SPECTRUM_SWITCH,
        labrules.types.OPENSHIFT_UPI, labrules.types.CLUSTER_ADDONS)
    assert [component for component, _ in commands.PINNED_BY] == [labrules.types.OPENSHIFT_UPI,
                                                                  labrules.types.SPECTRUM_SWITCH]
    assert LAB_VMS is vms.TYPE
    # the check finds the copies it replaced, and not a config key
    assert _type_tokens('LAB_VMS = "gpu-lab:vsphere:LabVms"\n'
                        'PINNED_BY = (("gpu-lab:openshift:OpenShiftUpi", "openshift.helper.hostKey"),)\n'
                        'urn = f"urn:pulumi:{stack}::gpu-lab::gpu-lab:addons:ClusterAddons::addons"\n'
                        'oc = config.get("gpu-lab:openshift.oc")\n') == [
        (1, "gpu-lab:vsphere:LabVms"), (2, "gpu-lab:openshift:OpenShiftUpi"), (3, "gpu-lab:addons:ClusterAddons")]


# ---------------------------------------------------------------- the default oc binary


def _oc_defaults(source: str) -> list[int]:
    """Lines of `source` that give the oc binary a default of their own: the string "oc" assigned, defaulted
    (`x or "oc"`, a parameter's or a keyword's value); reading the input named "oc" is not one."""
    tree = ast.parse(source)
    values = [node.value for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AnnAssign, ast.keyword))]
    values += [v for node in ast.walk(tree) if isinstance(node, ast.BoolOp) for v in node.values]
    values += [d for node in ast.walk(tree) if isinstance(node, ast.arguments) for d in node.defaults + node.kw_defaults
               if d is not None]
    return sorted({v.lineno for v in values if isinstance(v, ast.Constant) and v.value == "oc"})


ENGINE_SCRIPTS = ("scripts/engine-sim.sh", "scripts/engine-upgrade.sh")


def _engine_program(script: str) -> str:
    """The Python program an engine script writes for its Pulumi project (its `__main__.py` heredoc)."""
    text = (ROOT / script).read_text()
    match = re.search(r"""cat >"\$WORK/proj/__main__\.py" <<'EOF'\n(.*?)\nEOF\n""", text, re.S)
    assert match, script
    return match.group(1)


def test_the_default_oc_is_defined_in_labrules_only():
    from components.openshift.model import DEFAULT_OC as MODEL_OC
    from components.openshift.model import OpenShiftConfig
    from labrules.openshift import DEFAULT_OC

    assert MODEL_OC is DEFAULT_OC and OpenShiftConfig.model_fields["oc"].default == DEFAULT_OC
    sources = {**_sources("components", "tools", "__main__.py"),
               **{script: _engine_program(script) for script in ENGINE_SCRIPTS}}
    assert {path: lines for path, text in sources.items() if (lines := _oc_defaults(text))} == {}
    # the check finds the defaults it replaced, not the input's name
    assert _oc_defaults('DEFAULT_OC = "oc"\n'
                        'oc = shutil.which(str(inputs.get("oc") or "oc"))\n'
                        'NodeRoll("r", conn, oc="oc", drain_timeout_s=900)\n'
                        'def drain(oc: str = "oc"): ...\n'
                        'props = {"oc": oc, "kind": KIND}\n') == [1, 2, 3, 4]


def _literal_keywords(source: str, names: tuple[str, ...]) -> list[tuple[int, str]]:
    """(line, keyword) of each call in `source` that passes one of `names` a literal."""
    return [(node.lineno, kw.arg) for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
            for kw in node.keywords if kw.arg in names and isinstance(kw.value, ast.Constant)]


def test_the_engine_scripts_roll_with_the_labs_defaults():
    for script in ENGINE_SCRIPTS:
        program = _engine_program(script)
        assert _literal_keywords(program, ("oc", "drain_timeout_s")) == [], script
        assert "from labrules.openshift import DEFAULT_OC, NODE_DRAIN_TIMEOUT_S" in program, script
        compile(program, script, "exec")
    # the check finds the literals it replaced
    assert _literal_keywords('NodeRoll("r", conn, oc="oc", drain_timeout_s=900, opts=opts)\n',
                             ("oc", "drain_timeout_s")) == [(1, "oc"), (1, "drain_timeout_s")]


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


def test_the_api_port_is_spelled_in_labrules_only():
    from components.openshift.files.installer import PLACEHOLDER_KUBECONFIG
    from labrules.openshift import API_PORT

    spelled = {path: lines for path, text in _sources("components", "tools", "__main__.py").items()
               if (lines := _spelled(text, API_PORT))}
    assert spelled == {}
    assert f"https://api.placeholder.invalid:{API_PORT}" in PLACEHOLDER_KUBECONFIG


# ---------------------------------------------------------------- Ethernet's MTU, the least an MTU may be


def _int_constants(source: str, value: int) -> list[int]:
    """Lines of `source` that write the number `value` (not in a string: the guide's ECN maximum, 1500 KB, is
    another fact, labrules.roce.DEFAULT_ECN_MAX_KB, named in docstrings)."""
    return sorted(node.lineno for node in ast.walk(ast.parse(source))
                  if isinstance(node, ast.Constant) and type(node.value) is int and node.value == value)


def test_the_ethernet_mtu_is_defined_in_labrules_only():
    from components.switch.model import RoceSettings
    from labrules.roce import ETHERNET_MTU
    from rules.network import MTU_SCHEMA, VSPHERE_DEFAULT_MTU

    spelled = {path: lines for path, text in _sources("components", "policies", "tools", "__main__.py").items()
               if (lines := _int_constants(text, ETHERNET_MTU))}
    assert spelled == {}
    named = [name for text in _sources("labrules").values()
             for name in _assigned_names(text, ".") if re.search(rf"^{name} = {ETHERNET_MTU}$", text, re.M)]
    assert sorted(named) == ["DEFAULT_ECN_MAX_KB", "ETHERNET_MTU"]
    # the switch port's floor, the pack's minMtu floor, and what vSphere leaves an unset MTU at
    assert [getattr(m, "ge", None) for m in RoceSettings.model_fields["mtu"].metadata][0] == ETHERNET_MTU
    assert MTU_SCHEMA.properties["minMtu"]["minimum"] == VSPHERE_DEFAULT_MTU == ETHERNET_MTU
    # the check finds the copies it replaced
    assert _int_constants('VSPHERE_DEFAULT_MTU = 1500\nmtu: int = Field(ge=1500)\nx = {"minimum": 1500}\n'
                          '"""150 KB / 1500 KB"""\n', 1500) == [1, 2, 3]


def _literal_kinds_read(source: str) -> list[int]:
    """Lines where `of_kind(resources, "<a literal>")` picks resources by a kind spelled in place."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "of_kind"
            and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)]


def test_the_kinds_the_pack_reads_are_the_providers_own_from_labrules():
    """The pack finds a node's roll and a host's settings by their `kind` input; a kind spelled in the
    pack could drift from the provider's and the rule would judge nothing."""
    from components.dynamic.host_settings import AdvancedOptionProvider, FirewallRulesetProvider
    from components.dynamic.roll import NodeRollProvider
    from labrules import types

    assert (NodeRollProvider.kind, AdvancedOptionProvider.kind, FirewallRulesetProvider.kind) == (
        types.VM_ROLL_KIND, types.HOST_ADVANCED_OPTION_KIND, types.HOST_FIREWALL_RULESET_KIND)
    found = {path: lines for path, source in _sources("policies").items() if (lines := _literal_kinds_read(source))}
    assert found == {}
    assert _literal_kinds_read('rolls = of_kind(resources, "vsphere-vm-roll")\n') == [1]
