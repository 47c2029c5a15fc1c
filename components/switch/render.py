"""Files of the switch section for review (`make render`): no secrets in any of them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.switch.files import render_apply, render_baremetal_hosts, render_revert

if TYPE_CHECKING:
    from components.config import LabConfig


def render_files(lab: "LabConfig") -> dict[str, str]:
    """Files for `make render`, relative to the output directory (no secrets in any of them)."""
    files: dict[str, str] = {}
    for sw in lab.switches:
        files[f"switch/{sw.name}.{sw.os}.conf"] = render_apply(sw)
        files[f"switch/{sw.name}.{sw.os}.revert"] = render_revert(sw)
    if lab.switches:
        files["switch/hosts-baremetal.sh"] = render_baremetal_hosts(lab)
    return files
