"""A node joining and leaving the running cluster: its CSRs approved (and no other node's), and its
cordon, drain and delete.
"""

from __future__ import annotations

from collections.abc import Sequence

from components.openshift.files.common import render_script
from components.openshift.plan import ClusterPlan
from labrules.openshift import NODE_DRAIN_TIMEOUT_S

CSR_TIMEOUT_S = 3600
CSR_INTERVAL_S = 20


def _node_names(plan: ClusterPlan, names: Sequence[str]) -> list[str]:
    return [*names, *(f"{n}.{plan.domain}" for n in names)]


def render_csr_script(
    plan: ClusterPlan, oc_bin: str, names: Sequence[str],
    timeout_s: int = CSR_TIMEOUT_S, interval_s: int = CSR_INTERVAL_S,
) -> str:
    """Approve pending CSRs of the named nodes only, until every one of them has joined
    (the admin kubeconfig on stdin)."""
    return render_script("approve-csrs.sh", {
        "OC": oc_bin,
        "ALLOWED_NODES": " ".join(_node_names(plan, names)),
        "WANTED_NODES": " ".join(names),
        "CLUSTER_DOMAIN": plan.domain,
        "TIMEOUT_S": int(timeout_s),
        "INTERVAL_S": int(interval_s),
    })


def render_remove_node_script(plan: ClusterPlan, oc_bin: str, name: str,
                              drain_timeout_s: int = NODE_DRAIN_TIMEOUT_S) -> str:
    """Cordon, drain and delete a node that leaves the lab, when the cluster answers (kubeconfig on stdin)."""
    return render_script("remove-node.sh", {
        "OC": oc_bin,
        "NODE_NAMES": " ".join(_node_names(plan, [name])),
        "DRAIN_TIMEOUT_S": int(drain_timeout_s),
    })
