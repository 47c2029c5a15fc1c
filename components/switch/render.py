"""Files of the switch section for review (`make render`): no secrets in any of them."""

from __future__ import annotations

from components.switch.files import render_apply, render_baremetal_hosts, render_revert
from components.switch.plan import SwitchPlan


def render_files(switches: list[SwitchPlan]) -> dict[str, str]:
    """Files for `make render`, relative to the output directory (no secrets in any of them)."""
    files: dict[str, str] = {}
    for sw in switches:
        files[f"switch/{sw.name}.{sw.os}.conf"] = render_apply(sw)
        files[f"switch/{sw.name}.{sw.os}.revert"] = render_revert(sw)
    if switches:
        files["switch/hosts-baremetal.sh"] = render_baremetal_hosts(switches)
    return files
