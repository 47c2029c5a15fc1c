"""Host settings pulumi-vsphere has no argument for, each a dynamic resource that puts back what it
found: an advanced option, a firewall ruleset, the graphics type, a VMkernel module's options.

The provider classes are pickled into the state by module and name (docs/engine.md).
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.dynamic import Resource

from components.dynamic.provider import (
    ORIGINAL,
    PENDING_REBOOT,
    PENDING_SINCE_BOOT,
    _SettingProvider,
)
from labrules.types import HOST_ADVANCED_OPTION_KIND, HOST_FIREWALL_RULESET_KIND


class _HostSettingProvider(_SettingProvider):
    find_call = "ViewManager.CreateContainerView (HostSystem look-up)"

    def _target(self, si: Any, props: dict[str, Any], *, deleting: bool = False) -> Any:
        from components.dynamic import hostops

        return hostops.find_host(si, props["hostName"])


class AdvancedOptionProvider(_HostSettingProvider):
    kind = HOST_ADVANCED_OPTION_KIND
    target_keys = ("hostName", "key")
    value_key = "value"
    get_call = "OptionManager.QueryOptions"
    set_call = "OptionManager.UpdateOptions"

    def _setting_label(self, props: dict[str, Any]) -> str:
        return f"advanced option {props.get('key')}"

    def _id(self, props: dict[str, Any]) -> str:
        return f"{props['hostName']}:option:{props['key']}"

    def _get(self, target: Any, props: dict[str, Any]) -> Any:
        from components.dynamic import hostops

        return hostops.get_advanced_option(target, props["key"])

    def _set(self, target: Any, props: dict[str, Any], value: Any) -> None:
        from components.dynamic import hostops

        hostops.set_advanced_option(target, props["key"], value)

    def _same(self, live: Any, wanted: Any) -> bool:
        from components.dynamic import hostops

        return hostops.as_option_type(wanted, live) == live


class FirewallRulesetProvider(_HostSettingProvider):
    kind = HOST_FIREWALL_RULESET_KIND
    target_keys = ("hostName", "ruleset")
    value_key = "enabled"
    get_call = "HostFirewallSystem.firewallInfo"
    set_call = "HostFirewallSystem.EnableRuleset/DisableRuleset"

    def _setting_label(self, props: dict[str, Any]) -> str:
        return f"firewall ruleset {props.get('ruleset')}"

    def _id(self, props: dict[str, Any]) -> str:
        return f"{props['hostName']}:firewall:{props['ruleset']}"

    def _check_value(self, value: Any) -> str | None:
        return None if isinstance(value, bool) else "enabled must be true or false"

    def _get(self, target: Any, props: dict[str, Any]) -> Any:
        from components.dynamic import hostops

        return hostops.get_ruleset_enabled(target, props["ruleset"])

    def _set(self, target: Any, props: dict[str, Any], value: Any) -> None:
        from components.dynamic import hostops

        hostops.set_ruleset_enabled(target, props["ruleset"], bool(value))


class GraphicsTypeProvider(_HostSettingProvider):
    kind = "vsphere-host-graphics"
    target_keys = ("hostName",)
    value_key = "graphicsType"
    needs_reboot = True  # in use once Xorg restarts or the host reboots (only the reboot is visible)
    get_call = "HostGraphicsManager.graphicsConfig"
    set_call = "HostGraphicsManager.UpdateGraphicsConfig"

    def _setting_label(self, props: dict[str, Any]) -> str:
        return "graphics type"

    def _id(self, props: dict[str, Any]) -> str:
        return f"{props['hostName']}:graphics"

    def _check_value(self, value: Any) -> str | None:
        # Not hostops.GRAPHICS_TYPES: that would load pyVmomi during preview.
        allowed = ("shared", "sharedDirect")
        if value in allowed:
            return None
        return f"graphicsType must be one of {', '.join(allowed)} (vGPU needs sharedDirect)"

    def _get(self, target: Any, props: dict[str, Any]) -> Any:
        from components.dynamic import hostops

        return hostops.get_graphics_type(target)

    def _set(self, target: Any, props: dict[str, Any], value: Any) -> None:
        from components.dynamic import hostops

        hostops.set_graphics_type(target, value)


class ModuleOptionsProvider(_HostSettingProvider):
    kind = "vsphere-host-module-options"
    target_keys = ("hostName", "module")
    value_key = "options"
    needs_reboot = True  # the module reads its options when it loads, at boot
    get_call = "HostKernelModuleSystem.QueryConfiguredModuleOptionString"
    set_call = "HostKernelModuleSystem.UpdateModuleOptionString"

    def _setting_label(self, props: dict[str, Any]) -> str:
        return f"options of module {props.get('module')}"

    def _id(self, props: dict[str, Any]) -> str:
        return f"{props['hostName']}:module:{props['module']}"

    def _check_value(self, value: Any) -> str | None:
        return None if isinstance(value, str) else "options must be a string such as 'pfctx=0x08 pfcrx=0x08'"

    def _get(self, target: Any, props: dict[str, Any]) -> Any:
        from components.dynamic import hostops

        return hostops.get_module_options(target, props["module"])

    def _set(self, target: Any, props: dict[str, Any], value: Any) -> None:
        from components.dynamic import hostops

        hostops.set_module_options(target, props["module"], "" if value is None else str(value))


_ADVANCED_OPTION = AdvancedOptionProvider()
_FIREWALL_RULESET = FirewallRulesetProvider()
_GRAPHICS_TYPE = GraphicsTypeProvider()
_MODULE_OPTIONS = ModuleOptionsProvider()


class HostAdvancedOption(Resource):
    """A host advanced option, e.g. ``Net.PVRDMAVmknic = vmk1`` (the vmknic PVRDMA uses)."""

    original: pulumi.Output[Any]
    """The option's value before create; delete restores it."""

    def __init__(
        self,
        name: str,
        host_name: pulumi.Input[str],
        key: pulumi.Input[str],
        value: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "kind": _ADVANCED_OPTION.kind,
            "hostName": host_name,
            "key": key,
            "value": value,
            ORIGINAL: None,
        }
        super().__init__(_ADVANCED_OPTION, name, props, opts)


class HostFirewallRuleset(Resource):
    """A host firewall ruleset switched on or off (``pvrdma`` opens PVRDMA's port 28250)."""

    original: pulumi.Output[bool]
    """Whether the ruleset was enabled before create; delete restores it."""

    def __init__(
        self,
        name: str,
        host_name: pulumi.Input[str],
        ruleset: pulumi.Input[str] = "pvrdma",
        enabled: pulumi.Input[bool] = True,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "kind": _FIREWALL_RULESET.kind,
            "hostName": host_name,
            "ruleset": ruleset,
            "enabled": enabled,
            ORIGINAL: None,
        }
        super().__init__(_FIREWALL_RULESET, name, props, opts)


class _PendingReboot:
    """A host setting that ESXi reads at boot."""

    @property
    def pending_reboot(self) -> pulumi.Output[bool]:
        """Written, and the host has not rebooted since (``pulumi refresh`` re-reads the boot time)."""
        output: pulumi.Output[bool] = getattr(self, PENDING_REBOOT)  # the SDK names outputs by their key
        return output


class HostGraphicsType(Resource, _PendingReboot):
    """The host default graphics type; NVIDIA vGPU needs ``sharedDirect`` (Shared Direct).

    ESXi uses the new type once Xorg restarts or the host reboots.
    """

    original: pulumi.Output[str]
    """The graphics type before create; delete restores it."""

    def __init__(
        self,
        name: str,
        host_name: pulumi.Input[str],
        graphics_type: pulumi.Input[str] = "sharedDirect",
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "kind": _GRAPHICS_TYPE.kind,
            "hostName": host_name,
            "graphicsType": graphics_type,
            ORIGINAL: None,
            PENDING_REBOOT: None,
            PENDING_SINCE_BOOT: None,
        }
        super().__init__(_GRAPHICS_TYPE, name, props, opts)


class HostModuleOptions(Resource, _PendingReboot):
    """The option string of a VMkernel module, e.g. ConnectX PFC and trust for ``nmlx5_core``.

    The whole string is replaced, not merged. ESXi hands it to the module when the module
    loads, so the options take effect only after the host reboots (plan a rolling reboot
    in maintenance mode); until then the running driver keeps its old settings.
    """

    original: pulumi.Output[str]
    """The option string before create ("" when none); delete restores it."""

    def __init__(
        self,
        name: str,
        host_name: pulumi.Input[str],
        module: pulumi.Input[str] = "nmlx5_core",
        options: pulumi.Input[str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        if options is None:  # no silent default: "" would wipe the module's options
            raise TypeError("HostModuleOptions needs options, e.g. 'pfctx=0x08 pfcrx=0x08 trust_state=2'")
        props = {
            "kind": _MODULE_OPTIONS.kind,
            "hostName": host_name,
            "module": module,
            "options": options,
            ORIGINAL: None,
            PENDING_REBOOT: None,
            PENDING_SINCE_BOOT: None,
        }
        super().__init__(_MODULE_OPTIONS, name, props, opts)


