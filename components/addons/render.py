"""Files of the add-ons for review (`make render`); tools/render.py writes the Kubernetes objects from the plan.

- addons/versions.json: every pinned chart, manifest and image, and which add-ons are on;
- addons/gridd.conf: the vGPU guest licensing file the licensing Secret carries (unless the
  gridd_conf secret replaces it), next to a redacted client token;
- addons/report-thresholds.txt: how `make report` will judge the logs of this lab.
"""

from __future__ import annotations

import json

from components.addons import shipped, versions
from components.addons.bitfusion import image_repository
from components.addons.gpu import render_gridd_conf
from components.addons.plan import AddonsPlan
from components.addons.rdma import components_repository

REDACTED = "<redacted>"


def render_versions(addons: AddonsPlan) -> str:
    mirror = addons.mirror
    charts: dict[str, dict[str, str | None]] = {name: {"chart": c.chart, "repo": c.repo, "version": c.version}
              for name, c in (("nfd", versions.NFD), ("gpuOperator", versions.GPU_OPERATOR),
                              ("networkOperator", versions.NETWORK_OPERATOR))}
    if mirror is not None:
        for entry in charts.values():
            entry["chart"], entry["repo"] = mirror.chart(str(entry["chart"]))
    images = addons.jobs.images
    data = {
        "enabled": addons.enabled,
        "helmCharts": charts,
        "mpiOperatorManifest": _shipped(versions.MPI_OPERATOR_SOURCE),
        "networkOperatorComponents": f"{components_repository(mirror)}:{versions.NETWORK_OPERATOR_COMPONENTS}",
        "vgpuGuestDriver": addons.gpu_operator.vgpu.version if addons.gpu_operator.vgpu else None,
        "bitfusion": f"{image_repository(mirror)} {versions.BITFUSION_K8S}",
        "jobImages": {"cuda": images.cuda, "ncclTests": images.nccl_tests, "perftest": images.perftest,
                      "horovod": images.horovod},
    }
    if mirror is not None:
        data["mirror"] = {"registry": mirror.registry, "charts": mirror.charts}
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _shipped(source: tuple[str, str, str]) -> dict[str, str]:
    m = shipped.find(*source)
    return {"file": m.program_path, "repository": m.repository, "tag": m.tag, "path": m.path, "commit": m.commit,
            "sha256": m.sha256}


def render_report_thresholds(addons: AddonsPlan) -> str:
    nodes = addons.jobs.nodes
    mode = addons.network.mode if addons.network.enabled else "off"
    nics = len(addons.network.rails) if mode == "sriov" else 1
    return (
        f"# make report LOGS=<dir> for this lab: {len(nodes)} worker node(s), RDMA network {mode}\n"
        f"python -m tools.report <dir> --link-gbps 100 --nics-per-node {nics} "
        "--ib-threshold 90 --nccl-threshold 85\n"
    )


def render_files(addons: AddonsPlan) -> dict[str, str]:
    files = {
        "addons/versions.json": render_versions(addons),
        "addons/report-thresholds.txt": render_report_thresholds(addons),
    }
    gpu = addons.gpu_operator
    if gpu.enabled and gpu.vgpu is not None:
        files["addons/licensing/gridd.conf"] = render_gridd_conf(gpu.licensing)
        if gpu.licensing.mode == "nls":
            files["addons/licensing/client_configuration_token.tok"] = REDACTED + "\n"
    return files
