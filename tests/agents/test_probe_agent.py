"""The probe agent plays the host preflight's probe pod faithfully: for a node's declared host, it prints what the
real script prints when it runs (sh) over the same host laid out as files, so the collection reads the same facts."""
from __future__ import annotations

import os
import subprocess

from ansible_collections.gpu_platform.cluster.plugins.filter.gpu_hosts import host_checks
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.host_checks import probe
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows.host_probe import checks_from_log
from local_gpu_cluster.fleet import hardware
from local_gpu_cluster.node_agent_probe import host_tree, run_script

DROP_IN = {"files": {"/etc/containerd/config.toml": 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n',
                     "/etc/containerd/conf.d/99-nvidia.toml": "version = 3\n[plugins]\n"}}
DRM = {"modules": ["nvidia_drm 122880 0 - Live 0x0 (O)", "nvidia_modeset 1355776 1 nvidia_drm, Live 0x0 (O)"]}
HOST_DRIVER = {"version": "580.126.20", "installed_by": "host", "open": True}
PLATFORM = {"driver_mode": "auto", "cloud_driver": "unknown", "rdma": True, "nic_driver": True, "mig": True,
            "gpu_operator_values": {}}


def lay_out(tree, root):
    for path, (kind, value) in tree.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if kind == "text":
            target.write_text(value)
        elif kind == "hex":
            target.write_bytes(value)
        elif kind == "dir":
            target.mkdir(parents=True, exist_ok=True)
        elif kind == "link":
            os.symlink(value, target)
        elif kind == "real":  # a device's link, made before its attributes (host_tree's order) go through it
            real = root / value.lstrip("/")
            real.mkdir(parents=True, exist_ok=True)
            os.symlink(real, target)
    return root


def real_script(root):
    proc = subprocess.run(["sh", "-c", probe.script()], env=dict(os.environ, GPU_PLATFORM_PROBE_ROOT=str(root)),
                          capture_output=True, text=True, timeout=60, check=True)
    return proc.stdout


def test_the_agent_prints_what_the_script_prints_over_the_same_host(tmp_path):
    for index, host in enumerate((None, DROP_IN, DRM, {"absent": ["/lib/modules/6.8.0-60-generic/build"]})):
        declared = hardware("h100", nic="cx7-ib", nics=2, kernel="6.8.0-60-generic", driver=HOST_DRIVER, host=host)
        root = lay_out(host_tree(declared), tmp_path / str(index))
        assert probe.parse(run_script(probe.script(), declared)) == probe.parse(real_script(root)), host


def test_a_declared_blocking_state_is_a_blocking_finding():
    declared = hardware("a100", kernel="6.8.0-60-generic", driver=HOST_DRIVER, host=DROP_IN)
    verdict = host_checks([checks_from_log(run_script(probe.script(), declared), "gpu-node-1")], PLATFORM)
    assert [f["id"] for f in verdict["blocking"]] == ["containerd-dropin-version"]
    clean = hardware("a100", kernel="6.8.0-60-generic", driver=HOST_DRIVER)
    assert host_checks([checks_from_log(run_script(probe.script(), clean), "gpu-node-1")], PLATFORM)["blocking"] == []


def test_a_file_the_node_does_not_declare_prints_as_absent():
    declared = hardware("a100", kernel="6.8.0-60-generic")
    log = run_script(probe.script(), declared)
    assert "%s absent /proc/driver/nvidia/version" % probe.MARKER in log
    assert "%s absent /etc/crio/crio.conf" % probe.MARKER in log
    assert checks_from_log(log, "n")["driver"]["loaded"] is False
