# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The platform summary site.yml ends with, as sentences a person would write.

Private to the collection: not a public API. Pure: the layers' own records in, lines of text out.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import plan as smoke
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

# helm_pinned_release's actions (and the other layers' words) as what happened to a layer
DONE = {"render": "rendered", "apply": "applied", "install": "installed", "upgrade": "upgraded",
        "repair": "repaired", "uninstall": "uninstalled", "none": "already as pinned", "skipped": "skipped"}
ORDER = ("installed", "upgraded", "repaired", "applied", "rendered", "already as pinned", "uninstalled", "skipped")
FORMATS = {"flux": "Flux", "argocd": "Argo CD"}


def words(items):
    """'a', 'a and b', 'a, b and c'."""
    items = [str(i) for i in items]
    if len(items) < 2:
        return "".join(items)
    return "%s and %s" % (", ".join(items[:-1]), items[-1])


def _actions(value):
    """A layer's action (one word, or several for a layer with several releases) as the set of what happened."""
    parts = value if isinstance(value, (list, tuple)) else str(value or "none").split(",")
    return {DONE.get(str(p).strip(), str(p).strip()) for p in parts if str(p).strip()}


def delivery(render_to, render_format, units):
    if not render_to:
        return "The platform was installed directly on the cluster."
    text = "The platform was written as a GitOps bundle to %s for %s" % (render_to, FORMATS.get(render_format, render_format))
    if units:
        text += ", in %d units applied in this order: %s" % (len(units), words(units))
    return text + "."


def layers_sentence(layers):
    """'Rendered: the network_operator, gpu_operator and monitoring layers.' one sentence per outcome."""
    by_outcome = {}
    for index, layer in enumerate(layers or []):
        if not isinstance(layer, dict) or not layer.get("layer"):
            raise ParamError("layers[%d]" % index, "has no layer name", "give each layer's summary a layer")
        for outcome in sorted(_actions(layer.get("action"))):
            by_outcome.setdefault(outcome, []).append(str(layer["layer"]))
    out = []
    for outcome in sorted(by_outcome, key=lambda o: (ORDER.index(o) if o in ORDER else len(ORDER), o)):
        names = by_outcome[outcome]
        out.append("%s: the %s layer%s." % (outcome[0].upper() + outcome[1:], words(names), "s" if len(names) > 1 else ""))
    return " ".join(out) or "No layer was enabled."


def pinned_sentence(pinned):
    if not pinned:
        return "Nothing is pinned."
    return "Pinned: %s." % "; ".join("%s %s" % (key, value) for key, value in pinned.items())


def smoke_sentences(results):
    """What the smoke tests proved: the layers that passed in one sentence, each failure as smoke.summary words it
    (the check, the reason and the evidence), and the layers not tested grouped by why."""
    if not results:
        return ["No smoke test ran."]
    verdict = smoke.summary(results)
    layers = [line.split(": ", 1)[0] for line in verdict["lines"]]
    passed = [layer for layer, line in zip(layers, verdict["lines"]) if line.endswith(": PASS")]
    failed = [line for line in verdict["lines"] if ": FAIL - " in line]
    untested = [layer for layer, line in zip(layers, verdict["lines"]) if ": SKIPPED - " in line]
    skipped = {}
    for item in results:
        layer = str(item["layer"])
        if layer in untested:
            names = skipped.setdefault(str(item["skipped_reason"]).rstrip("."), [])
            if layer not in names:
                names.append(layer)
    out = []
    if passed:
        out.append("Smoke tests passed for %s." % words(passed))
    out.extend("Smoke test failed for %s." % line.replace(": FAIL - ", ": ", 1) for line in failed)
    out.extend("Smoke tests not run for %s: %s." % (words(names), reason) for reason, names in skipped.items())
    return out


# How nvidia-peermem is loaded (gpu_driver_mode's ``peermem``), in words.
PEERMEM_BY = {"host": "the peermem role on the hosts (modules-load.d)", "daemonset": "the nvidia-peermem loader DaemonSet",
              "operator": "the GPU Operator's driver container (driver.rdma.enabled)"}


def gpudirect_sentence(decision):
    """'GPUDirect RDMA: dmabuf (open kernel modules 595, kernel 6.8, Hopper).' from gpu_driver_mode's decision, or ''
    when there is none (a playbook that did not decide) or RDMA is off."""
    if not isinstance(decision, dict) or not isinstance(decision.get("gpudirect"), dict):
        return ""
    gpudirect = decision["gpudirect"]
    path = gpudirect.get("path")
    if path not in ("dmabuf", "peermem") or not decision.get("rdma"):
        return ""
    if path == "dmabuf":
        return "GPUDirect RDMA: dmabuf (%s)." % (gpudirect.get("evidence") or gpudirect.get("reason") or "requested")
    by = PEERMEM_BY.get(decision.get("peermem"), str(decision.get("peermem")))
    return "GPUDirect RDMA: %s, nvidia-peermem loaded by %s (%s)." % (path, by, gpudirect.get("reason") or "requested")


def sentences(render_to, render_format, units, pinned, layers, smoke, driver_decision=None):
    """The summary's lines, each a sentence or two; with gpu_driver_mode's decision, the GPUDirect RDMA path."""
    gpudirect = gpudirect_sentence(driver_decision)
    return [delivery(render_to, render_format, units), layers_sentence(layers), pinned_sentence(pinned)] + \
        ([gpudirect] if gpudirect else []) + smoke_sentences(smoke)
