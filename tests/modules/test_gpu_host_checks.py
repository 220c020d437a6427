"""The host preflight end to end on file-system trees: gpu_host_facts (checks=true) reads a crafted root, or the real
H100 host's capture laid out as one, and the host_checks filter judges what it read. Each bad state of issue 34 is a
tree; the clean tree passes; every blocking finding of every host is in one message; the skip list acknowledges ids."""
from __future__ import annotations

import pytest

from ansible_collections.gpu_platform.cluster.plugins.filter.gpu_hosts import host_checks
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.host_checks import findings
from tests.modules.harness import run_module
from tests.unit.host_capture import capture_root
from tests.unit.host_trees import (
    BRIDGE_GPU, BRIDGE_UP, BRIDGE_NIC, GPU, NIC, RELEASE, acs_redirecting, clean_tree, default_route_on_a_bond_of_mlx5,
    default_route_on_mlx5, drop_in_higher, gds_on_debian, iommu_translating, no_driver, no_headers_on_disk,
    no_modules_dir, nouveau, nvidia_drm, secure_boot_on, secure_boot_on_unsigned_loaded, write)

# Everything the platform could ask of a host: RDMA with the Network Operator's NIC driver, MIG pools.
EVERYTHING = {"driver_mode": "auto", "cloud_driver": "unknown", "rdma": True, "nic_driver": True, "mig": True,
              "gpu_operator_values": {}}


def read(root, name="gpu-node-01"):
    failed, result = run_module("gpu_host_facts", {"root": str(root), "node_name": name, "checks": True})
    assert not failed, result.get("msg")
    assert result["changed"] is False
    return result["ansible_facts"]["gpu_host_checks"]


def judge(root, **platform):
    return host_checks([read(root)], dict(EVERYTHING, **platform))


def ids(found):
    return sorted(f["id"] for f in found)


def test_the_clean_host_passes(tmp_path):
    checks = read(clean_tree(tmp_path))
    assert checks["containerd"] == {"config": True, "version": 2, "imports": ["/etc/containerd/conf.d/*.toml"],
                                    "dropins": [{"path": "/etc/containerd/conf.d/99-nvidia.toml", "version": 2,
                                                 "imported": True}], "binary_major": None}
    assert checks["acs"] == {"bridges": [BRIDGE_UP, BRIDGE_GPU, BRIDGE_NIC], "readable": True, "redirecting": []}
    assert checks["iommu"]["gpu_domains"] == {GPU: "identity"} and checks["nics"] == [NIC]
    assert checks["kernel"] == {"release": RELEASE, "modules_dir": True, "headers": True, "headers_candidate": None}
    assert checks["secure_boot"] is False and checks["driver"]["unsigned"] is False
    for mode in ("auto", "host"):
        verdict = judge(tmp_path, driver_mode=mode)
        assert verdict["blocking"] == [] and verdict["warnings"] == [] and verdict["message"] == ""
        assert verdict["checked"] == ["gpu-node-01"]


@pytest.mark.parametrize("states, platform, blocking, warnings", [
    ([drop_in_higher], {}, ["containerd-dropin-version"], []),
    ([nvidia_drm], {}, ["mig-blocked-by-nvidia-drm"], []),
    ([nvidia_drm], {"mig": False}, [], []),
    ([nouveau], {"driver_mode": "host"}, ["nouveau-loaded"], []),
    ([default_route_on_mlx5], {}, ["default-route-on-mlx5"], []),
    ([default_route_on_a_bond_of_mlx5], {}, ["default-route-on-mlx5"], []),
    ([default_route_on_mlx5], {"nic_driver": False}, [], []),
    ([iommu_translating], {}, ["iommu-blocks-p2p"], []),
    ([iommu_translating], {"rdma": False, "nic_driver": False}, [], []),
    ([acs_redirecting], {}, ["acs-enabled"], []),
    ([gds_on_debian], {"driver_mode": "operator", "gpu_operator_values": {"gds": {"enabled": True}}},
     ["driver-already-loaded", "gds-unsupported"], []),
    ([no_driver], {"driver_mode": "operator", "gpu_operator_values": {"gdrcopy": {"enabled": True}}}, [], []),
    ([no_driver], {"driver_mode": "operator", "gpu_operator_values": {
        "gds": {"enabled": True}, "driver": {"kernelModuleType": "proprietary"}}}, ["gds-unsupported"], []),
    ([no_modules_dir], {"driver_mode": "operator"}, ["no-kernel-headers"], []),
    ([no_headers_on_disk], {"driver_mode": "operator"}, [], ["no-kernel-headers"]),
    ([no_modules_dir], {"driver_mode": "operator", "gpu_operator_values": {"driver": {"usePrecompiled": True}}}, [],
     []),
    ([no_modules_dir], {"driver_mode": "host"}, ["no-kernel-headers"], []),   # host_driver's DKMS install
    ([no_driver, secure_boot_on], {}, ["secure-boot-unsigned"], []),          # auto: the operator builds one
    ([secure_boot_on_unsigned_loaded], {}, [], ["secure-boot-unsigned"]),
    ([secure_boot_on], {}, [], []),                                            # a signed driver is loaded
])
def test_each_bad_state_read_from_its_tree(tmp_path, states, platform, blocking, warnings):
    root = clean_tree(tmp_path)
    for state in states:
        state(root)
    verdict = judge(root, **platform)
    assert ids(verdict["blocking"]) == blocking, verdict["lines"]
    assert ids(verdict["warnings"]) == warnings, verdict["warning_lines"]
    for text in verdict["lines"]:
        assert text.startswith("gpu-node-01: [") and ". Fix: " in text and "(see " in text
    if blocking:
        assert verdict["message"].count("\n") == len(blocking)


def test_the_findings_words(tmp_path):
    root = clean_tree(tmp_path)
    for state in (drop_in_higher, nvidia_drm, default_route_on_mlx5, acs_redirecting):
        state(root)
    lines = "\n".join(judge(root)["lines"])
    assert "/etc/containerd/conf.d/99-nvidia.toml has version = 3, higher than /etc/containerd/config.toml's " \
           "version = 2" in lines
    assert "nvidia_drm is loaded; nvidia_modeset is in use (by nvidia_drm)" in lines
    assert "the default route is on ens1f0 (ens1f0: mlx5_core)" in lines
    assert "on PCIe port(s) %s between the GPUs and the ConnectX NICs" % BRIDGE_GPU in lines
    assert "Mellanox/network-operator#2176" in lines and "NVIDIA/aicr#1688" in lines


def test_a_drop_in_not_imported_yet_counts(tmp_path):
    """The toolkit adds the import when it writes its drop-in: a conf.d file with a higher version is found too."""
    root = clean_tree(tmp_path)
    write(root / "etc/containerd/config.toml", "version = 2\n")
    drop_in_higher(root)
    checks = read(root)
    assert checks["containerd"]["dropins"] == [{"path": "/etc/containerd/conf.d/99-nvidia.toml", "version": 3,
                                                "imported": False}]
    assert ids(host_checks([checks], EVERYTHING)["blocking"]) == ["containerd-dropin-version"]


def test_every_host_in_one_message_and_the_skip_list(tmp_path):
    first = clean_tree(tmp_path / "a")
    drop_in_higher(first)
    nvidia_drm(first)
    second = clean_tree(tmp_path / "b")
    default_route_on_mlx5(second)
    hosts = [read(second, "gpu-node-02"), read(first, "gpu-node-01")]
    verdict = host_checks(hosts, EVERYTHING)
    assert verdict["message"].splitlines()[0].startswith("3 blocking finding(s) on the GPU hosts")
    assert [line.split(" ", 2)[:2] for line in verdict["message"].splitlines()[1:]] == [
        ["gpu-node-01:", "[containerd-dropin-version]"], ["gpu-node-01:", "[mig-blocked-by-nvidia-drm]"],
        ["gpu-node-02:", "[default-route-on-mlx5]"]]
    skipped = host_checks(hosts, EVERYTHING, ["mig-blocked-by-nvidia-drm", "default-route-on-mlx5"])
    assert ids(skipped["blocking"]) == ["containerd-dropin-version"]
    assert ids(skipped["skipped"]) == ["default-route-on-mlx5", "mig-blocked-by-nvidia-drm"]
    assert host_checks(hosts, EVERYTHING, sorted(findings.CHECKS))["message"] == ""


@pytest.mark.parametrize("skip, words", [
    (["no-headers"], "gpu_platform_host_checks_skip[0]: 'no-headers' is not a host check id. Fix: use one of "),
    ("nouveau-loaded", "gpu_platform_host_checks_skip: 'nouveau-loaded' is not a list"),
])
def test_a_wrong_skip_entry_names_the_variable(skip, words):
    from ansible.errors import AnsibleFilterError  # pylint: disable=import-outside-toplevel
    with pytest.raises(AnsibleFilterError) as error:
        host_checks([], EVERYTHING, skip)
    assert words in str(error.value)


# -- the real H100 host (../shared/real-hosts), laid out as a tree and read by the module ------------------------

def test_the_real_h100_read_by_the_module(tmp_path):
    checks = read(capture_root(tmp_path), "h100")
    assert checks["gpus"] == [{"address": "0000:00:06.0", "device": "0x2330"}]
    assert checks["driver"]["loaded"] and checks["driver"]["version"] == "580.159.04"
    assert checks["driver"]["module_type"] == "open" and checks["driver"]["operator_root"] is False
    assert checks["kernel"] == {"release": "6.18.44-fc-v657-gpu", "modules_dir": False, "headers": False,
                                "headers_candidate": None}
    assert checks["default_routes"] == [{"interface": "eth0", "drivers": {"eth0": "virtio_net"}, "mlx5": False}]
    assert checks["containerd"]["config"] is False and checks["crio"]["config"] is False
    assert checks["iommu"]["groups"] == 0


@pytest.mark.parametrize("mode", ["host", "auto"])
def test_the_real_h100_owning_its_driver_has_no_blocking_finding(tmp_path, mode):
    verdict = host_checks([read(capture_root(tmp_path), "h100")], dict(EVERYTHING, driver_mode=mode, mig=False))
    assert verdict["blocking"] == [], verdict["lines"]


def test_the_real_h100_with_the_operator_asked_to_own_the_driver_is_blocked(tmp_path):
    verdict = host_checks([read(capture_root(tmp_path), "h100")], dict(EVERYTHING, driver_mode="operator", mig=False))
    assert ids(verdict["blocking"]) == ["driver-already-loaded", "no-kernel-headers"]
    assert "h100: [driver-already-loaded] driver 580.159.04 (open kernel module) is loaded, from no package" \
        in verdict["message"]
    assert "no kernel headers for 6.18.44-fc-v657-gpu: none on disk and no /lib/modules/6.18.44-fc-v657-gpu" \
        in verdict["message"]


# -- the optional commands: they read the running system, so they run only with the root / ----------------------

def test_commands_run_only_on_the_real_root(tmp_path, monkeypatch):
    tools = tmp_path / "bin"
    tools.mkdir()
    fake = tools / "containerd"
    fake.write_text("#!/bin/sh\necho 'containerd github.com/containerd/containerd/v2 v2.1.5 abc'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tools))
    assert read(clean_tree(tmp_path / "root"))["containerd"]["binary_major"] is None
    failed, result = run_module("gpu_host_facts", {"root": "/", "checks": True})
    assert not failed, result.get("msg")
    assert result["ansible_facts"]["gpu_host_checks"]["containerd"]["binary_major"] == 2


def test_without_checks_nothing_more_is_read(tmp_path):
    failed, result = run_module("gpu_host_facts", {"root": str(clean_tree(tmp_path))})
    assert not failed and "gpu_host_checks" not in result["ansible_facts"]


def test_a_root_that_is_not_a_folder_is_named(tmp_path):
    failed, result = run_module("gpu_host_facts", {"root": str(tmp_path / "absent"), "checks": True})
    assert failed
    assert result["msg"].startswith("root: '%s' is not a folder on " % (tmp_path / "absent"))
    assert "Fix: set root (gpu_platform_host_root, a host variable" in result["msg"]
