"""Every CRD a pinned chart installs (its own crds/ folder, at each release pair's version) is one that
``playbooks/uninstall.yml`` removes when asked (domain/uninstall/crds.py CHART_CRDS), with a kind and an apiVersion
the CRD really serves: a CRD left out is left behind on the cluster (GPU Operator v26.7.0's GPUCluster was, found by
the local cluster's uninstall test), and a wrong version makes the custom-resource deletion ask for a resource the API
server does not have."""
from __future__ import annotations

import glob
import os

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.uninstall import crds
from tests.schema import pinned_charts

# The Network Operator's chart carries Multus's NetworkAttachmentDefinition CRD: that API belongs to the cluster's CNI
# (Multus, the cloud's own network plugins use it too), so the collection never deletes it, and names it here.
NOT_OURS = {"network-attachment-definitions.k8s.cni.cncf.io"}

CASES = [(chart, version) for chart in ("gpu-operator", "network-operator", "kai-scheduler", "dra-driver-nvidia-gpu")
         for version in pinned_charts.pair_versions(chart)]


def _chart_crds(chart, version):
    found = {}
    for path in sorted(glob.glob(os.path.join(pinned_charts.chart_dir(chart, version), "crds", "*.y*ml"))):
        with open(path, encoding="utf-8") as handle:
            for doc in yaml.safe_load_all(handle):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    spec = doc["spec"]
                    served = {"%s/%s" % (spec["group"], v["name"]) for v in spec["versions"] if v.get("served")}
                    found[doc["metadata"]["name"]] = (spec["names"]["kind"], served)
    return found


@pytest.mark.parametrize("chart, version", CASES, ids=["%s-%s" % case for case in CASES])
def test_uninstall_knows_every_crd_the_pinned_chart_installs(chart, version):
    found = _chart_crds(chart, version)
    assert found, "the %s %s chart has no crds/ folder" % (chart, version)
    listed = crds.CHART_CRDS[chart]
    missing = sorted(set(found) - set(listed) - NOT_OURS)
    assert missing == [], "add these CRDs of the %s %s chart to CHART_CRDS[%r]: %s" % (chart, version, chart, missing)
    wrong = {name: (listed[name], found[name]) for name in found if name in listed
             and (listed[name][1] != found[name][0] or listed[name][0] not in found[name][1])}
    assert wrong == {}, wrong
