"""The host preflight on real hosts: each bad state of issue 34 prepared on a podman host, and site.yml (direct mode,
on the local control plane's real API server) stops before any write to the cluster (its audit log) or the hosts,
naming each host, its check's id and the fix; the clean host passes and the run goes on to the end (on the fake GPU
cluster, whose simulated operators converge it).

Each host is a container of molecule/hosts' Debian bookworm image (scripts/build_host_image.sh), reached with
ansible's podman connection (``containers.podman.podman``). A container's /proc and /sys are this machine's, so each
host's state is a file tree (tests/unit/host_trees.py, the module tests' own builders) copied to /srv/host-root in the
container, which ``gpu_platform_host_root`` makes the root that gpu_host_facts reads. Whether anything was written on a
host is a listing of its whole file system (path, type, mode, size, mtime, link target), taken before and after;
only ansible's own remote temporary folder is left out. Skipped, naming what is missing, without podman or root.
"""
from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from local_gpu_cluster.audit import describe
from local_gpu_cluster.testing import RUN_USER
from tests.playbooks.test_site_direct import NETWORK
from tests.remote import ssh_host
from tests.unit.host_trees import (acs_redirecting, clean_tree, default_route_on_mlx5, drop_in_higher, gds_on_debian,
                                   iommu_translating, no_driver, no_modules_dir, nouveau, nvidia_drm,
                                   operator_driver_running, secure_boot_on)

pytestmark = pytest.mark.slow

HOST_ROOT = "/srv/host-root"
REMOTE_TMP = "/tmp/gpu-platform-ansible"
# One run's settings, under which every state below blocks on its own: the GPU Operator owns the driver (so a host
# driver already loaded is refused), the Network Operator's DOCA driver and GPUDirect RDMA (the default route, the
# IOMMU, ACS), a MIG pool (nvidia_drm), GDS (on a non-Ubuntu OS).
PLATFORM = dict(NETWORK, gpu_platform_driver_mode="operator",
                gpu_platform_node_pools=[{"name": "mig", "sharing": "mig", "mig_profile": "all-1g.10gb",
                                          "node_selector": {"nodepool": "training"}}],
                gpu_operator_extra_values={"gds": {"enabled": True}})
# host: (its states on the clean tree, the one check that stops it). The base is a host the GPU Operator will give a
# driver (no host driver, headers for its kernel), except where the state is about a driver already there.
BAD = {
    "containerd-dropin": ((no_driver, drop_in_higher), "containerd-dropin-version"),
    "nvidia-drm": ((operator_driver_running, nvidia_drm), "mig-blocked-by-nvidia-drm"),
    "nouveau": ((nouveau,), "nouveau-loaded"),
    "secure-boot": ((no_driver, secure_boot_on), "secure-boot-unsigned"),
    "host-driver": ((), "driver-already-loaded"),
    "no-headers": ((no_modules_dir,), "no-kernel-headers"),
    "mlx5-route": ((no_driver, default_route_on_mlx5), "default-route-on-mlx5"),
    "iommu-dma": ((no_driver, iommu_translating), "iommu-blocks-p2p"),
    "acs-on": ((no_driver, acs_redirecting), "acs-enabled"),
    "gds-debian": ((no_driver, gds_on_debian), "gds-unsupported"),
}
# The clean host is named as a node of the fake cluster, so the driver decision after the preflight finds it there.
CLEAN = "gpu-node-1"
# Every file, folder and link but /proc, /sys and /dev, and ansible's own temporary folder; /tmp without its mtime,
# since each module runs from a folder of its own in /tmp that it removes as it ends (AnsiballZ).
LISTING = ("find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path %s \\) -prune -o "
           "-path /tmp -printf '%%p %%y %%m\\n' -o -printf '%%p %%y %%m %%s %%T@ %%l\\n' | LC_ALL=C sort" % REMOTE_TMP)


def missing():
    if shutil.which("podman") is None:
        return "podman is not installed (make system-deps installs it)"
    if os.geteuid() != 0:
        return "the podman hosts need root (rootful podman, as make test runs in CI)"
    return None


class PodmanHosts:
    """Containers of the host image, one per host, each with its tree at HOST_ROOT."""

    def __init__(self, folder):
        self.folder = folder
        self.prefix = "gpu-preflight-%s-" % uuid.uuid4().hex[:6]
        self.names = []

    def start(self, trees):
        """``trees``: {host: states}. Starts every container at once; returns their inventory entries."""
        image = ssh_host.base_image()
        with ThreadPoolExecutor(max_workers=len(trees)) as pool:
            list(pool.map(lambda item: self._one(image, *item), trees.items()))
        return {host: {"ansible_connection": "containers.podman.podman", "ansible_host": self.prefix + host,
                       "ansible_python_interpreter": "/usr/bin/python3", "ansible_remote_tmp": REMOTE_TMP,
                       "gpu_platform_host_root": HOST_ROOT} for host in trees}

    def _one(self, image, host, states):
        tree = clean_tree(self.folder / host)
        for state in states:
            state(tree)
        name = self.prefix + host
        self.names.append(name)
        ssh_host.podman("run", "-d", "--name", name, "--hostname", host, "--network", "none", image,
                        "sleep", "infinity")
        ssh_host.podman("cp", str(tree), "%s:%s" % (name, HOST_ROOT))
        # ansible's remote temporary folder, made here so that the listings leave out only what is inside it
        ssh_host.podman("exec", name, "mkdir", "-p", REMOTE_TMP)

    def listings(self, hosts):
        with ThreadPoolExecutor(max_workers=len(hosts)) as pool:
            return dict(zip(hosts, pool.map(
                lambda host: ssh_host.podman("exec", self.prefix + host, "sh", "-c", LISTING).stdout.splitlines(),
                hosts)))

    def remove(self):
        if self.names:
            ssh_host.podman("rm", "-f", "-t", "0", *self.names, check=False)


@pytest.fixture(name="podman_hosts")
def podman_hosts_fixture(tmp_path):
    why = missing()
    if why:
        pytest.skip(why)
    hosts = PodmanHosts(tmp_path / "trees")
    try:
        yield hosts
    finally:
        hosts.remove()


def with_hosts(runner, hosts):
    """The runner's inventory with ``hosts`` as gpu_hosts, reached by podman."""
    inventory = yaml.safe_load((runner.dir / "hosts.yml").read_text())
    inventory["all"]["children"]["gpu_hosts"] = {"hosts": hosts}
    (runner.dir / "hosts.yml").write_text(yaml.safe_dump(inventory))
    runner.env.update(CONTAINERS_CONF=str(ssh_host.CONTAINERS_CONF), ANSIBLE_FORKS=str(len(hosts) + 1))


def host_results(result, host):
    return [(task["task"]["name"], task["hosts"][host]) for play in result.data["plays"] for task in play["tasks"]
            if host in task["hosts"]]


def changed_on_hosts(before, after):
    """The listing lines that differ, by host (of those listed ``after``)."""
    return {host: sorted(set(before[host]) ^ set(after[host])) for host in after if before[host] != after[host]}


def test_each_bad_host_stops_site_yml_before_any_write_and_the_clean_host_passes(
        direct_site, podman_hosts, local_cluster):
    """The bad hosts' run goes to the real API server of the local control plane, with a credential of its own: its
    audit log is the judge of "before any write". The clean host's run, which goes on to the end, installs on the
    in-process fake cluster (its simulated operators), as the other direct-mode playbook tests do."""
    started = time.monotonic()
    runner, api, repo = direct_site()
    inventory = podman_hosts.start({**{host: spec[0] for host, spec in BAD.items()}, CLEAN: (no_driver,)})
    ready = time.monotonic()
    bad = {host: inventory[host] for host in BAD}
    with_hosts(runner, bad)
    before = podman_hosts.listings(list(inventory))
    fake_kubeconfig = runner.group_vars["gpu_platform_kubeconfig"]
    mark = local_cluster.audit.mark()

    result = runner.run(**PLATFORM, gpu_platform_kubeconfig=local_cluster.kubeconfig_for(RUN_USER))
    bad_run = time.monotonic()
    assert result.rc != 0 and result.failed == 1, result.debug_text()
    for host in BAD:
        read = dict(host_results(result, host))
        facts = read["Read each GPU host's PCI devices, modules and driver packages"]
        assert facts.get("failed") is not True and facts["changed"] is False, facts
        assert facts["ansible_facts"]["gpu_host_checks"]["node_name"] == host
    messages = result.failure_messages()
    assert len(messages) == 1, messages
    lines = messages[0].splitlines()
    assert lines[0].startswith("%d blocking finding(s) on the GPU hosts, before anything was written" % len(BAD))
    assert sorted(line.split(" ", 2)[:2] for line in lines[1:]) == sorted(
        ["%s:" % host, "[%s]" % spec[1]] for host, spec in BAD.items()), lines
    for line in lines[1:]:
        assert ". Fix: " in line and "(see " in line, line
    assert local_cluster.audit.requests(mark, user=RUN_USER), "the run never reached the API server"
    written = local_cluster.audit.writes(mark, user=RUN_USER)
    assert written == [], describe(written)
    assert changed_on_hosts(before, podman_hosts.listings(list(bad))) == {}

    # The clean host alone: the preflight passes, and the run goes on to the end.
    with_hosts(runner, {CLEAN: inventory[CLEAN]})
    result = runner.run(gpu_platform_kubeconfig=fake_kubeconfig)
    assert result.rc == 0, result.failure_details() or result.debug_text()
    said = result.result("What the host preflight checked")["msg"]
    assert said == ["Host preflight: %s checked; 0 blocking, 0 warning(s), skipped: none" % CLEAN], said
    assert result.result("The decision")["msg"].startswith("operator owns the NVIDIA driver")
    assert result.changed > 0 and api.writes(), "the run did not go on past the preflight"
    assert changed_on_hosts(before, podman_hosts.listings([CLEAN])) == {}
    print(json.dumps({"containers_ready_s": round(ready - started, 1), "bad_run_s": round(bad_run - ready, 1),
                      "clean_run_s": round(time.monotonic() - bad_run, 1)}))


@pytest.mark.parametrize("which, uid, reason", [
    (None, 0, "podman is not installed (make system-deps installs it)"),
    ("/usr/bin/podman", 1000, "the podman hosts need root (rootful podman, as make test runs in CI)"),
    ("/usr/bin/podman", 0, None),
])
def test_what_is_missing_is_named(monkeypatch, which, uid, reason):
    monkeypatch.setattr(shutil, "which", lambda tool: which)
    monkeypatch.setattr(os, "geteuid", lambda: uid)
    assert missing() == reason
