"""Placeholder testinfra checks for molecule/hosts; the host roles' real checks replace them."""


def test_python3_installed(host):
    assert host.package("python3").is_installed


def test_systemd_is_pid1_and_converge_enabled_a_unit(host, host_vars):
    assert host_vars["gpu_platform_test_profile"] in ("host_mode", "predriver")
    assert host.file("/proc/1/comm").content_string.strip() == "systemd"
    assert host.service("systemd-time-wait-sync.service").is_enabled
