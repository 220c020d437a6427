# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Network Operator chart values from the network_operator role's choices.

Private to the collection: not a public API. Pure: standard library only.
Value keys follow the values.yaml of the Network Operator charts the release pairs pin (26.1.2, 26.4.0, 26.4.1, read by
the tests from their source archives in shared/upstream/src); the schema tests check every key this produces against
each of them, and render each pair's chart with them (helm template). The chart's own policy is not used: the
NicClusterPolicy is this collection's (nic_cluster_policy), so the chart only installs the operator.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import images
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.helm.helm_pinned_release import deep_merge
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import placement
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

CHART = "network-operator"


def build_values(settings):
    """Chart values from the role's settings (keys without the ``network_operator_`` prefix): ``nfd_enabled`` (the
    Network Operator's own NFD; one NFD per cluster), ``image_mirrors`` and ``extra_values`` (merged last).

    The chart's SR-IOV Network Operator and maintenance operator subcharts stay off (RDMA reaches pods through the
    NicClusterPolicy's device plugins); extra values may turn them on. Raises ParamError naming the role variable.
    """
    nfd = settings.get("nfd_enabled")
    if not isinstance(nfd, bool):
        raise ParamError("network_operator_nfd_enabled", "%r is not true or false" % (nfd,), "set it to true or false")
    extra = settings.get("extra_values") or {}
    if not isinstance(extra, dict):
        raise ParamError("network_operator_extra_values", "must be a dictionary of chart values",
                         "give structured values, e.g. {operator: {resources: {limits: {memory: 256Mi}}}}")
    values = {"nfd": {"enabled": nfd}, "sriovNetworkOperator": {"enabled": False},
              "maintenanceOperator": {"enabled": False}}
    values = deep_merge(values, images.chart_values(CHART, images.check_mirrors(
        settings.get("image_mirrors"), "network_operator_image_mirrors")))
    values = deep_merge(values, placement.chart_values(CHART, settings.get("placement")))
    return deep_merge(values, extra)
