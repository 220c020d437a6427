"""predriver-host (profile predriver): a driver installed by hand; gpu_driver_mode refused operator mode
in converge, and that refusal came before any change: nothing of this collection is on the host."""

testinfra_hosts = ["podman://predriver-host"]


def test_the_refused_host_was_left_untouched(host):
    assert host.package("nvidia-kernel-dkms").is_installed  # its own driver, installed by hand
    for path in ("/etc/apt/preferences.d/gpu-platform-nvidia-driver",
                 "/etc/apt/sources.list.d/gpu-platform-debian-non-free.sources",
                 "/etc/modprobe.d/gpu-platform-blacklist-nouveau.conf",
                 "/etc/modules-load.d/gpu-platform-nvidia-peermem.conf",
                 "/etc/ansible/facts.d/gpu_platform_driver.fact"):
        assert not host.file(path).exists, path
