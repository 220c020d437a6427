"""operator_processes: which pod is whose process, and the file system each process gets."""

from pathlib import Path

from .operator_processes import SA_DIR, command_line, process_of


def pod(labels):
    return {"metadata": {"name": "p", "namespace": "n", "labels": labels}}


def test_the_network_operator_is_the_charts_operator_pod_not_its_crd_upgrade_hook():
    operator = {"app.kubernetes.io/name": "network-operator", "app.kubernetes.io/instance": "network-operator",
                "control-plane": "network-operator-controller", "nvidia.com/ofed-driver-upgrade-drain.skip": "true"}
    hook = {"app.kubernetes.io/name": "network-operator", "app.kubernetes.io/instance": "network-operator",
            "app.kubernetes.io/component": "network-operator"}
    assert process_of(pod(operator)).name == "network-operator"
    assert process_of(pod(hook)) is None
    assert process_of(pod({"app": "gpu-operator", "app.kubernetes.io/component": "gpu-operator"})).name \
        == "gpu-operator"


def test_an_image_root_process_runs_chrooted_in_its_image_from_its_working_directory(tmp_path):
    spec = process_of(pod({"app.kubernetes.io/name": "network-operator",
                           "nvidia.com/ofed-driver-upgrade-drain.skip": "true"}))
    build = tmp_path / "build"
    for folder in ("manifests/state-multus-cni", "webhook-schemas", "crds"):
        (build / "image" / folder).mkdir(parents=True)
    (build / "network-operator").write_text("")
    account = tmp_path / "pod" / "serviceaccount"
    argv = command_line(spec, build, {"args": ["--leader-elect"]}, {"metrics": 1, "probe": 2}, account)
    assert argv[:4] == ["unshare", "--mount", "--propagation", "private"]
    script = argv[-1]
    root = str(account.parent / "root")
    assert "mount -t tmpfs gpu-platform-pod %s" % root in script
    for entry in ("manifests", "webhook-schemas", "crds"):
        assert "mount --bind %s %s/%s" % (build / "image" / entry, root, entry) in script
    assert "mount --bind %s %s%s" % (account, root, SA_DIR) in script
    assert "mount --bind %s %s/network-operator" % (build / "network-operator", root) in script
    for host in ("/dev", "/proc", "/sys"):
        assert "mount --rbind %s %s%s" % (host, root, host) in script
    assert script.endswith("exec unshare --root=%s --wd=/ /network-operator --leader-elect "
                           "--metrics-bind-address=127.0.0.1:1 --health-probe-bind-address=127.0.0.1:2" % root)
    assert not Path(root).exists()  # made in the process's mount namespace, when it starts
