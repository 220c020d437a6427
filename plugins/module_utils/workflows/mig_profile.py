# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""params -> validate every node -> batched rollout with waits -> result, for mig_profile.

Private to the collection: not a public API. Pure parts: domain/mig/layouts.py (catalog, layouts) and
domain/mig/mig_profile.py (node plans, batches, outcomes). The clock is injectable.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import render as render_adapter
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube_wait import WaitTimeout, wait_for
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import (
    layouts as mig, mig_profile as mig_rollout)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import node_labels
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError, ParamError

DISABLED = "all-disabled"


def _config_map(params):
    config = params.get("mig_config")
    if not config:
        return None
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": params.get("config_map_name") or "custom-mig-parted-config",
                         "namespace": params.get("operator_namespace") or "gpu-operator"},
            "data": {"config.yaml": render_adapter.to_yaml(config).split("---\n", 1)[1]}}


def _check_profile(params, product_by_node):
    """Every node's GPU takes the profile; raises ParamError naming the node otherwise."""
    profile = params["profile"]
    config = params.get("mig_config")
    if config:
        names = mig.validate_mig_parted_config(config)
        if profile not in names:
            raise ParamError("profile", "%r is not a config in mig_config (it has: %s)" % (profile, ", ".join(names)),
                             "name one of the configs of mig_config")
        mig.validate_mig_parted_config(config, product_by_node or None, profile=profile)
        return {node: config["mig-configs"][profile] for node in product_by_node}
    layouts = {}
    for node, product in sorted(product_by_node.items()):
        try:
            layouts[node] = mig.named_layout(profile, product)
        except ParamError as exc:
            raise ParamError("profile", "does not fit node %s (%s): %s" % (node, product, exc.msg), "pick a layout "
                             "that %s supports, or select only nodes with a GPU that takes %s" % (product, profile))
    return layouts


def read_nodes(kube, params):
    if params.get("nodes"):
        nodes = []
        for name in params["nodes"]:
            node = kube.get("v1", "Node", name)
            if node is None:
                raise ParamError("nodes", "node %s does not exist" % name, "give the names of existing GPU nodes")
            nodes.append(node)
        return nodes
    nodes = kube.list("v1", "Node", label_selector=params["node_selector"])
    if not nodes:
        raise ParamError("node_selector", "%r selects no node" % params["node_selector"],
                         "give a selector that matches the GPU node pool, e.g. nodepool=training")
    return nodes


def labelled(kube, params, nodes, timeout, clock=None, interval=5.0):
    """The nodes once GPU Feature Discovery has labelled each (``nvidia.com/mig.capable`` set, true or false): it does
    once the node's driver is loaded, which can come after the ClusterPolicy says ready. A node whose label stays unset
    for ``timeout`` is returned as it is (``products`` then refuses it, naming it)."""
    def settled(found):
        return all(mig_rollout.CAPABLE in mig_rollout.labels_of(n) for n in found)
    if settled(nodes):
        return nodes
    try:
        return wait_for(lambda: read_nodes(kube, params), settled, timeout, clock, interval,
                        describe=mig_rollout.describe_batch)
    except WaitTimeout as exc:
        return exc.details.get("last") or nodes


def products(nodes):
    """Node name -> catalog product; refuses nodes that are not MIG capable, naming them."""
    out, refused = {}, []
    for node in nodes:
        labels = mig_rollout.labels_of(node)
        name, label = node["metadata"]["name"], labels.get(mig_rollout.PRODUCT, "no nvidia.com/gpu.product label")
        product = mig.product_for_label(labels.get(mig_rollout.PRODUCT, ""))
        if product is None or labels.get(mig_rollout.CAPABLE) != "true":
            refused.append("%s (%s, mig.capable=%s)" % (name, label, labels.get(mig_rollout.CAPABLE, "unset")))
        else:
            out[name] = product
    if refused:
        raise ParamError("nodes", "not MIG-capable: %s" % ", ".join(refused),
                         "select only nodes whose GPUs support MIG (A30, A100, H100, H200, GH200, B200)")
    return out


def request(params):
    """The wait time-out in seconds, once the module's options passed every check that needs no cluster. The module
    runs it first; the preflight (playbooks/checks.yml) runs it before anything is written."""
    return _validate(validate.given(params))


def _validate(params):
    if bool(params.get("nodes")) == bool(params.get("node_selector")):
        raise ParamError("nodes", "give either nodes or node_selector (exactly one)",
                         "list node names in nodes, or a label selector in node_selector")
    for index, name in enumerate(params.get("nodes") or []):
        if not isinstance(name, str) or len(name) > 253 or not validate.DNS1123_SUBDOMAIN.match(name):
            raise ParamError("nodes[%d]" % index, "%r is not a node name" % (str(name)[:100],),
                             "give the node's name as kubectl get nodes shows it")
    if params.get("node_selector"):
        validate.parse_selector("node_selector", params["node_selector"])
    validate.dns_label("operator_namespace", params.get("operator_namespace") or "gpu-operator")
    name = params.get("config_map_name") or "custom-mig-parted-config"
    if len(name) > 253 or not validate.DNS1123_SUBDOMAIN.match(name):
        raise ParamError("config_map_name", "%r is not a ConfigMap name" % name[:100],
                         "give a lower-case name such as custom-mig-parted-config")
    if not params.get("mig_config"):
        # A custom config defines its own names; a standard name is checked against the catalog before any read.
        mig.check_layout_name("profile", params.get("profile"))
    mig_rollout.batches([], params.get("max_unavailable", 1))
    strategy = params.get("strategy") or "single"
    if strategy not in ("single", "mixed"):
        raise ParamError("strategy", "%r is not a MIG strategy" % strategy, "use single or mixed")
    return validate.duration_seconds("wait_timeout", params.get("wait_timeout") or 900)


def run_render(params, check_mode):
    if not params.get("nodes"):
        raise ParamError("node_selector", "cannot be resolved without a cluster (render_to)",
                         "list the node names in nodes when rendering")
    patches = [{"node": name, "labels": {mig_rollout.CONFIG: params["profile"]}} for name in sorted(params["nodes"])]
    files = {"mig-profile-%s-node-labels.yaml" % params["profile"]: render_adapter.to_yaml(
        {"kind": node_labels.PATCH_LIST, "patches": patches}, "mig_profile (apply with kubectl label)")}
    config_map = _config_map(params)
    if config_map:
        files["configmap-%s-%s.yaml" % (config_map["metadata"]["namespace"], config_map["metadata"]["name"])] = \
            render_adapter.to_yaml(config_map, "mig_profile")
    changed, diffs = render_adapter.write_files(params["render_to"], files, check_mode)
    return {"changed": bool(changed), "diff": diffs,
            "rendered": {"directory": params["render_to"], "files": sorted(files), "changed_files": changed}}


class Rollout:
    """One rollout: nodes validated, batches written and waited for, stop on the first failure."""

    def __init__(self, kube, params, timeout, clock=None, interval=5.0):
        self.kube, self.params, self.timeout, self.clock, self.interval = kube, params, timeout, clock, interval
        self.profile = params["profile"]

    def _read(self, names):
        return [self.kube.get("v1", "Node", name) for name in names]

    def _wait(self, names):
        def settled(nodes):
            done, failed, pending = mig_rollout.batch_outcome(nodes, self.profile)
            return done or bool(failed)
        try:
            return wait_for(lambda: self._read(names), settled, self.timeout, self.clock, self.interval,
                            describe=mig_rollout.describe_batch)
        except WaitTimeout as exc:
            raise GpuPlatformError(
                "MIG reconfiguration of %s did not finish within %ss: %s. Fix: check the MIG manager's log on those "
                "nodes; if they stay stuck, re-run with retrigger_stuck: true"
                % (", ".join(names), self.timeout, mig_rollout.describe_batch(exc.details["last"])),
                stuck=names)

    def run(self, plans, check_mode):
        config_map = _config_map(self.params)
        cm_changed = []
        if config_map:
            cm_changed = self.kube.apply_objects([config_map], check_mode)[0]
        groups = mig_rollout.batches(plans, self.params.get("max_unavailable", 1))
        done_batches = []
        if not check_mode:
            remaining = [p.name for group in groups for p in group]
            for group in groups:
                names = [p.name for p in group]
                for plan in group:
                    if plan.action == "retrigger":  # the MIG manager acts on a change of the label
                        self.kube.patch_labels("v1", "Node", plan.name, {mig_rollout.CONFIG: None,
                                                                         mig_rollout.STATE: None})
                    # The state the MIG manager wrote for the previous layout ("success") would read as this one's
                    # until it notices the change: it goes with the same patch, and the manager writes it anew.
                    self.kube.patch_labels("v1", "Node", plan.name, {mig_rollout.CONFIG: self.profile,
                                                                     mig_rollout.STATE: None})
                nodes = self._wait(names)
                remaining = remaining[len(names):]
                failed = mig_rollout.batch_outcome(nodes, self.profile)[1]
                if failed:
                    raise GpuPlatformError(
                        "MIG reconfiguration to %s failed on %s; stopped, %s left untouched. Fix: read the MIG "
                        "manager's log on the failed nodes (kubectl -n gpu-operator logs -l app=nvidia-mig-manager)"
                        % (self.profile, ", ".join(failed), ", ".join(remaining) or "no node"),
                        failed=failed, untouched=remaining, batches=done_batches + [names])
                done_batches.append(names)
        return cm_changed, [[p.name for p in group] for group in groups]


def _expected(node, product, layout, strategy, profile):
    """What the node should advertise once the layout is applied (None without GFD's GPU count label, or with one
    the layout applied now does not explain)."""
    labels = mig_rollout.labels_of(node)
    count = labels.get("nvidia.com/gpu.count")
    if count is None:
        return None
    applied = labels.get("nvidia.com/mig.config")

    def per_gpu():  # what one GPU gives under the layout applied now (GFD's labels describe that one)
        if applied in (None, profile):
            return mig.resources(product, layout, strategy, 1)
        try:
            return mig.resources(product, mig.named_layout(applied, product), strategy, 1)
        except ParamError:  # a custom layout of another config: its device count is not known here
            return {}
    boards = mig.boards_from_labels(labels.get("nvidia.com/gpu.product"), int(count), per_gpu)
    return None if boards is None else mig.resources(product, layout, strategy, boards)


def run(params, kube_factory, check_mode=False, clock=None, interval=5.0):
    params = validate.given(params)
    timeout = request(params)
    if params.get("render_to"):
        return run_render(params, check_mode)
    kube = kube_factory()
    nodes = labelled(kube, params, read_nodes(kube, params), timeout, clock, interval)
    product_by_node = products(nodes)
    layouts = _check_profile(params, product_by_node)
    plans = mig_rollout.plan_nodes(nodes, params["profile"], params.get("retrigger_stuck", False))
    if any(p.action == "stuck" for p in plans):
        raise GpuPlatformError(mig_rollout.stuck_message(plans), stuck=[p.name for p in plans if p.action == "stuck"])
    cm_changed, groups = Rollout(kube, params, timeout, clock, interval).run(plans, check_mode)
    enabled = params["profile"] != DISABLED
    nodes_by_name = {n["metadata"]["name"]: n for n in nodes}
    results = []
    for plan in plans:
        entry = plan.as_dict()
        entry["after"] = params["profile"]
        entry["reboot_may_be_needed"] = plan.action != "keep" and mig.reboot_may_be_needed(
            plan.before not in (None, DISABLED), enabled)
        entry["layout"] = layouts[plan.name]
        entry["expected_resources"] = _expected(nodes_by_name[plan.name], product_by_node[plan.name],
                                                layouts[plan.name], params.get("strategy") or "single",
                                                params["profile"])
        results.append(entry)
    changed_nodes = [p.name for p in plans if p.action != "keep"]
    return {
        "changed": bool(changed_nodes or cm_changed), "nodes": results, "batches": groups,
        "reboot_needed": any(r["reboot_may_be_needed"] for r in results),
        "diff": [{"before_header": "node %s" % p.name, "after_header": "node %s" % p.name,
                  "before": "%s: %s\n" % (mig_rollout.CONFIG, p.before),
                  "after": "%s: %s\n" % (mig_rollout.CONFIG, params["profile"])}
                 for p in plans if p.action != "keep"],
    }
