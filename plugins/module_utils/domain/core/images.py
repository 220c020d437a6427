# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Image registry mirrors: every image the platform pins, pulled from a mirror instead of its registry.

Private to the collection: not a public API. Pure: standard library only.

A mirror map names source registries and the place that mirrors each one, as containerd's and
CRI-O's registry mirrors do: ``{"nvcr.io": "harbor.example.com/nvcr"}`` turns
``nvcr.io/nvidia/driver:595.91.07`` into ``harbor.example.com/nvcr/nvidia/driver:595.91.07``. Only the
registry part changes: the path, the tag and the digest (the pins) stay as they are.

The charts' image values are data: ``CHART_IMAGES`` lists, per chart, where its values.yaml keeps an
image's repository and its default (the default's registry decides whether a mirror applies). The
lists follow the values.yaml of the chart versions the roles pin, every release pair's for the GPU
Operator (v26.7.0, v26.3.3) and the Network Operator (26.4.1, 26.4.0, 26.1.2), read from their source
archives in shared/upstream/src; a schema test compares them with each of those files, so a new image
in a chart cannot go unmirrored unnoticed, and no value names a key one of those charts lacks (Helm
would ignore it: the GPU Operator's ``draDriver`` block is v26.7.0's, not v26.3.3's).
"""

from __future__ import annotations

import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

FIELD = "gpu_platform_image_mirrors"
DOCKER_HUB = "docker.io"
# A registry host as the reference grammar has it: a DNS name with an optional port.
_HOST = re.compile(r"^(?:[a-z0-9]|[a-z0-9][a-z0-9-]*[a-z0-9])(?:\.(?:[a-z0-9]|[a-z0-9][a-z0-9-]*[a-z0-9]))*(?::[0-9]{1,5})?$")
_PATH = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
EXAMPLE = "{nvcr.io: harbor.example.com/nvcr}"

# (values path, default): where a chart's values.yaml keeps an image's repository (a registry/path that
# the chart joins with an image name and a tag kept elsewhere, so the pins are untouched), and its default.
CHART_IMAGES = {
    "gpu-operator": (
        (("operator", "repository"), "nvcr.io/nvidia"),
        (("validator", "repository"), "nvcr.io/nvidia"),
        (("driver", "repository"), "nvcr.io/nvidia"),
        (("driver", "manager", "repository"), "nvcr.io/nvidia/cloud-native"),
        (("toolkit", "repository"), "nvcr.io/nvidia/k8s"),
        (("devicePlugin", "repository"), "nvcr.io/nvidia"),
        (("dcgm", "repository"), "nvcr.io/nvidia/cloud-native"),
        (("dcgmExporter", "repository"), "nvcr.io/nvidia/k8s"),
        (("gfd", "repository"), "nvcr.io/nvidia"),
        (("migManager", "repository"), "nvcr.io/nvidia/cloud-native"),
        (("nodeStatusExporter", "repository"), "nvcr.io/nvidia"),
        (("gds", "repository"), "nvcr.io/nvidia/cloud-native"),
        (("gdrcopy", "repository"), "nvcr.io/nvidia/cloud-native"),
        (("vgpuManager", "driverManager", "repository"), "nvcr.io/nvidia/cloud-native"),
        (("vgpuDeviceManager", "repository"), "nvcr.io/nvidia/cloud-native"),
        (("vfioManager", "repository"), "nvcr.io/nvidia/cloud-native"),
        (("vfioManager", "driverManager", "repository"), "nvcr.io/nvidia/cloud-native"),
        (("sandboxDevicePlugin", "repository"), "nvcr.io/nvidia"),
        (("kataSandboxDevicePlugin", "repository"), "nvcr.io/nvidia/cloud-native"),
        (("ccManager", "repository"), "nvcr.io/nvidia/cloud-native"),
    ),
    "network-operator": (
        (("operator", "repository"), "nvcr.io/nvidia/cloud-native"),
        (("operator", "ofedDriver", "initContainer", "repository"), "nvcr.io/nvidia/mellanox"),
        (("node-feature-discovery", "image", "repository"), "nvcr.io/nvidia/mellanox/node-feature-discovery"),
        (("maintenance-operator-chart", "operator", "image", "repository"), "nvcr.io/nvidia/mellanox"),
    ),
    # the DRA driver's chart, renamed at 0.4.0 (kubernetes-sigs/dra-driver-nvidia-gpu), its image with it
    "dra-driver-nvidia-gpu": (
        (("image", "repository"), "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu"),
    ),
}
# Image values left alone, and why (the schema test accepts exactly these besides CHART_IMAGES).
NOT_MIRRORED = {
    # Whole references with the release's tag in them (a value per release), of a subchart the platform
    # keeps off (sriovNetworkOperator.enabled: false): the NicClusterPolicy's device plugin is used instead.
    "network-operator": (("sriov-network-operator", "images"),),
    # No default: the vGPU manager image is built by the user and named with its registry already. The DRA driver of
    # v26.7.0's values (draDriver) is rendered only with gpuCluster.deployCR, the experimental GPUCluster that cannot
    # sit beside the ClusterPolicy the platform installs (its dra_driver layer installs the DRA driver's own chart);
    # v26.3.3's chart has no such block, so a mirror value there would name a key that chart lacks.
    "gpu-operator": (("vgpuManager", "repository"), ("draDriver",)),
}


# What makes an image block's pin: its tag or digest, and where it comes from.
PIN_KEYS = ("repository", "image", "version", "tag", "digest")
ALLOW_FIELD = "gpu_platform_allow_image_overrides"


def pinned_overrides(chart, extra, field):
    """The dotted paths of ``extra`` (a release's extra values) that would change a pinned image of ``chart``: a
    repository, image, version, tag or digest under one of its image blocks (CHART_IMAGES, NOT_MIRRORED)."""
    blocks = [path[:-1] for path, dummy in CHART_IMAGES.get(chart, ())] + list(NOT_MIRRORED.get(chart, ()))
    found = []
    for block in blocks:
        node = extra
        for key in block:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            keys = sorted(node) if block and block[-1] == "images" else [k for k in PIN_KEYS if k in node]
            found += ["%s.%s" % (field, ".".join(block + (key,))) for key in keys]
        elif node is not None and block and block[-1] == "images":
            found.append("%s.%s" % (field, ".".join(block)))
    return sorted(set(found))


def check_pins(named, allow=False):
    """Every release's extra values ({field: (chart, extra values)}) checked for overrides of pinned images, all
    reported at once; with ``allow`` (gpu_platform_allow_image_overrides) they pass."""
    if allow is True:
        return []
    if allow is not False:
        raise ParamError(ALLOW_FIELD, "%r is not true or false" % (allow,), "set it to true or false")
    paths = []
    for field in sorted(named):
        chart, extra = named[field]
        paths += pinned_overrides(chart, extra if isinstance(extra, dict) else {}, field)
    if paths:
        raise ParamError(", ".join(paths), "would change a pinned image (its repository, tag, digest or version), "
                         "which the platform's version matrix and upgrade order were not checked with",
                         "drop it: set a driver version with gpu_platform_driver_version, a registry with "
                         "gpu_platform_image_mirrors; or, knowingly, set %s: true" % ALLOW_FIELD)
    return paths


def check_mirrors(mirrors, field=FIELD):
    """The mirror map, checked: registry host -> mirror (host[:port][/path]), no scheme, no credentials,
    no tag. Returns a plain dict with the keys and values stripped."""
    if mirrors is None or mirrors == "":
        return {}
    if not isinstance(mirrors, dict):
        raise ParamError(field, "%r is not a map of registries to mirrors" % (mirrors,),
                         "give a dictionary such as %s" % EXAMPLE)
    out = {}
    for key, value in mirrors.items():
        registry = str(key).strip().lower()
        name = "%s.%s" % (field, str(key).strip())
        if not _HOST.match(registry):
            raise ParamError(name, "%r is not a registry host" % (key,),
                             "name the registry as images spell it, host[:port] with no scheme or path, "
                             "such as nvcr.io or docker.io")
        if not isinstance(value, str) or not value.strip():
            raise ParamError(name, "the mirror is empty", "give the mirror as host[:port][/path], or drop the entry")
        text = value.strip()
        if "@" in text:
            # Never echoed: it may be user:password@host.
            raise ParamError(name, "the mirror holds credentials or a digest ('@')",
                             "give host[:port][/path] only; pull credentials go into an image pull Secret")
        if "://" in text:
            raise ParamError(name, "%r has a scheme" % (text,),
                             "give the mirror as host[:port][/path] without http:// or https://; the container "
                             "runtime's configuration decides the protocol")
        text = text.rstrip("/")
        host, dummy, path = text.partition("/")
        parts = path.split("/") if path else []
        if not _HOST.match(host) or ("." not in host and ":" not in host and host != "localhost"):
            raise ParamError(name, "%r does not start with a registry host" % (text,),
                             "give host[:port][/path], such as harbor.example.com/nvcr (a host without a dot "
                             "or port would be read as a Docker Hub path)")
        if any(not _PATH.match(part) for part in parts):
            raise ParamError(name, "%r has a path that is not a registry path (lower-case letters, digits, "
                             "'.', '_' and '-', no tag)" % (text,), "give host[:port][/path], such as "
                             "harbor.example.com/nvcr")
        out[registry] = text
    return out


def check_all(named):
    """Every layer's mirror map checked at once: ``named`` is {variable name: mirrors}. Raises one
    ParamError listing every bad entry (field, problem, fix); returns {variable name: checked mirrors}."""
    names = sorted(named)
    checked = validate.every([lambda n=n: check_mirrors(named[n], n) for n in names], "mirror settings")
    return dict(zip(names, checked))


def split_registry(reference):
    """(registry, rest) of an image reference or repository: the registry is the first component when it
    looks like a host (a dot, a port or localhost), else Docker Hub, whose one-part names are library/."""
    first, sep, rest = reference.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first.lower(), rest
    if not sep:
        return DOCKER_HUB, "library/" + reference
    return DOCKER_HUB, reference


def mirror(reference, mirrors):
    """``reference`` (an image or a repository) pulled from its registry's mirror, or unchanged when
    ``mirrors`` (as check_mirrors returns it) has none for that registry."""
    if not reference or not mirrors:
        return reference
    registry, rest = split_registry(reference)
    target = mirrors.get(registry)
    if target is None and registry == DOCKER_HUB:
        target = mirrors.get("index.docker.io") or mirrors.get("registry-1.docker.io")
    return "%s/%s" % (target, rest) if target else reference


def mirror_image(field, reference, mirrors):
    """A pinned image (checked as validate.pinned_image does) moved to its mirror."""
    return mirror(validate.pinned_image(field, reference), check_mirrors(mirrors))


def chart_values(chart, mirrors):
    """The values that point ``chart``'s images at the mirrors ({} for a chart without image data or
    without a mirror for its registries). Merge them under the user's extra values."""
    mirrors = check_mirrors(mirrors)
    out = {}
    if not mirrors:
        return out
    for path, default in CHART_IMAGES.get(chart, ()):
        moved = mirror(default, mirrors)
        if moved == default:
            continue
        node = out
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = moved
    return out


def policy_images(images, mirrors):
    """NicClusterPolicy component images ({component: {repository, image, version}}) with their
    repositories on the mirrors."""
    mirrors = check_mirrors(mirrors)
    return {part: dict(spec, repository=mirror(spec["repository"], mirrors)) for part, spec in images.items()}
