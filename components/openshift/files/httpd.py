"""The helper's HTTP server hands each ignition file only to the nodes that boot from it.

bootstrap.ign holds the pull secret and the cluster's certificates: an httpd drop-in denies every
`*.ign` file, then allows each role's file to the addresses of that role's nodes, so a node added
or removed changes this file alone. Why the order works: docs/parts.md, "How the OpenShift steps run".
"""

from __future__ import annotations

from components.openshift.plan import IGNITION_NAME, ROLES, ClusterPlan


def _quoted(text: str) -> str:
    """An argument in Apache's configuration syntax: double quotes, '\\' and '"' escaped."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_ignition_access(plan: ClusterPlan) -> str:
    """The httpd drop-in that serves each ignition file only to the nodes of its role."""
    helper = plan.helper
    lines = [
        "# gpu-lab: who may fetch the ignition files (generated from the stack's configuration; do not edit).",
        "# Each node may fetch its own role's file only; no other address gets any .ign file.",
        f"<Directory {_quoted(helper.paths.http_root)}>",
        '    <FilesMatch "\\.ign$">',
        "        Require all denied",
        "    </FilesMatch>",
    ]
    for role in ROLES:
        nodes = plan.of_role(role)
        lines.append(f'    <Files "{IGNITION_NAME[role]}.ign">')
        if nodes:
            lines.append(f"        # {' '.join(n.name for n in nodes)}")
            lines.append(f"        Require ip {' '.join(n.planned_address for n in nodes)}")
        else:
            lines.append(f"        # no {role} node now")
            lines.append("        Require all denied")
        lines.append("    </Files>")
    lines.append("</Directory>")
    return "\n".join(lines) + "\n"
