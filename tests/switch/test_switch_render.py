"""Renderers: parse the rendered lines back into settings, and run apply/revert on switch models."""

from __future__ import annotations

import re
import subprocess

import pytest
from required_tools import require_tool
from switch_sim import CumulusSwitch, OnyxSwitch, expand_nvue_interfaces, expand_onyx_ports, nvue_args

from components.config import load_lab
from components.switch.config import SwitchConfig
from components.switch.files import config_digest, nvue_port_list, onyx_port_ranges, render_apply, render_revert
from components.switch.render import render_files


def switch(**over) -> SwitchConfig:
    raw = {"name": "sw", "os": "onyx", "managementAddress": "10.0.0.2", "ports": {"hosts": ["1/1", "1/2", "1/3"]}}
    raw.update(over)
    return SwitchConfig.model_validate(raw)


LAB_LIKE = switch(name="sw01", ports={"hosts": ["1/1", "1/2", "1/3", "1/4"]})
ONYX_RAILS = switch(name="onyx-rails", ports={
    "hosts": ["1/1", "1/2"],
    "rails": [{"subnet": "10.10.11.0/24", "ports": ["1/5", "1/6"]},
              {"vlan": 212, "subnet": "10.10.12.0/24", "ports": ["1/9", "1/7", "1/8/2"]}],
})
ONYX_LOSSY_PCP = switch(name="onyx-lossy", roce={
    "pfcMode": "lossy", "trust": "pcp", "pfcPriority": 4, "trafficClass": 4, "mtu": 9000,
    "ecnMinKb": 200, "ecnMaxKb": 2000,
})
CUMULUS_RAILS = switch(name="cl-rails", os="cumulus", user="cumulus", ports={
    "hosts": ["swp10"],
    "rails": [{"subnet": "10.10.11.0/24", "ports": ["swp1", "swp2"], "hostInterface": "enp5s0"},
              {"subnet": "10.10.12.0/24", "ports": ["swp3", "swp4", "swp6s1"], "hostInterface": "enp132s0"}],
})
CUMULUS_LOSSY_PCP = switch(name="cl-lossy", os="cumulus", ports={"hosts": ["swp1", "swp2", "swp3"]},
                           roce={"pfcMode": "lossy", "trust": "pcp", "pfcPriority": 5, "trafficClass": 5,
                                 "ecnMinKb": 100, "ecnMaxKb": 1000})
ONYX = [LAB_LIKE, ONYX_RAILS, ONYX_LOSSY_PCP]
CUMULUS = [CUMULUS_RAILS, CUMULUS_LOSSY_PCP]
ALL = ONYX + CUMULUS


def expected_vlans(sw: SwitchConfig) -> dict[str, int]:
    return {port: vlan for rail, vlan in zip(sw.ports.rails, sw.rail_vlans(), strict=True) for port in rail.ports}


# ---------------------------------------------------------------- Onyx: parse every line


_ONYX_LINE = [
    ("pfc-global", re.compile(r"^dcb priority-flow-control enable force$")),
    ("pfc-priority", re.compile(r"^dcb priority-flow-control priority (?P<prio>[0-7]) enable$")),
    ("vlan", re.compile(r"^vlan (?P<vlan>\d+)$")),
    ("exit", re.compile(r"^exit$")),
    ("mtu", re.compile(r"^interface ethernet (?P<ports>\S+) mtu (?P<mtu>\d+) force$")),
    ("trust", re.compile(r"^interface ethernet (?P<ports>\S+) qos trust (?P<trust>L2|L3)$")),
    ("ecn", re.compile(r"^interface ethernet (?P<ports>\S+) traffic-class (?P<tc>[0-7]) congestion-control ecn "
                       r"minimum-absolute (?P<min>\d+) maximum-absolute (?P<max>\d+)$")),
    ("pfc-port", re.compile(r"^interface ethernet (?P<ports>\S+) dcb priority-flow-control mode on force$")),
    ("mode", re.compile(r"^interface ethernet (?P<ports>\S+) switchport mode access$")),
    ("access", re.compile(r"^interface ethernet (?P<ports>\S+) switchport access vlan (?P<vlan>\d+)$")),
]


def parse_onyx(script: str) -> tuple[dict, dict[str, dict]]:
    """(global settings, per-port settings) of an Onyx apply script; fails on any unknown line."""
    lines = script.splitlines()
    assert lines[:2] == ["enable", "configure terminal"] and lines[-1] == "configuration write"
    glob: dict = {"pfc": False, "pfc_priorities": set(), "vlans": []}
    ports: dict[str, dict] = {}
    for line in lines[2:-1]:
        kind, m = next(((k, p.match(line)) for k, p in _ONYX_LINE if p.match(line)), (None, None))
        assert kind, f"unknown Onyx line: {line!r}"
        if kind == "pfc-global":
            glob["pfc"] = True
        elif kind == "pfc-priority":
            glob["pfc_priorities"].add(int(m["prio"]))
        elif kind == "vlan":
            glob["vlans"].append(int(m["vlan"]))
        elif kind != "exit":
            for port in expand_onyx_ports(m["ports"]):
                setting = ports.setdefault(port, {})
                assert kind not in setting, f"{kind} set twice on {port}"
                setting[kind] = {k: v for k, v in m.groupdict().items() if k != "ports"} or True
    return glob, ports


@pytest.mark.parametrize("sw", ONYX, ids=lambda s: s.name)
def test_onyx_apply_sets_every_setting_on_every_roce_port(sw):
    glob, ports = parse_onyx(render_apply(sw))
    roce = sw.roce
    lossless = roce.pfc_mode == "lossless"
    assert set(ports) == set(sw.roce_ports())
    assert glob["pfc"] is lossless
    assert glob["pfc_priorities"] == ({roce.pfc_priority} if lossless else set())
    assert glob["vlans"] == sw.rail_vlans()
    vlans = expected_vlans(sw)
    for port, s in ports.items():
        assert s["mtu"] == {"mtu": str(roce.mtu)}
        assert s["trust"] == {"trust": "L3" if roce.trust == "dscp" else "L2"}
        assert s["ecn"] == {"tc": str(roce.traffic_class), "min": str(roce.ecn_min_kb), "max": str(roce.ecn_max_kb)}
        assert ("pfc-port" in s) is lossless
        if port in vlans:
            assert s["mode"] is True and s["access"] == {"vlan": str(vlans[port])}
        else:
            assert "mode" not in s and "access" not in s


def test_onyx_lab_switch_carries_the_guides_ecn_line():
    assert ("interface ethernet 1/1-1/4 traffic-class 3 congestion-control ecn minimum-absolute 150 "
            "maximum-absolute 1500") in render_apply(LAB_LIKE).splitlines()


def test_onyx_vlan_context_is_left_before_the_next_command():
    lines = render_apply(ONYX_RAILS).splitlines()
    for i, line in enumerate(lines):
        if re.fullmatch(r"vlan \d+", line):
            assert lines[i + 1] == "exit"


# ---------------------------------------------------------------- Cumulus: parse every nv line


def parse_nvue(script: str) -> set[tuple[str, ...]]:
    """Every `nv set` path of a script, interface lists expanded; the script must end by applying."""
    lines = [ln for ln in script.splitlines() if ln.strip()]
    assert lines[-1] == "nv config apply -y"
    settings: set[tuple[str, ...]] = set()
    for line in lines[:-1]:
        args = nvue_args(line)
        if args is None:
            continue
        assert args[0] in ("set", "unset"), line
        path = tuple(args[1:])
        if path[0] == "interface":
            settings |= {("interface", name, *path[2:]) for name in expand_nvue_interfaces(path[1])}
        else:
            settings.add(path)
    return settings


@pytest.mark.parametrize("sw", CUMULUS, ids=lambda s: s.name)
def test_cumulus_apply_sets_every_setting(sw):
    got = parse_nvue(render_apply(sw))
    roce = sw.roce
    tc, prio = str(roce.traffic_class), str(roce.pfc_priority)
    cc = ("qos", "congestion-control", "default-global", "traffic-class", tc)
    pfc = ("qos", "pfc", "default-global")
    want = {
        ("qos", "roce", "mode", roce.pfc_mode),
        ("qos", "mapping", "default-global", "trust", "l3" if roce.trust == "dscp" else "l2"),
        ("qos", "egress-queue-mapping", "default-global", "switch-priority", prio, "traffic-class", tc),
        (*cc, "ecn", "enable"),
        (*cc, "min-threshold", str(roce.ecn_min_kb * 1000)),
        (*cc, "max-threshold", str(roce.ecn_max_kb * 1000)),
    }
    if roce.pfc_mode == "lossless":
        want |= {(*pfc, "switch-priority", prio), (*pfc, "tx", "enable"), (*pfc, "rx", "enable")}
    want |= {("interface", port, "link", "mtu", str(roce.mtu)) for port in sw.roce_ports()}
    for port, vlan in expected_vlans(sw).items():
        want.add(("interface", port, "bridge", "domain", "br_default", "access", str(vlan)))
    want |= {("bridge", "domain", "br_default", "vlan", str(v)) for v in sw.rail_vlans()}
    assert got == want


@pytest.mark.parametrize("sw", CUMULUS, ids=lambda s: s.name)
def test_cumulus_scripts_are_valid_bash_that_stop_on_the_first_error(sw):
    for script in (render_apply(sw), render_revert(sw)):
        lines = script.splitlines()
        assert lines[1] == "set -eu"
        # the ERR trap is set before the first nv command
        trap = next(i for i, line in enumerate(lines) if line.startswith("trap "))
        assert trap < next(i for i, line in enumerate(lines) if line.startswith("nv "))
        assert f"switch {sw.name}:" in lines[trap] and lines[trap].endswith(" ERR")
        subprocess.run([require_tool("bash"), "-n"], input=script, text=True, check=True)


# ---------------------------------------------------------------- apply then revert leaves nothing


ONYX_BASELINE = {
    "vlan 10",
    "interface ethernet 1/20 mtu 9000",
    "interface ethernet 1/20 qos trust L3",
    "interface ethernet 1/21 switchport access vlan 10",
}
CUMULUS_BASELINE = {
    ("system", "hostname", "leaf01"),
    ("bridge", "domain", "br_default", "vlan", "10"),
    ("interface", "swp20", "link", "mtu", "9000"),
    ("interface", "swp21", "bridge", "domain", "br_default", "access", "10"),
}


@pytest.mark.parametrize("sw", ONYX, ids=lambda s: s.name)
def test_onyx_apply_then_revert_restores_the_running_and_saved_config(sw):
    box = OnyxSwitch(running=set(ONYX_BASELINE), saved=set(ONYX_BASELINE))
    box.run(render_apply(sw))
    assert box.running > ONYX_BASELINE and box.saved == box.running
    applied = set(box.running)
    box.run(render_apply(sw))  # apply is re-run on input changes: it must be idempotent
    assert box.running == applied
    box.run(render_revert(sw))
    assert box.running == ONYX_BASELINE and box.saved == ONYX_BASELINE


@pytest.mark.parametrize("sw", CUMULUS, ids=lambda s: s.name)
def test_cumulus_apply_then_revert_restores_the_applied_config(sw):
    box = CumulusSwitch(applied=set(CUMULUS_BASELINE))
    box.run(render_apply(sw))
    assert box.applied > CUMULUS_BASELINE and box.pending is None
    applied = set(box.applied)
    box.run(render_apply(sw))
    assert box.applied == applied
    box.run(render_revert(sw))
    assert box.applied == CUMULUS_BASELINE and box.pending is None


@pytest.mark.parametrize("sw, dropped", [(ONYX_RAILS, "no qos trust"), (CUMULUS_RAILS, "link mtu")])
def test_a_revert_missing_one_line_leaves_something_behind(sw, dropped):
    """The round trip above can fail: drop one revert line and a setting survives."""
    revert = "\n".join(ln for ln in render_revert(sw).splitlines() if dropped not in ln) + "\n"
    if sw.os == "onyx":
        box = OnyxSwitch(running=set(ONYX_BASELINE))
        box.run(render_apply(sw))
        box.run(revert)
        assert box.running - ONYX_BASELINE
    else:
        box = CumulusSwitch(applied=set(CUMULUS_BASELINE))
        box.run(render_apply(sw))
        box.run(revert)
        assert box.applied - CUMULUS_BASELINE


def test_onyx_revert_removes_access_ports_before_their_vlan():
    lines = render_revert(ONYX_RAILS).splitlines()
    assert lines.index("no vlan 111") > lines.index("interface ethernet 1/5-1/6 no switchport access vlan")


# ---------------------------------------------------------------- port lists, determinism, files


def test_onyx_port_ranges():
    assert onyx_port_ranges(["1/4", "1/1", "1/2", "1/3", "1/3/2", "2/1", "1/7", "2/2"]) == \
        ["1/1-1/4", "1/3/2", "1/7", "2/1-2/2"]


def test_nvue_port_list():
    assert nvue_port_list(["swp3", "swp1", "swp2", "swp7", "swp9s0", "swp10"]) == "swp1-3,swp7,swp9s0,swp10"


@pytest.mark.parametrize("sw", ALL, ids=lambda s: s.name)
def test_rendering_is_deterministic_and_independent_of_port_order(sw):
    raw = sw.model_dump(by_alias=True)
    raw["ports"]["hosts"] = list(reversed(raw["ports"]["hosts"]))
    shuffled = SwitchConfig.model_validate(raw)
    assert render_apply(sw) == render_apply(sw) == render_apply(shuffled)
    assert render_revert(sw) == render_revert(shuffled)
    assert config_digest(sw) == config_digest(shuffled)


def test_digest_follows_the_rendered_text():
    a = switch()
    assert config_digest(a) != config_digest(switch(roce={"ecnMaxKb": 1400}))
    assert config_digest(a) == config_digest(switch(managementAddress="10.0.0.9", connectTimeoutSeconds=3))


def test_render_files_for_the_lab(lab_sections):
    cfg = load_lab(lab_sections)
    files = render_files(cfg.switches, cfg.plan.vsphere)
    assert sorted(files) == ["switch/hosts-baremetal.sh", "switch/sw01.onyx.conf", "switch/sw01.onyx.revert"]
    assert files["switch/sw01.onyx.conf"] == render_apply(cfg.switches[0])
    assert files["switch/sw01.onyx.revert"] == render_revert(cfg.switches[0])
    assert all("<redacted>" not in text for text in files.values())


def test_render_files_without_switches_is_empty(lab_sections):
    lab_sections.pop("switches")
    assert render_files([], load_lab(lab_sections).plan.vsphere) == {}
