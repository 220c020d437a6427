# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The CRDs the platform's charts install, and which of the platform's objects exist only while a CRD does
(playbooks/uninstall.yml removes them only when asked, ``gpu_platform_uninstall_crds``).

Private to the collection: not a public API. Pure: standard library only. Used by ``domain.uninstall.plan``.
"""

from __future__ import annotations

# The CRDs each chart installs (helm never deletes a chart's CRDs), with their custom resource kinds:
# name -> (apiVersion served by the pinned chart version, kind).
CHART_CRDS = {
    # v26.7.0's crds/ adds the experimental GPUCluster (its upgrade-crd hook applies it too) and the DRA driver's
    # ComputeDomain CRDs; a CRD that the cluster does not serve is skipped (v26.3.3's chart has only the first two).
    "gpu-operator": {
        "clusterpolicies.nvidia.com": ("nvidia.com/v1", "ClusterPolicy"),
        "nvidiadrivers.nvidia.com": ("nvidia.com/v1alpha1", "NVIDIADriver"),
        "gpuclusters.nvidia.com": ("nvidia.com/v1alpha1", "GPUCluster"),
        "computedomains.resource.nvidia.com": ("resource.nvidia.com/v1beta1", "ComputeDomain"),
        "computedomaincliques.resource.nvidia.com": ("resource.nvidia.com/v1beta1", "ComputeDomainClique"),
    },
    # Node Feature Discovery, a subchart of both operators (the platform runs one of the two).
    "node-feature-discovery": {
        "nodefeatures.nfd.k8s-sigs.io": ("nfd.k8s-sigs.io/v1alpha1", "NodeFeature"),
        "nodefeaturerules.nfd.k8s-sigs.io": ("nfd.k8s-sigs.io/v1alpha1", "NodeFeatureRule"),
        "nodefeaturegroups.nfd.k8s-sigs.io": ("nfd.k8s-sigs.io/v1alpha1", "NodeFeatureGroup"),
    },
    # The chart's crds/ (v26.4.0: NicNodePolicy too) and NV-IPAM's, which the operator installs from the policy.
    "network-operator": {
        "nicclusterpolicies.mellanox.com": ("mellanox.com/v1alpha1", "NicClusterPolicy"),
        "nicnodepolicies.mellanox.com": ("mellanox.com/v1alpha1", "NicNodePolicy"),
        "macvlannetworks.mellanox.com": ("mellanox.com/v1alpha1", "MacvlanNetwork"),
        "hostdevicenetworks.mellanox.com": ("mellanox.com/v1alpha1", "HostDeviceNetwork"),
        "ipoibnetworks.mellanox.com": ("mellanox.com/v1alpha1", "IPoIBNetwork"),
        "ippools.nv-ipam.nvidia.com": ("nv-ipam.nvidia.com/v1alpha1", "IPPool"),
        "cidrpools.nv-ipam.nvidia.com": ("nv-ipam.nvidia.com/v1alpha1", "CIDRPool"),
    },
    "volcano": {
        "jobs.batch.volcano.sh": ("batch.volcano.sh/v1alpha1", "Job"),
        "commands.bus.volcano.sh": ("bus.volcano.sh/v1alpha1", "Command"),
        "podgroups.scheduling.volcano.sh": ("scheduling.volcano.sh/v1beta1", "PodGroup"),
        "queues.scheduling.volcano.sh": ("scheduling.volcano.sh/v1beta1", "Queue"),
        "numatopologies.nodeinfo.volcano.sh": ("nodeinfo.volcano.sh/v1alpha1", "Numatopology"),
        "jobflows.flow.volcano.sh": ("flow.volcano.sh/v1alpha1", "JobFlow"),
        "jobtemplates.flow.volcano.sh": ("flow.volcano.sh/v1alpha1", "JobTemplate"),
        "hypernodes.topology.volcano.sh": ("topology.volcano.sh/v1alpha1", "HyperNode"),
    },
    "kai-scheduler": {
        "queues.scheduling.run.ai": ("scheduling.run.ai/v2", "Queue"),
        "podgroups.scheduling.run.ai": ("scheduling.run.ai/v2alpha2", "PodGroup"),
        "bindrequests.scheduling.run.ai": ("scheduling.run.ai/v1alpha2", "BindRequest"),
        "configs.kai.scheduler": ("kai.scheduler/v1", "Config"),
        "schedulingshards.kai.scheduler": ("kai.scheduler/v1", "SchedulingShard"),
        "topologies.kai.scheduler": ("kai.scheduler/v1alpha1", "Topology"),
    },
    "kueue": {
        "clusterqueues.kueue.x-k8s.io": ("kueue.x-k8s.io/v1beta2", "ClusterQueue"),
        "localqueues.kueue.x-k8s.io": ("kueue.x-k8s.io/v1beta2", "LocalQueue"),
        "resourceflavors.kueue.x-k8s.io": ("kueue.x-k8s.io/v1beta2", "ResourceFlavor"),
        "workloads.kueue.x-k8s.io": ("kueue.x-k8s.io/v1beta2", "Workload"),
        "workloadpriorityclasses.kueue.x-k8s.io": ("kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass"),
        "admissionchecks.kueue.x-k8s.io": ("kueue.x-k8s.io/v1beta2", "AdmissionCheck"),
        "cohorts.kueue.x-k8s.io": ("kueue.x-k8s.io/v1beta2", "Cohort"),
        "topologies.kueue.x-k8s.io": ("kueue.x-k8s.io/v1beta2", "Topology"),
        "multikueueclusters.kueue.x-k8s.io": ("kueue.x-k8s.io/v1beta2", "MultiKueueCluster"),
        "multikueueconfigs.kueue.x-k8s.io": ("kueue.x-k8s.io/v1beta2", "MultiKueueConfig"),
        "provisioningrequestconfigs.kueue.x-k8s.io": ("kueue.x-k8s.io/v1beta2", "ProvisioningRequestConfig"),
    },
    "dra-driver-nvidia-gpu": {
        "computedomains.resource.nvidia.com": ("resource.nvidia.com/v1beta1", "ComputeDomain"),
        "computedomaincliques.resource.nvidia.com": ("resource.nvidia.com/v1beta1", "ComputeDomainClique"),
    },
}

# Kinds the platform applies that only exist while some CRD does (the object is skipped when its CRD is not
# served: there is nothing of that kind to delete). The Prometheus Operator's CRDs are not the platform's.
OBJECT_CRDS = {
    ("monitoring.coreos.com", "ServiceMonitor"): "servicemonitors.monitoring.coreos.com",
    ("monitoring.coreos.com", "PrometheusRule"): "prometheusrules.monitoring.coreos.com",
}
for _crds in CHART_CRDS.values():
    for _name, (_api, _kind) in _crds.items():
        OBJECT_CRDS[(_api.split("/")[0], _kind)] = _name


def _crd_entries(charts):
    out = {}
    for chart in charts:
        out.update(CHART_CRDS[chart])
    return out


def _served(obj, served_crds):
    """False when the object's kind comes from a CRD the cluster does not serve (nothing to delete)."""
    if served_crds is None:
        return True
    crd = OBJECT_CRDS.get((obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else "", obj["kind"]))
    return crd is None or crd in served_crds
