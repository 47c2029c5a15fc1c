"""The add-ons' images on the lab's mirror: chart values that move every image a chart names, and the
transform that moves the MPI operator's image in its shipped manifest.

The charts' own `repository` values are how NVIDIA's air-gapped guide points the operators at a
private registry ("Install NVIDIA GPU Operator in Air-Gapped Environments",
https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/install-gpu-operator-air-gapped.html).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from components.mirror import MirrorPlan


def mirror_values(images: Mapping[str, str], mirror: MirrorPlan) -> dict[str, Any]:
    """Chart values setting each "<dotted values path>" of `images` to its image on the mirror."""
    values: dict[str, Any] = {}
    for path, source in images.items():
        *parents, leaf = path.split(".")
        node = values
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = mirror.image(source)
    return values


def merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `over` laid on it, mappings merged key by key (Helm's own rule for values)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def with_mirror(values: dict[str, Any], images: Mapping[str, str], mirror: MirrorPlan | None) -> dict[str, Any]:
    """The release's values, every image of the chart on the mirror when there is one (our own values win)."""
    return merged(mirror_values(images, mirror), values) if mirror is not None else values


_POD_KINDS = {"Deployment", "DaemonSet", "StatefulSet", "Job", "ReplicaSet"}


def mirror_images(mirror: MirrorPlan):
    """A transform moving every container image of a workload to the mirror. Only `props` change, so
    the objects keep their names and URNs."""

    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        kind = args.type_.rsplit(":", 1)[-1]
        if kind not in _POD_KINDS:
            return None
        props: dict[str, Any] = dict(args.props)
        spec: dict[str, Any] = dict(props.get("spec") or {})
        template: dict[str, Any] = dict(spec.get("template") or {})
        pod: dict[str, Any] = dict(template.get("spec") or {})
        for key in ("containers", "initContainers"):
            if pod.get(key):
                pod[key] = [{**c, "image": mirror.image(c["image"])} if c.get("image") else c for c in pod[key]]
        template["spec"], spec["template"], props["spec"] = pod, template, spec
        return pulumi.ResourceTransformResult(props=props, opts=args.opts)

    return transform
