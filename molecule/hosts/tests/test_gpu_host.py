"""gpu-host (profile host_mode): what host_driver and peermem left on a clean Debian 12 GPU host."""
import json

# testinfra's podman backend; molecule.yml's verifier runs every file against both hosts otherwise.
testinfra_hosts = ["podman://gpu-host"]

BRANCH = "535"


def test_driver_packages_of_the_pinned_branch(host):
    for name in ("nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "libnvidia-ml1", "nvidia-persistenced"):
        package = host.package(name)
        assert package.is_installed, name
        assert package.version.startswith(BRANCH + "."), (name, package.version)


def test_apt_keeps_the_driver_on_the_branch(host):
    pin = host.file("/etc/apt/preferences.d/gpu-platform-nvidia-driver")
    assert pin.mode == 0o644 and "Pin: version %s.*" % BRANCH in pin.content_string
    policy = host.check_output("apt-cache policy nvidia-kernel-dkms")
    # apt itself reads the pin: the installed branch carries priority 1001.
    assert " 1001" in policy and "Installed: %s." % BRANCH in policy


def test_non_free_sources(host):
    sources = host.file("/etc/apt/sources.list.d/gpu-platform-debian-non-free.sources").content_string
    assert "Components: contrib non-free non-free-firmware" in sources
    assert "Suites: bookworm bookworm-updates" in sources and "Suites: bookworm-security" in sources


def test_nouveau_is_blacklisted(host):
    config = host.check_output("modprobe --showconfig")
    assert "blacklist nouveau" in config and "options nouveau modeset=0" in config
    assert host.file("/etc/modprobe.d/gpu-platform-blacklist-nouveau.conf").mode == 0o644


def test_nvidia_peermem_loads_at_boot_under_its_debian_name(host):
    assert host.file("/etc/modules-load.d/gpu-platform-nvidia-peermem.conf").content_string.splitlines()[-1] \
        == "nvidia-current-peermem"
    # modprobe parses the alias, so `modprobe nvidia-peermem` finds Debian's module.
    # (modprobe writes module names with underscores.)
    assert "alias nvidia_peermem nvidia_current_peermem" in host.check_output("modprobe --showconfig")


def test_persistence_daemon_is_enabled(host):
    service = host.service("nvidia-persistenced")
    assert service.is_enabled
    assert host.file("/lib/systemd/system/nvidia-persistenced.service").exists


def test_the_record_for_gpu_host_facts(host):
    record = json.loads(host.file("/etc/ansible/facts.d/gpu_platform_driver.fact").content_string)
    assert record == {"branch": BRANCH, "source": "distribution", "kernel_modules": "proprietary",
                      "managed_by": "gpu_platform.cluster.host_driver", "peermem_module": "nvidia-current-peermem"}
