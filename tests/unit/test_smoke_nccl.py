"""The NCCL smoke test's new rules: it runs whenever RDMA is on, under every scheduler and in every RDMA mode,
claims the network layer's NICs, takes its threshold and GPU count from the node type, and passes only on
GPUDirect RDMA over InfiniBand."""
import os
import re
import subprocess

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import node_types
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import (
    plan as smoke, nccl as smoke_nccl, nccl_check as smoke_nccl_check)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from local_gpu_cluster.nccl_logs import NCCL_IB_LOG
from tests.unit.smoke_helpers import NCCL_IMAGE, NS, settings

SMOKE_DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs",
                         "smoke_tests.md")
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret-material\n-----END OPENSSH PRIVATE KEY-----\n"
PUB = "ssh-ed25519 AAAAC3Nza gpu-platform-smoke\n"


def nccl_item(**over):
    (item,) = smoke.plan(settings(layers=["network_operator"], **over))
    return item


@pytest.mark.parametrize("mode", ["sriov", "rdma_shared", "ipoib"])
@pytest.mark.parametrize("scheduler", ["volcano", "kai", "none"])
def test_rdma_on_always_runs_the_nccl_test(mode, scheduler):
    item = nccl_item(network_mode=mode, scheduler=scheduler, node_type="nd-h100-v5", min_busbw="")
    assert item["skipped_reason"] is None
    params = item["params"]
    assert params["scheduler"] == scheduler
    assert params["network"] == "default/rdma-net", "every mode, ipoib too, attaches the secondary network"
    assert params["min_busbw_gbps"] == node_types.NODE_TYPES["nd-h100-v5"]["min_busbw_gbps"] == 280.0
    expected = {"sriov": {"rdma/ib": 8}, "rdma_shared": {"rdma/shared_ib": 1}, "ipoib": {"rdma/shared_ib": 1}}
    assert params["rdma_resource"] == expected[mode]
    assert ("queue" in params) == (scheduler != "none")


def test_skip_is_only_for_rdma_off_and_says_so():
    item = nccl_item(network_mode="none", nccl_image="")
    assert item["skipped_reason"].startswith("RDMA is off (gpu_platform_network_mode is none)")


def test_a_missing_image_with_rdma_on_is_an_error_naming_the_variable():
    with pytest.raises(ParamError) as caught:
        nccl_item(nccl_image="", network_mode="ipoib")
    assert caught.value.field == "smoke_tests_nccl_image"
    assert "RDMA is on (gpu_platform_network_mode: ipoib)" in caught.value.msg and "Fix: " in caught.value.msg


def test_no_threshold_and_no_node_type_names_both_variables():
    with pytest.raises(ParamError) as caught:
        nccl_item(min_busbw="", node_type="")
    assert caught.value.field == "smoke_tests_nccl_min_busbw_gbps"
    assert "gpu_platform_rdma_node_type" in caught.value.msg


@pytest.mark.parametrize("node_type, threshold", [("nd-a100-v4", 140.0), ("Standard_ND96asr_v4", 140.0),
                                                  ("nd-h100-v5", 280.0), ("ndm-a100-v4", 140.0)])
def test_node_type_gives_threshold_and_gpus(node_type, threshold):
    params = nccl_item(node_type=node_type, min_busbw="", gpus_per_node="")["params"]
    assert params["min_busbw_gbps"] == threshold and params["gpus_per_node"] == 8


def test_explicit_threshold_and_gpus_win_over_the_node_type():
    params = nccl_item(node_type="nd-h100-v5", min_busbw="300", gpus_per_node="4")["params"]
    assert params["min_busbw_gbps"] == 300.0 and params["gpus_per_node"] == 4
    assert nccl_item(node_type="", gpus_per_node="")["params"]["gpus_per_node"] == 8


def documented_thresholds():
    """docs/smoke_tests.md's derivation (the fraction of the line rate) and its table: {node type: (VM size, NICs,
    Gb/s per NIC, line rate GB/s, threshold GB/s)}."""
    with open(SMOKE_DOC, encoding="utf-8") as handle:
        text = handle.read()
    fraction = re.search(r"every threshold is derived the same way: ([\d.]+) x the node's\s+InfiniBand line rate", text)
    assert fraction, "docs/smoke_tests.md no longer states the fraction of the line rate"
    rows = re.findall(r"^\| `([\w-]+)` \((\w+)\) \| (\d+) x (\d+) Gb/s \w+ \| (\d+) GB/s \| (\d+) GB/s \|", text, re.M)
    return float(fraction.group(1)), {name: (size, int(nics), int(gbps), int(rate), int(threshold))
                                      for name, size, nics, gbps, rate, threshold in rows}


def test_thresholds_are_the_documented_ones():
    """The thresholds docs/smoke_tests.md states (0.7 x the line rate, and its table's numbers), not the module's own
    BUSBW_FRACTION re-applied: a changed fraction or NIC count without the doc fails here."""
    fraction, table = documented_thresholds()
    assert fraction == 0.7 and table["nd-h100-v5"][4] == 280 and table["nd-a100-v4"][4] == 140
    assert sorted(table) == sorted(node_types.NODE_TYPES), "every node type in the doc's table, and only those"
    for name, (size, nics, gbps, rate, threshold) in table.items():
        facts = node_types.NODE_TYPES[name]
        assert rate == nics * gbps // 8 and threshold == int(fraction * rate), "the doc's own arithmetic: %s" % name
        assert (facts["vm_sizes"][0], facts["nics"], facts["nic_gbps"], facts["min_busbw_gbps"]) == \
            (size, nics, gbps, threshold), name
        assert nccl_item(node_type=name, min_busbw="")["params"]["min_busbw_gbps"] == threshold
        assert facts["min_busbw_source"].startswith("derived: ") and "learn.microsoft.com" in facts["min_busbw_source"]
    assert "aks-rdma-infiniband" in node_types.NODE_TYPES["nd-a100-v4"]["min_busbw_source"]


def test_nics_per_pod_and_resource_name_come_from_the_network_layer():
    params = nccl_item(network_mode="sriov", nics_per_pod="4", resource_name="ib_vf")["params"]
    assert params["rdma_resource"] == {"rdma/ib_vf": 4}
    assert nccl_item(rdma_resource={"rdma/hca": 2})["params"]["rdma_resource"] == {"rdma/hca": 2}


def test_kai_run_is_bare_pods_in_one_podgroup_with_a_headless_service():
    objs = smoke_nccl.nccl_job(NS, NCCL_IMAGE, nodes=2, gpus_per_node=8, network="default/rdma-net", queue="vision",
                               scheduler="kai")
    assert [o["kind"] for o in objs] == ["Service", "PodGroup", "Pod", "Pod", "Pod"]
    service, group, launcher, w0, w1 = objs
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["selector"].items() <= w0["metadata"]["labels"].items()
    assert launcher["metadata"]["labels"].items() >= {"gpu-platform.io/smoke-task": "launcher"}.items()
    assert not service["spec"]["selector"].items() <= launcher["metadata"]["labels"].items()
    assert group["spec"] == {"minMember": 3, "queue": "vision"}
    for pod in (launcher, w0, w1):
        assert pod["spec"]["schedulerName"] == "kai-scheduler"
        assert pod["metadata"]["labels"]["kai.scheduler/queue"] == "vision"
        assert pod["metadata"]["annotations"]["pod-group-name"] == group["metadata"]["name"]
        (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "ssh"]
        assert volume["secret"] == {"secretName": smoke_nccl.secret_name(), "defaultMode": 0o400}
        mount = [m for m in pod["spec"]["containers"][0]["volumeMounts"] if m["name"] == "ssh"][0]
        assert mount == {"name": "ssh", "mountPath": "/root/.ssh", "readOnly": True}
    assert launcher["metadata"]["name"] == smoke_nccl.launcher_pod_name()
    assert (w0["spec"]["hostname"], w0["spec"]["subdomain"]) == (w0["metadata"]["name"], service["metadata"]["name"])
    assert w0["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "default/rdma-net"
    assert w0["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8", "rdma/shared_ib": "1"}
    env = {e["name"]: e.get("value") for e in launcher["spec"]["containers"][0]["env"]}
    assert env[smoke_nccl.WORKERS_ENV] == " ".join("%s.%s" % (w["metadata"]["name"], service["metadata"]["name"])
                                                   for w in (w0, w1))
    assert smoke_nccl.needs_ssh_secret(objs)


def test_plain_pods_have_no_scheduler_name_queue_or_podgroup():
    objs = smoke_nccl.nccl_job(NS, NCCL_IMAGE, scheduler="none")
    assert [o["kind"] for o in objs] == ["Service", "Pod", "Pod", "Pod"]
    for pod in objs[1:]:
        assert "schedulerName" not in pod["spec"] and "kai.scheduler/queue" not in pod["metadata"]["labels"]


def test_the_launcher_script_is_shared_between_schedulers():
    (job,) = smoke_nccl.nccl_job(NS, NCCL_IMAGE, scheduler="volcano")
    volcano = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["command"][-1]
    bare = smoke_nccl.nccl_job(NS, NCCL_IMAGE, scheduler="none")[1]["spec"]["containers"][0]["command"][-1]
    assert volcano.replace("$(cat /etc/volcano/worker.host)", "${GPU_PLATFORM_SMOKE_WORKERS}") == bare
    assert not smoke_nccl.needs_ssh_secret([job])
    for script in (volcano, bare):
        done = subprocess.run(["sh", "-n", "-c", script], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr


def test_ssh_secret_carries_the_key_pair_authorized_keys_and_config():
    secret = smoke_nccl.nccl_ssh_secret(NS, KEY, PUB)
    assert secret["metadata"]["name"] == smoke_nccl.secret_name()
    data = secret["stringData"]
    assert data["id_ed25519"] == KEY and data["authorized_keys"] == PUB == data["id_ed25519.pub"]
    assert "StrictHostKeyChecking no" in data["config"]
    with pytest.raises(ParamError):
        smoke_nccl.nccl_ssh_secret(NS, "", PUB)


def test_unknown_scheduler_is_refused():
    with pytest.raises(ParamError) as caught:
        smoke_nccl.nccl_job(NS, NCCL_IMAGE, scheduler="slurm")
    assert caught.value.field == "smoke_tests_scheduler"


def test_gdrdma_over_sockets_is_not_gpudirect_over_infiniband():
    log = NCCL_IB_LOG.replace("via NET/IB/", "via NET/Socket/")
    result = smoke_nccl_check.check_nccl(log, 100)
    assert result["passed"] is False
    assert "over InfiniBand" in result["reason"] and "NET/Socket/0/GDRDMA" in result["reason"]
    bracket = "w0:41:88 [0] NCCL INFO Channel 00 : 0[0] -> 8[0] via NET/Socket/0 [GDRDMA]\n"
    stripped = "\n".join(line for line in NCCL_IB_LOG.splitlines() if "via NET/" not in line)
    assert smoke_nccl_check.check_nccl(stripped + "\n" + bracket, 100)["passed"] is False
    assert smoke_nccl_check.check_nccl(NCCL_IB_LOG, 100)["passed"] is True
