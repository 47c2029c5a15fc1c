"""Renderers: every undo item's lines, the apply script parsed back into settings, and both run on
the switch models (undo one item and exactly that item's settings go)."""

from __future__ import annotations

import copy
import re
import subprocess

import pytest
from required_tools import require_tool
from switch_sim import CumulusBox, CumulusSwitch, OnyxSwitch, expand_nvue_interfaces, expand_onyx_ports, nvue_args
from switch_stack import planned

from components.config import load_lab
from components.switch.dialects import ONYX_ROLLBACK_FILE, Item, nvue_port_list, onyx_port_ranges
from components.switch.files import (
    apply_digest,
    render_apply,
    render_login_check,
    render_revert,
    render_undo,
    undo_items,
)
from components.switch.model import SwitchConfig
from components.switch.plan import SwitchPlan, switch_plan
from components.switch.render import render_files

# Each named switch's validated config, for the tests that edit it and plan it again.
CONFIGS: dict[str, SwitchConfig] = {}


def raw_of(sw: SwitchPlan) -> dict:
    return CONFIGS[sw.name].model_dump(by_alias=True)


def switch(**over) -> SwitchPlan:
    raw = {"name": "sw", "os": "onyx", "managementAddress": "10.0.0.2", "ports": {"hosts": ["1/1", "1/2", "1/3"]}}
    raw.update(over)
    CONFIGS[raw["name"]] = SwitchConfig.model_validate(raw)
    return switch_plan(CONFIGS[raw["name"]], None)


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


def expected_vlans(sw: SwitchPlan) -> dict[str, int]:
    return {port: rail.vlan for rail in sw.rails for port in rail.ports}


# ---------------------------------------------------------------- every item, spelled out


def expected_items(sw: SwitchPlan) -> dict[str, tuple[list[str], list[str]]]:
    """key -> (apply lines, undo lines) with interfaces spelled out, written from the switch OSes'
    command references independently of the renderer."""
    r = sw.roce
    lossless = r.pfc_mode == "lossless"
    tc, prio = r.traffic_class, r.pfc_priority
    ports = sw.roce_ports
    vlans = expected_vlans(sw)
    want: dict[str, tuple[list[str], list[str]]] = {}
    if sw.os == "onyx":
        want["saved-config"] = ([f"configuration write to {ONYX_ROLLBACK_FILE} no-switch"],
                                [f"configuration delete {ONYX_ROLLBACK_FILE}"])
        if lossless:
            want["pfc"] = (["dcb priority-flow-control enable force"], ["no dcb priority-flow-control enable force"])
            want[f"pfc-priority-{prio}"] = ([f"dcb priority-flow-control priority {prio} enable"],
                                            [f"no dcb priority-flow-control priority {prio} enable"])
        for vlan in sw.rail_vlans:
            want[f"vlan-{vlan}"] = ([f"vlan {vlan}", "exit"], [f"no vlan {vlan}"])
        for p in ports:
            eth, key = f"interface ethernet {p}", f"port-{p.replace('/', '-')}"
            want[f"{key}-mtu"] = ([f"{eth} mtu {r.mtu} force"], [f"{eth} no mtu"])
            want[f"{key}-trust"] = ([f"{eth} qos trust {'L3' if r.trust == 'dscp' else 'L2'}"], [f"{eth} no qos trust"])
            want[f"{key}-ecn-tc{tc}"] = (
                [f"{eth} traffic-class {tc} congestion-control ecn minimum-absolute {r.ecn_min_kb} "
                 f"maximum-absolute {r.ecn_max_kb}"], [f"{eth} no traffic-class {tc} congestion-control"])
            if lossless:
                want[f"{key}-pfc"] = ([f"{eth} dcb priority-flow-control mode on force"],
                                      [f"{eth} no dcb priority-flow-control mode force"])
            if p in vlans:
                want[f"{key}-access-vlan"] = ([f"{eth} switchport mode access", f"{eth} switchport access vlan {vlans[p]}"],
                                              [f"{eth} no switchport access vlan"])
        return want
    cc, pfc = f"qos congestion-control default-global traffic-class {tc}", "qos pfc default-global"
    want["roce-mode"] = ([f"nv set qos roce mode {r.pfc_mode}"], ["nv unset qos roce"])
    want["trust"] = ([f"nv set qos mapping default-global trust {'l3' if r.trust == 'dscp' else 'l2'}"],
                     ["nv unset qos mapping default-global trust"])
    want[f"egress-priority-{prio}"] = (
        [f"nv set qos egress-queue-mapping default-global switch-priority {prio} traffic-class {tc}"],
        [f"nv unset qos egress-queue-mapping default-global switch-priority {prio}"])
    want[f"ecn-tc{tc}"] = ([f"nv set {cc} ecn enable", f"nv set {cc} min-threshold {r.ecn_min_kb * 1000}",
                            f"nv set {cc} max-threshold {r.ecn_max_kb * 1000}"], [f"nv unset {cc}"])
    if lossless:
        want["pfc"] = ([f"nv set {pfc} tx enable", f"nv set {pfc} rx enable"], [f"nv unset {pfc} tx", f"nv unset {pfc} rx"])
        want[f"pfc-priority-{prio}"] = ([f"nv set {pfc} switch-priority {prio}"],
                                        [f"nv unset {pfc} switch-priority {prio}"])
    for vlan in sw.rail_vlans:
        want[f"vlan-{vlan}"] = ([f"nv set bridge domain br_default vlan {vlan}"],
                                [f"nv unset bridge domain br_default vlan {vlan}"])
    for p in ports:
        want[f"port-{p}-mtu"] = ([f"nv set interface {p} link mtu {r.mtu}"], [f"nv unset interface {p} link mtu"])
        if p in vlans:
            want[f"port-{p}-access-vlan"] = ([f"nv set interface {p} bridge domain br_default access {vlans[p]}"],
                                             [f"nv unset interface {p} bridge domain br_default"])
    return want


def item_apply_lines(sw: SwitchPlan, item: Item) -> list[str]:
    if item.port is None:
        return list(item.apply)
    prefix = f"interface ethernet {item.port}" if sw.os == "onyx" else f"nv set interface {item.port}"
    return [f"{prefix} {line}" for line in item.apply]


def undo_body(sw: SwitchPlan, item: Item) -> list[str]:
    """The undo script's lines between the OS's opening and closing lines."""
    lines = render_undo(sw, item).splitlines()
    if sw.os == "onyx":
        assert lines[:2] == ["enable", "configure terminal"] and lines[-1] == "configuration write"
        return lines[2:-1]
    assert lines[-1] == "nv config apply -y"
    start = lines.index("nv config detach >/dev/null || true")
    return lines[start + 1:-1]


@pytest.mark.parametrize("sw", ALL, ids=lambda s: s.name)
def test_every_item_applies_and_undoes_exactly_its_own_lines(sw):
    items = undo_items(sw)
    want = expected_items(sw)
    assert sorted(item.key for item in items) == sorted(want)
    for item in items:
        assert (item_apply_lines(sw, item), undo_body(sw, item)) == want[item.key], item.key


def test_item_keys_and_order_for_a_rail_switch():
    # The anchor first, global settings, then each port's items together (a rail's VLAN before its ports).
    assert [item.key for item in undo_items(CUMULUS_RAILS)] == [
        "roce-mode", "trust", "egress-priority-3", "ecn-tc3", "pfc", "pfc-priority-3", "port-swp10-mtu",
        "vlan-111", "port-swp1-mtu", "port-swp1-access-vlan", "port-swp2-mtu", "port-swp2-access-vlan",
        "vlan-112", "port-swp3-mtu", "port-swp3-access-vlan", "port-swp4-mtu", "port-swp4-access-vlan",
        "port-swp6s1-mtu", "port-swp6s1-access-vlan"]
    keys = [item.key for item in undo_items(ONYX_RAILS)]
    assert keys[:3] == ["saved-config", "pfc", "pfc-priority-3"]
    assert keys[3:7] == ["port-1-1-mtu", "port-1-1-trust", "port-1-1-ecn-tc3", "port-1-1-pfc"]
    assert keys.index("vlan-212") < keys.index("port-1-7-mtu") < keys.index("port-1-8-2-access-vlan")


def test_a_changed_value_changes_the_apply_never_an_undo():
    """MTU, ECN thresholds, trust and a rail port's VLAN are values: same keys, same undo scripts."""
    base = {item.key: render_undo(CUMULUS_RAILS, item) for item in undo_items(CUMULUS_RAILS)}
    raw = raw_of(CUMULUS_RAILS)
    raw["roce"].update(mtu=9000, ecnMinKb=100, ecnMaxKb=1200, trust="pcp")
    raw["ports"]["rails"][1]["ports"].remove("swp4")
    raw["ports"]["rails"][0]["ports"].append("swp4")  # swp4 moves from rail 112 to rail 111
    changed = planned(raw)
    assert {item.key: render_undo(changed, item) for item in undo_items(changed)} == base
    assert render_apply(changed) != render_apply(CUMULUS_RAILS)


def test_login_check_is_read_only():
    assert render_login_check(LAB_LIKE) == "show version\n"
    assert render_login_check(CUMULUS_RAILS) == "nv show system\n"
    box = OnyxSwitch(running={"vlan 10"}, saved={"vlan 10"})
    box.run(render_login_check(LAB_LIKE))
    assert box.snapshot() == OnyxSwitch(running={"vlan 10"}, saved={"vlan 10"}).snapshot()


# ---------------------------------------------------------------- Onyx: parse the apply script


_ONYX_LINE = [
    ("save", re.compile(rf"^configuration write to {ONYX_ROLLBACK_FILE} no-switch$")),
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
    # the running configuration is saved before anything changes
    assert lines[2] == f"configuration write to {ONYX_ROLLBACK_FILE} no-switch"
    glob: dict = {"pfc": False, "pfc_priorities": set(), "vlans": []}
    ports: dict[str, dict] = {}
    for line in lines[3:-1]:
        kind, m = next(((k, p.match(line)) for k, p in _ONYX_LINE if p.match(line)), (None, None))
        assert kind and kind != "save", f"unexpected Onyx line: {line!r}"
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
    assert set(ports) == set(sw.roce_ports)
    assert glob["pfc"] is lossless
    assert glob["pfc_priorities"] == ({roce.pfc_priority} if lossless else set())
    assert glob["vlans"] == sw.rail_vlans
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


def test_onyx_apply_merges_ports_into_ranges():
    lines = render_apply(LAB_LIKE).splitlines()
    assert ("interface ethernet 1/1-1/4 traffic-class 3 congestion-control ecn minimum-absolute 150 "
            "maximum-absolute 1500") in lines  # the guide's line, with the lab's ports
    assert sum(line.startswith("interface ethernet ") for line in lines) == 4  # one line per setting


def test_onyx_vlan_context_is_left_before_the_next_command():
    lines = render_apply(ONYX_RAILS).splitlines()
    for i, line in enumerate(lines):
        if re.fullmatch(r"vlan \d+", line):
            assert lines[i + 1] == "exit"


# ---------------------------------------------------------------- Cumulus: parse the apply script


def parse_nvue(script: str) -> set[tuple[str, ...]]:
    """Every `nv set` path a script stages, interface lists expanded."""
    settings: set[tuple[str, ...]] = set()
    for line in script.splitlines():
        args = nvue_args(line)
        if args is None or args[0] != "set":
            continue
        path = tuple(args[1:])
        if path[0] == "interface":
            settings |= {("interface", name, *path[2:]) for name in expand_nvue_interfaces(path[1])}
        else:
            settings.add(path)
    return settings


@pytest.mark.parametrize("sw", CUMULUS, ids=lambda s: s.name)
def test_cumulus_apply_stages_every_setting(sw):
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
    want |= {("interface", port, "link", "mtu", str(roce.mtu)) for port in sw.roce_ports}
    for port, vlan in expected_vlans(sw).items():
        want.add(("interface", port, "bridge", "domain", "br_default", "access", str(vlan)))
    want |= {("bridge", "domain", "br_default", "vlan", str(v)) for v in sw.rail_vlans}
    assert got == want
    assert "nv set interface swp1-4,swp6s1,swp10 link mtu 9216" in render_apply(CUMULUS_RAILS).splitlines()


@pytest.mark.parametrize("sw", CUMULUS, ids=lambda s: s.name)
def test_cumulus_scripts_are_valid_bash_that_lock_and_stop_on_the_first_error(sw):
    for script in (render_apply(sw), *(render_undo(sw, item) for item in undo_items(sw))):
        lines = script.splitlines()
        assert lines[1] == "set -eu"
        lock, trap = lines.index("flock -w 300 9"), next(i for i, line in enumerate(lines) if line.startswith("trap "))
        first_nv = next(i for i, line in enumerate(lines) if line.startswith("nv "))
        assert lines[lock - 1] == "exec 9>/run/lock/gpu-lab-nvue.lock" and lock < trap < first_nv
        assert f"switch {sw.name}:" in lines[trap] and lines[trap].endswith(" ERR")
        subprocess.run([require_tool("bash"), "-n"], input=script, text=True, check=True)


def test_cumulus_apply_commits_with_confirm_only_when_something_changes():
    lines = render_apply(CUMULUS_RAILS).splitlines()
    diff = lines.index("changes=$(nv config diff -o commands)")
    assert max(i for i, line in enumerate(lines) if line.startswith("nv set ")) < diff
    assert lines[diff + 1:] == [
        "if ! printf '%s\\n' \"$changes\" | grep -Eq '^nv (set|unset) '; then",
        '    echo "gpu-lab: switch cl-rails: already configured, nothing applied"',
        "    nv config detach",
        "    exit 0",
        "fi",
        "nv config apply --confirm 10m -y",
        "nv show system >/dev/null",
        "nv config apply --confirm-yes",
    ]


# ---------------------------------------------------------------- on the models


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


def onyx_baseline() -> OnyxSwitch:
    return OnyxSwitch(running=set(ONYX_BASELINE), saved=set(ONYX_BASELINE))


def onyx_with(sw: SwitchPlan, items: list[Item]) -> OnyxSwitch:
    """The baseline switch after one session that applies exactly `items`."""
    box = onyx_baseline()
    box.run("\n".join(["enable", "configure terminal", *(ln for i in items for ln in item_apply_lines(sw, i)),
                       "configuration write"]))
    return box


def run_linear_nvue(box: CumulusSwitch, script: str) -> None:
    """An undo script on the NVUE model, in process: it is a straight list of commands."""
    assert not re.search(r"^\s*(if|fi|changes=)", script, re.MULTILINE), "not a straight script"
    for line in script.splitlines():
        args = nvue_args(line)
        if args is not None:
            box.nv(args)


def cumulus_with(sw: SwitchPlan, items: list[Item]) -> CumulusSwitch:
    box = CumulusSwitch(applied=set(CUMULUS_BASELINE))
    for item in items:
        for line in item_apply_lines(sw, item):
            box.nv(nvue_args(line))
    box.nv(["config", "apply", "-y"])
    return box


@pytest.mark.parametrize("sw", ONYX, ids=lambda s: s.name)
def test_onyx_apply_is_the_sum_of_its_items_and_idempotent(sw):
    box = onyx_baseline()
    box.run(render_apply(sw))
    items = undo_items(sw)
    assert box.snapshot() == onyx_with(sw, items).snapshot()
    assert box.saved == box.running and box.files == {ONYX_ROLLBACK_FILE: ONYX_BASELINE}
    before = box.snapshot()
    box.run(render_apply(sw))  # every line sets an absolute value: the second run changes nothing
    assert box.snapshot()["running"] == before["running"] and box.saved == box.running
    assert box.files == {ONYX_ROLLBACK_FILE: box.running}  # the rollback file holds what was there before


@pytest.mark.parametrize("sw", ONYX, ids=lambda s: s.name)
def test_onyx_undoing_one_item_removes_exactly_that_item(sw):
    items = undo_items(sw)
    for i, item in enumerate(items):
        if item.key.startswith("vlan-"):
            continue  # a VLAN goes with its ports: below
        box = onyx_with(sw, items)
        box.run(render_undo(sw, item))
        assert box.snapshot() == onyx_with(sw, items[:i] + items[i + 1:]).snapshot(), item.key


@pytest.mark.parametrize("sw", CUMULUS, ids=lambda s: s.name)
def test_cumulus_undoing_one_item_removes_exactly_that_item(sw):
    items = undo_items(sw)
    for i, item in enumerate(items):
        box = cumulus_with(sw, items)
        run_linear_nvue(box, render_undo(sw, item))
        assert box.applied == cumulus_with(sw, items[:i] + items[i + 1:]).applied, item.key


def test_a_rail_leaves_with_its_ports_then_its_vlan():
    for sw in (ONYX_RAILS, CUMULUS_RAILS):
        items = undo_items(sw)
        rail = [i for i in items if i.key == "vlan-111" or i.port in ("1/5", "1/6", "swp1", "swp2")]
        rest = [i for i in items if i not in rail]
        if sw.os == "onyx":
            box = onyx_with(sw, items)
            for item in reversed(rail):  # newest first, as the engine deletes them
                box.run(render_undo(sw, item))
            assert box.snapshot() == onyx_with(sw, rest).snapshot()
        else:
            nvue = cumulus_with(sw, items)
            for item in reversed(rail):
                run_linear_nvue(nvue, render_undo(sw, item))
            assert nvue.applied == cumulus_with(sw, rest).applied


@pytest.mark.parametrize("sw", ALL, ids=lambda s: s.name)
def test_every_undo_newest_first_restores_the_baseline(sw):
    items = undo_items(sw)
    if sw.os == "onyx":
        box = onyx_with(sw, items)
        for item in reversed(items):
            box.run(render_undo(sw, item))
        assert box.snapshot() == onyx_baseline().snapshot()
    else:
        box = cumulus_with(sw, items)
        for item in reversed(items):
            run_linear_nvue(box, render_undo(sw, item))
        assert box.applied == CUMULUS_BASELINE and box.pending is None


@pytest.mark.parametrize("sw, dropped", [(ONYX_RAILS, "no qos trust"), (CUMULUS_RAILS, "link mtu")])
def test_an_undo_missing_one_line_leaves_something_behind(sw, dropped):
    """The round trips above can fail: drop one undo line and a setting survives."""
    items = undo_items(sw)
    if sw.os == "onyx":
        box = onyx_with(sw, items)
        for item in reversed(items):
            box.run("\n".join(ln for ln in render_undo(sw, item).splitlines() if dropped not in ln))
        assert box.running - ONYX_BASELINE
    else:
        box = cumulus_with(sw, items)
        for item in reversed(items):
            run_linear_nvue(box, "\n".join(ln for ln in render_undo(sw, item).splitlines() if dropped not in ln))
        assert box.applied - CUMULUS_BASELINE


def test_onyx_failed_apply_leaves_the_saved_config_and_one_command_restores_the_running_one():
    box = onyx_with(LAB_LIKE, undo_items(LAB_LIKE))
    before = box.snapshot()
    raw = raw_of(LAB_LIKE)
    raw["roce"].update(mtu=9100, ecnMaxKb=1400)  # the MTU lines come before the refused ECN line
    changed = planned(raw)
    box.fail_on = "congestion-control"
    with pytest.raises(ValueError):
        box.run(render_apply(changed))
    # The lines before the refused one are in the running configuration; nothing was saved.
    assert box.running != set(before["running"]) and box.saved == set(before["saved"])
    assert box.files[ONYX_ROLLBACK_FILE] == set(before["running"])
    box.fail_on = ""
    box.run(f"enable\nconfigure terminal\nconfiguration switch-to {ONYX_ROLLBACK_FILE}\n")
    assert box.running == set(before["running"])


@pytest.mark.parametrize("sw", CUMULUS, ids=lambda s: s.name)
def test_cumulus_apply_on_bash_is_the_sum_of_its_items_and_applies_nothing_twice(sw, tmp_path):
    box = CumulusBox(tmp_path, CumulusSwitch(applied=set(CUMULUS_BASELINE)))
    done = box.run(render_apply(sw))
    assert done.returncode == 0, done.stderr
    assert box.state.applied == cumulus_with(sw, undo_items(sw)).applied
    assert box.state.pending is None and box.state.confirm_rollback is None
    assert box.received()[-3:] == ["nv config apply --confirm 10m -y", "nv show system", "nv config apply --confirm-yes"]
    box.reset(box.state)
    done = box.run(render_apply(sw))
    assert done.returncode == 0, done.stderr
    assert f"gpu-lab: switch {sw.name}: already configured, nothing applied" in done.stdout
    assert not [line for line in box.received() if line.startswith("nv config apply")]
    assert box.state.pending is None


# ---------------------------------------------------------------- port lists, determinism, files


def test_onyx_port_ranges():
    assert onyx_port_ranges(["1/4", "1/1", "1/2", "1/3", "1/3/2", "2/1", "1/7", "2/2"]) == \
        ["1/1-1/4", "1/3/2", "1/7", "2/1-2/2"]


def test_nvue_port_list():
    assert nvue_port_list(["swp3", "swp1", "swp2", "swp7", "swp9s0", "swp10"]) == "swp1-3,swp7,swp9s0,swp10"


@pytest.mark.parametrize("sw", ALL, ids=lambda s: s.name)
def test_rendering_is_deterministic_and_independent_of_port_order(sw):
    raw = copy.deepcopy(raw_of(sw))
    raw["ports"]["hosts"] = list(reversed(raw["ports"]["hosts"]))
    for rail in raw["ports"]["rails"]:
        rail["ports"] = list(reversed(rail["ports"]))
    shuffled = planned(raw)
    assert render_apply(sw) == render_apply(sw) == render_apply(shuffled)
    assert render_revert(sw) == render_revert(shuffled)
    assert undo_items(sw) == undo_items(shuffled)
    assert apply_digest(sw) == apply_digest(shuffled)


def test_digest_follows_the_apply_script():
    a = switch()
    assert apply_digest(a) != apply_digest(switch(roce={"ecnMaxKb": 1400}))
    assert apply_digest(a) == apply_digest(switch(managementAddress="10.0.0.9", connectTimeoutSeconds=3))


def test_revert_file_lists_every_undo_newest_first():
    text = render_revert(ONYX_RAILS)
    headers = re.findall(r"^# ---- undo item (\S+)$", text, re.MULTILINE)
    assert headers == [item.key for item in reversed(undo_items(ONYX_RAILS))]
    for item in undo_items(ONYX_RAILS):
        assert f"# ---- undo item {item.key}\n{render_undo(ONYX_RAILS, item)}" in text


def test_render_files_for_the_lab(lab_sections):
    cfg = load_lab(lab_sections)
    files = render_files(list(cfg.plan.switches))
    assert sorted(files) == ["switch/hosts-baremetal.sh", "switch/sw01.onyx.conf", "switch/sw01.onyx.revert"]
    assert files["switch/sw01.onyx.conf"] == render_apply(cfg.plan.switches[0])
    assert files["switch/sw01.onyx.revert"] == render_revert(cfg.plan.switches[0])
    assert all("<redacted>" not in text for text in files.values())


def test_render_files_without_switches_is_empty(lab_sections):
    lab_sections.pop("switches")
    assert render_files(list(load_lab(lab_sections).plan.switches)) == {}
