# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Smoke tests of every layer: the plan of a platform's smoke tests, and the verdict on their results.

Private to the collection: not a public API. Pure: standard library only, no I/O.

- ``plan``: the smoke tests of the chosen layers, as the smoke_test module's options; every object is built
  once here, so a bad value fails before anything runs.
- ``collect`` gathers the results of a loop of smoke_test tasks; ``summary`` turns per-check results into one
  line per layer and the overall verdict.

The objects a test runs are built in ``domain.smoke.objects`` and what they print is judged in
``domain.smoke.checks``; the NCCL run (the proof of GPUDirect RDMA) is ``domain.smoke.nccl``.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import nccl as smoke_nccl
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke.checks import _first_line, _lines
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke.objects import (
    CUDA, DEFAULT_DEVICE_CLASS, DRA, FIELDS, GANG, GPU_RESOURCE, VOLCANO, VOLCANO_DEFAULT_QUEUE, _positive_int,
    cuda_pod, dra_claim_pod, gang_job, positive_number)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

# -- the plan of a platform's smoke tests -----------------------------------------------------------

LAYERS = ("gpu_operator", "gpu_sharing", "dra_driver", "scheduling", "network_operator")
PLAN_FIELDS = {"layers": "smoke_tests_layers", "timeout": "smoke_tests_timeout",
               "nccl_timeout": "smoke_tests_nccl_timeout", "image_pull_secrets": "smoke_tests_image_pull_secrets"}


def _item(layer, check, params=None, skipped_reason=None):
    return {"layer": layer, "check": check, "params": dict(params or {}), "skipped_reason": skipped_reason}


def _custom_profile(entries):
    """The first MIG profile a custom layout turns on, as the device plugin names it (``1g.10gb+me`` -> ``1g.10gb``)."""
    for entry in entries:
        if entry.get("mig-enabled") and entry.get("mig-devices"):
            return sorted(entry["mig-devices"])[0].split("+", 1)[0]
    return None


def _sharing_items(pools, common, image, mig_config=None):
    """Per pool: an allocatable check (time-slicing) and a pod on the pool's shared resource. A MIG pool whose
    layout is a config of the custom mig-parted ``mig_config`` is checked against that config."""
    items = []
    configs = (mig_config or {}).get("mig-configs") or {}
    for pool in pools:
        selector = dict(pool["node_selector"])
        if pool["sharing"] == "time-slicing":
            items.append(_item("gpu_sharing", "allocatable", dict(
                common, node_selector=selector, expected_per_gpu={pool["resource_name"]: pool["replicas"]})))
            resources = {pool["resource_name"]: 1}
        elif pool["sharing"] == "mig":
            custom = pool["mig_profile"] in configs
            check = dict(common, node_selector=selector, mig_layout=pool["mig_profile"], mig_strategy=pool["mig_strategy"])
            if custom:
                check["mig_config"] = mig_config
            items.append(_item("gpu_sharing", "allocatable", check))
            if custom:
                profile = _custom_profile(configs[pool["mig_profile"]])
            else:
                profile = pool["mig_profile"][len("all-"):] if pool["mig_profile"].startswith("all-") else None
            if pool["mig_strategy"] == "mixed" and profile is None:
                items.append(_item("gpu_sharing", "cuda", skipped_reason="pool %s: the mixed layout %s has no "
                                   "single MIG resource to ask for" % (pool["name"], pool["mig_profile"])))
                continue
            resources = {GPU_RESOURCE: 1} if pool["mig_strategy"] == "single" else {"nvidia.com/mig-" + profile: 1}
        else:
            continue
        cuda_pod(common["namespace"], image, resources, selector, pool["name"])  # validates
        params = dict(common, image=image, resources=resources, node_selector=selector, suffix=pool["name"])
        items.append(_item("gpu_sharing", CUDA, params))
    return items


def plan(settings):
    """The smoke tests of the chosen layers, as ``[{layer, check, params, skipped_reason}]``.

    ``settings`` (the smoke_tests role's variables, gathered by its vars): ``layers``, ``namespace``,
    ``image``, ``nccl_image``, ``timeout``, ``nccl_timeout``, ``cuda_resources``, ``mig_config`` (the sharing
    layer's custom mig-parted config, or None), ``sharing_pools``
    (validated pools as dicts: name, node_selector, sharing, replicas, resource_name, mig_profile,
    mig_strategy), ``dra_enabled``, ``device_class``, ``scheduler`` (volcano, kai or none), ``queue``,
    ``kai_queue`` (a team queue, used when ``queue`` is empty under KAI), ``replicas``, ``window``,
    ``network_mode``, ``rdma_resource`` (None: the mode's resource, as many as ``nics_per_pod`` or the node
    type gives), ``resource_name``, ``nics_per_pod``, ``node_type``, ``network``, ``nodes``, ``gpus_per_node``
    ("": the node type's GPUs, else 8) and ``min_busbw`` ("": the node type's threshold) (``domain.smoke.nccl``),
    and ``image_pull_secrets`` (the Secret names every test pod pulls with; checked here, passed to each test).
    ``params`` are the smoke_test module's options. Every object is built here once, so a bad value fails before
    anything runs, naming the role variable.
    """
    layers = settings.get("layers")
    if not isinstance(layers, (list, tuple)) or any(layer not in LAYERS for layer in layers):
        raise ParamError(PLAN_FIELDS["layers"], "%r is not a list of layers" % (layers,),
                         "use some of: %s" % ", ".join(LAYERS))
    namespace = settings.get("namespace")
    validate.dns_label(FIELDS["namespace"], namespace)
    validate.secret_names(PLAN_FIELDS["image_pull_secrets"], settings.get("image_pull_secrets"))
    timeout = _positive_int(PLAN_FIELDS["timeout"], settings.get("timeout"), example="300")
    common = {"namespace": namespace, "timeout": timeout}
    image = settings.get("image")
    items = []
    if "gpu_operator" in layers:
        cuda_pod(namespace, image, settings.get("cuda_resources"))
        items.append(_item("gpu_operator", CUDA, dict(common, image=image, resources=settings.get("cuda_resources"))))
    if "gpu_sharing" in layers:
        items += _sharing_items(settings.get("sharing_pools") or [], common, image, settings.get("mig_config"))
    if "dra_driver" in layers:
        if settings.get("dra_enabled"):
            device_class = settings.get("device_class") or DEFAULT_DEVICE_CLASS
            dra_claim_pod(namespace, image, device_class)
            items.append(_item("dra_driver", DRA, dict(common, image=image, device_class=device_class)))
        else:
            items.append(_item("dra_driver", DRA, skipped_reason="the DRA driver is not enabled (gpu_platform_dra_enabled)"))
    if "scheduling" in layers:
        items.append(_gang_item(settings, common, image))
    if "network_operator" in layers:
        items.append(smoke_nccl.nccl_item(settings, common, _item))
    return items


def _gang_item(settings, common, image):
    scheduler = settings.get("scheduler") or "none"
    if scheduler == "none":
        return _item("scheduling", GANG, skipped_reason="no gang scheduler is installed (gpu_platform_scheduler: none)")
    queue = settings.get("queue") or (VOLCANO_DEFAULT_QUEUE if scheduler == VOLCANO else settings.get("kai_queue"))
    if not queue:
        raise ParamError(FIELDS["queue"], "is empty and there is no team queue to use under KAI Scheduler",
                         "name a KAI leaf queue (one with a parent), or give gpu_platform_teams")
    replicas = settings.get("replicas")
    positive_number(FIELDS["window"], settings.get("window"), example="30")
    gang_job(scheduler, common["namespace"], image, replicas, queue)
    return _item("scheduling", GANG, dict(common, image=image, scheduler=scheduler, queue=queue, replicas=replicas,
                                          window_seconds=settings.get("window")))


# -- summary --------------------------------------------------------------------------------------

def _evidence_line(evidence):
    if isinstance(evidence, (list, tuple)):
        evidence = next((str(e) for e in evidence if e and str(e).strip()), "")
    text = _first_line(_lines(evidence))
    return text[:300] if text else "(no log line)"


def collect(loop_results):
    """Verdicts from the results of a loop over ``plan`` items (``register`` of a smoke_test task), in plan order.

    A skipped loop item stands for a test that could not run here (its plan item carries the reason);
    a result without ``smoke`` is an error (bad input, missing CRD) and goes to ``errors`` with its message.
    Returns ``{"results", "errors"}``.
    """
    results, errors = [], []
    for entry in loop_results or []:
        item = entry.get("item") or {}
        if entry.get("smoke"):
            results.append(entry["smoke"])
        elif item.get("skipped_reason"):
            results.append({"layer": item.get("layer"), "check": item.get("check"), "object": None, "passed": None,
                            "reason": "", "evidence": [], "skipped_reason": item["skipped_reason"]})
        else:
            errors.append("%s %s: %s" % (item.get("layer"), item.get("check"), entry.get("msg") or "no result"))
    return {"results": results, "errors": errors}


def summary(results):
    """One line per layer (in the order the layers first appear) and the overall verdict.

    ``results`` are dicts with ``layer``, ``check``, ``object``, ``passed``, ``reason``,
    ``evidence`` and optionally ``skipped_reason`` (a truthy value marks the check skipped). A
    layer is ``PASS`` when none of its checks failed and one passed, ``FAIL`` (the first failing
    check, then the names of any others) when one failed, ``SKIPPED`` when all were skipped.
    Overall passes when nothing failed and something passed. Returns ``{"lines", "passed"}``.
    """
    if not isinstance(results, (list, tuple)):
        raise ParamError("results", "must be a list of check results", "give [{layer, check, object, passed, ...}]")
    layers = {}
    for index, item in enumerate(results):
        if not isinstance(item, dict) or not item.get("layer"):
            raise ParamError("results", "item %d has no layer" % index, "give every result a layer name")
        layers.setdefault(str(item["layer"]), []).append(item)
    lines, any_failed, any_passed = [], False, False
    for layer, items in layers.items():
        skipped = [i for i in items if i.get("skipped_reason")]
        ran = [i for i in items if not i.get("skipped_reason")]
        failed = [i for i in ran if not i.get("passed")]
        if failed:
            any_failed = True
            first = failed[0]
            line = "%s: FAIL - %s - %s - %s" % (layer, first.get("object") or first.get("check") or "?",
                                                first.get("reason") or "no reason given",
                                                _evidence_line(first.get("evidence")))
            if len(failed) > 1:
                line += " (also failed: %s)" % ", ".join(str(i.get("check") or i.get("object")) for i in failed[1:])
            lines.append(line)
        elif ran:
            any_passed = True
            lines.append("%s: PASS" % layer)
        else:
            lines.append("%s: SKIPPED - %s" % (layer, "; ".join(str(i["skipped_reason"]) for i in skipped)))
    return {"lines": lines, "passed": any_passed and not any_failed}
