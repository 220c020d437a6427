"""Fixtures shared by the unit tests: the monitoring layer's Grafana dashboard, with default and custom thresholds."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.monitoring import objects as monitoring
from tests.unit.dashboard_checker import CUSTOM


@pytest.fixture(params=[None, CUSTOM], ids=["defaults", "custom"])
def dashboard(request):
    return monitoring.grafana_dashboard(thresholds=request.param)
