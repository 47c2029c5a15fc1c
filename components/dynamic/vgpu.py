"""The provider of the vGPU profile resources of labs built before the node roll held the profile.

No program registers a vGPU resource any more: the node's roll (components/dynamic/roll.py) gives a new
VM its vGPU and changes it one node at a time. The provider stays for the states that hold one, which
pickle it by module and name (docs/engine.md): refreshing them reads the profile, and the delete the
next `up` runs for each leaves the vGPU on its VM.
"""

from __future__ import annotations

from typing import Any

from components.dynamic.provider import (
    _SettingProvider,
)


class VgpuProfileProvider(_SettingProvider):
    kind = "vsphere-vm-vgpu"
    target_keys = ("vmId",)
    value_key = "profile"
    # Names of the node; changing them changes nothing on vSphere.
    informational_keys = ("vmName", "nodeName")
    find_call = "VirtualMachine.name (VM look-up by id)"
    get_call = "VirtualMachine.config"
    set_call = "VirtualMachine.ReconfigVM_Task (with power-off and power-on when running)"

    def _target_label(self, props: dict[str, Any]) -> str:
        return f"VM {props.get('vmName')!r} ({props.get('vmId')})"

    def _setting_label(self, props: dict[str, Any]) -> str:
        return "vGPU profile"

    def _id(self, props: dict[str, Any]) -> str:
        return f"{props['vmId']}:vgpu"

    def _check_value(self, value: Any) -> str | None:
        if isinstance(value, str) and value.strip():
            return None
        return "profile must name a vGPU profile, e.g. grid_v100-16c"

    def _target(self, si: Any, props: dict[str, Any], *, deleting: bool = False) -> Any:
        from components.dynamic import hostops

        if not deleting:
            return hostops.find_vm(si, props["vmId"], props.get("vmName"))
        try:
            return hostops.find_vm(si, props["vmId"])
        except hostops.VsphereLookupError:
            return None  # the VM is gone, and its vGPU with it: nothing to put back

    def _get(self, target: Any, props: dict[str, Any]) -> Any:
        from components.dynamic import hostops

        return hostops.get_vgpu_profile(target)

    def _set(self, target: Any, props: dict[str, Any], value: Any) -> None:
        from components.dynamic import hostops

        hostops.set_vgpu_profile(target, value or "")

    def _same(self, live: Any, wanted: Any) -> bool:
        return (live or "") == (wanted or "")

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """Nothing on vSphere: the node's roll holds the VM's vGPU profile now (components/dynamic/roll.py,
        NodeRoll, whose create gives a new VM its vGPU), and labs built before it drop this resource; taking
        the vGPU off would power-cycle a running node for nothing. The VM's delete takes its vGPU along."""
        return None


_VGPU_PROFILE = VgpuProfileProvider()
