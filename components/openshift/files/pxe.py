"""PXE menus for bare-metal nodes: pxelinux (BIOS) and GRUB (UEFI, e.g. DGX), per role and per MAC."""

from __future__ import annotations

from urllib.parse import urlsplit

from components.openshift.plan import IGNITION_NAME, ROLES, ClusterNode, ClusterPlan


def _kernel_args(plan: ClusterPlan, role: str, install_device: str) -> str:
    args = [
        "ip=dhcp",
        "rd.neednet=1",
        f"coreos.inst.install_dev={install_device}",
        f"coreos.live.rootfs_url={plan.image_url(plan.rhcos.rootfs)}",
        f"coreos.inst.ignition_url={plan.ignition_url(role)}",
    ]
    return " ".join(args + list(plan.kernel_args))


def _pxe_label(role: str) -> str:
    return IGNITION_NAME[role]


def _role_device(plan: ClusterPlan, role: str) -> str:
    """The install device every node of the role shares, else the cluster default."""
    devices = {n.install_device for n in plan.of_role(role)}
    return devices.pop() if len(devices) == 1 else plan.install_device


def _pxelinux_entry(plan: ClusterPlan, label: str, role: str, install_device: str) -> list[str]:
    return [
        f"LABEL {label}",
        f"    MENU LABEL Install RHCOS: {label}",
        f"    KERNEL {plan.image_url(plan.rhcos.kernel)}",
        f"    APPEND initrd={plan.image_url(plan.rhcos.initramfs)} {_kernel_args(plan, role, install_device)}",
    ]


def render_pxelinux_default(plan: ClusterPlan) -> str:
    """pxelinux.cfg/default (BIOS): one entry per role; unknown machines boot their disk."""
    out = [
        f"# PXE menu (BIOS) for OpenShift cluster {plan.domain} (rendered by gpu-lab)",
        "# Machines with a configured MAC get pxelinux.cfg/01-<mac> and install unattended.",
        "DEFAULT local",
        "PROMPT 1",
        "TIMEOUT 100",
        "",
        "LABEL local",
        "    MENU LABEL Boot from local disk",
        "    LOCALBOOT 0",
    ]
    for role in ROLES:
        out += [""] + _pxelinux_entry(plan, _pxe_label(role), role, _role_device(plan, role))
    return "\n".join(out) + "\n"


def pxelinux_mac_name(mac: str) -> str:
    """pxelinux's per-machine file name: 01 (Ethernet) and the MAC with dashes."""
    return "01-" + mac.lower().replace(":", "-")


def pxe_nodes(plan: ClusterPlan) -> list[ClusterNode]:
    """Bare-metal nodes that PXE picks out by MAC."""
    return [n for n in plan.nodes if n.platform == "baremetal" and n.mac]


def render_pxelinux_node(plan: ClusterPlan, node: ClusterNode) -> str:
    """pxelinux.cfg/01-<mac>: this node installs its role without a prompt."""
    out = [f"# {node.name} ({node.role}) of OpenShift cluster {plan.domain} (rendered by gpu-lab)",
           f"DEFAULT {node.name}", "PROMPT 0", "TIMEOUT 0", ""]
    out += _pxelinux_entry(plan, node.name, node.role, node.install_device)
    return "\n".join(out) + "\n"


def _grub_path(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or 80
    return f"(http,{parts.hostname}:{port}){parts.path}"


def _grub_entry(plan: ClusterPlan, entry_id: str, title: str, role: str, install_device: str) -> list[str]:
    return [
        f"menuentry '{title}' --id {entry_id} {{",
        f"    linux {_grub_path(plan.image_url(plan.rhcos.kernel))} {_kernel_args(plan, role, install_device)}",
        f"    initrd {_grub_path(plan.image_url(plan.rhcos.initramfs))}",
        "}",
    ]


def render_grub_cfg(plan: ClusterPlan) -> str:
    """grub.cfg (UEFI, e.g. DGX): one entry per role, configured MACs install unattended."""
    out = [
        f"# PXE menu (UEFI) for OpenShift cluster {plan.domain} (rendered by gpu-lab)",
        "set timeout=10",
        "set default=local",
    ]
    for node in pxe_nodes(plan):
        out += [f'if [ "${{net_default_mac}}" = "{node.mac}" ]; then', f"    set default={node.name}",
                "    set timeout=0", "fi"]
    out += ["", "menuentry 'Boot from local disk' --id local {", "    exit", "}"]
    for role in ROLES:
        label = _pxe_label(role)
        out += [""] + _grub_entry(plan, label, f"Install RHCOS: {label}", role, _role_device(plan, role))
    for node in pxe_nodes(plan):
        out += [""] + _grub_entry(plan, node.name, f"Install RHCOS: {node.name} ({node.role})", node.role,
                                  node.install_device)
    return "\n".join(out) + "\n"
