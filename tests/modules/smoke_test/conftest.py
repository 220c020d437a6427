"""The fake cluster of the smoke_test module tests: the smoke namespace, Volcano's job controller and pods told
what to do."""
import pytest

from local_gpu_cluster.clock import FakeClock
from local_gpu_cluster.controllers import default_controllers
from local_gpu_cluster.crds import DEFAULT_CRD_DIR
from local_gpu_cluster.smoke import SimulatedVolcanoJobs, SmokePods
from local_gpu_cluster.paths import FIXTURE_CRDS_DIR
from tests.modules.smoke_test.helpers import NS


@pytest.fixture
def cluster(fake_api_factory):
    """A fake cluster with the smoke namespace, Volcano's job controller and pods told what to do."""
    def make(outcomes, crd_dirs=(DEFAULT_CRD_DIR, FIXTURE_CRDS_DIR), namespace=True, rdma_nodes=2, gpus=8):
        pods = SmokePods(outcomes)
        api = fake_api_factory(clock=FakeClock(), require_namespaces=True, crd_dirs=list(crd_dirs),
                               controllers=[SimulatedVolcanoJobs(), pods] + default_controllers())
        if namespace:
            api.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        for index in range(rdma_nodes):  # the nodes an nccl-tests run needs (nodes x gpus_per_node GPUs)
            api.store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "rdma-%d" % index},
                              "status": {"allocatable": {"nvidia.com/gpu": str(gpus)}}})
        api.clear_log()
        return api
    return make
