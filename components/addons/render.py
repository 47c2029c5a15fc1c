"""Files of the add-ons for review (`make render`); tools/render.py writes the Kubernetes objects from the plan.

- addons/versions.json: every pinned chart, manifest and image, and which add-ons are on;
- addons/gridd.conf: the vGPU guest licensing file the licensing Secret carries (unless the
  gridd_conf secret replaces it), next to a redacted client token;
- addons/report-thresholds.txt: how `make report` will judge the logs of this lab.
"""

from __future__ import annotations

import json

from components.addons import versions
from components.addons.config import AddonsLab, network_mode, worker_nodes
from components.addons.gpu import render_gridd_conf

REDACTED = "<redacted>"


def render_versions(lab: AddonsLab) -> str:
    charts = {name: {"chart": c.chart, "repo": c.repo, "version": c.version}
              for name, c in (("nfd", versions.NFD), ("gpuOperator", versions.GPU_OPERATOR),
                              ("networkOperator", versions.NETWORK_OPERATOR))}
    jobs = lab.addons.jobs
    data = {
        "enabled": lab.addons.enabled_map(),
        "helmCharts": charts,
        "mpiOperatorManifest": versions.MPI_OPERATOR_MANIFEST,
        "networkOperatorComponents": f"{versions.NETWORK_OPERATOR_REPOSITORY}:{versions.NETWORK_OPERATOR_COMPONENTS}",
        "vgpuGuestDriver": (lab.addons.gpu_operator.vgpu.version if lab.addons.gpu_operator.vgpu
                            else None),
        "bitfusion": f"{versions.BITFUSION_IMAGE_REPO} {versions.BITFUSION_K8S}",
        "jobImages": jobs.images.model_dump(by_alias=True),
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def render_report_thresholds(lab: AddonsLab) -> str:
    nodes = worker_nodes(lab)
    mode = network_mode(lab) if lab.addons.network.enabled else "off"
    nics = len(lab.addons.network.sriov.rails) if mode == "sriov" else 1
    return (
        f"# make report LOGS=<dir> for this lab: {len(nodes)} worker node(s), RDMA network {mode}\n"
        f"python -m tools.report <dir> --link-gbps 100 --nics-per-node {nics} "
        "--ib-threshold 90 --nccl-threshold 85\n"
    )


def render_files(lab: AddonsLab) -> dict[str, str]:
    files = {
        "addons/versions.json": render_versions(lab),
        "addons/report-thresholds.txt": render_report_thresholds(lab),
    }
    gpu = lab.addons.gpu_operator
    if gpu.enabled and gpu.vgpu is not None:
        files["addons/licensing/gridd.conf"] = render_gridd_conf(gpu.licensing)
        if gpu.licensing.mode == "nls":
            files["addons/licensing/client_configuration_token.tok"] = REDACTED + "\n"
    return files
