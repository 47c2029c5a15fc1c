"""The helper's HTTP server hands each ignition file only to the nodes that boot from it.

A drop-in for the guide's httpd (Apache 2.4, mod_authz_core and mod_authz_host), installed at
`openshift.helper.paths.httpdDropIn`: inside the web root, every `*.ign` file is denied to all,
then each role's file (`bootstrap.ign`, `master.ign`, `worker.ign`) is allowed to the addresses
of that role's nodes from the plan. `bootstrap.ign` holds the pull secret and the cluster's
certificates; once bootstrapping is over it has no reader left (the bootstrap node is gone from
the plan), so the rule denies it to everyone even before the file is removed. A node added or
removed on day 2 changes this file alone.

Apache merges <Files> and <FilesMatch> sections in the order they appear, and by default
(AuthMerging Off) a later section's Require lines replace an earlier one's (httpd 2.4 docs,
"Configuration Sections: How the sections are merged"; mod_authz_core, AuthMerging), so the
per-file sections after the catch-all decide for their file. The files themselves are
installed root:<httpGroup> 0640, readable by the web server's user only.
"""

from __future__ import annotations

from components.openshift.plan import IGNITION_NAME, ClusterPlan

# The roles whose nodes fetch an ignition file from the helper (pointer ignition, PXE), each its own.
ROLES = ("bootstrap", "control-plane", "worker")


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
