"""operator_processes: which pod is whose process, and the file system each process gets."""

import base64
import os
from pathlib import Path

import pytest
import yaml

from local_gpu_cluster.fleet import write_kwok_config
from local_gpu_cluster.operator_processes import (SA_DIR, TOOLS, VolumeNotReady, build_for, command_line,
                                                  configure_process, expand, expanded, held_jobs, pod_volumes,
                                                  process_of, readiness_url)


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


class Objects:
    """The two reads pod_volumes makes of the API server."""

    def __init__(self, *objects):
        self.objects = {(o["kind"], o["metadata"]["name"]): o for o in objects}

    def get(self, api_version, kind, name, namespace=None):
        assert api_version == "v1" and namespace == "kueue-system"
        return self.objects.get((kind, name))


KUEUE_POD = {
    "metadata": {"name": "kueue-controller-manager-1", "namespace": "kueue-system",
                 "labels": {"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"}},
    "spec": {"volumes": [{"name": "cert", "secret": {"secretName": "kueue-webhook-server-cert"}},
                         {"name": "manager-config", "configMap": {"name": "kueue-manager-config"}},
                         {"name": "visibility", "emptyDir": {}},
                         {"name": "host", "hostPath": {"path": "/var/run"}}]}}
KUEUE_CONTAINER = {"name": "manager", "args": ["--config=/controller_manager_config.yaml", "--zap-log-level=2"],
                   "volumeMounts": [{"name": "cert", "mountPath": "/tmp/k8s-webhook-server/serving-certs"},
                                    {"name": "visibility", "mountPath": "/visibility"},
                                    {"name": "host", "mountPath": "/host"},
                                    {"name": "manager-config", "mountPath": "/controller_manager_config.yaml",
                                     "subPath": "controller_manager_config.yaml"}]}
CONFIG = ("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nhealth:\n  healthProbeBindAddress: :8081\n"
          "metrics:\n  bindAddress: :8443\nwebhook:\n  port: 9443\nintegrations:\n  frameworks: [batch/job]\n")


def test_a_pods_volumes_are_where_its_container_mounts_them_and_kueue_gets_loopback_ports(tmp_path):
    secret = {"kind": "Secret", "metadata": {"name": "kueue-webhook-server-cert"},
              "data": {"tls.crt": base64.b64encode(b"CERT").decode()}}
    config_map = {"kind": "ConfigMap", "metadata": {"name": "kueue-manager-config"},
                  "data": {"controller_manager_config.yaml": CONFIG}}
    mounts, synced = pod_volumes(Objects(secret, config_map), KUEUE_POD, KUEUE_CONTAINER, tmp_path)
    where = {target: (Path(source), folder) for source, target, folder in mounts}
    assert set(where) == {"/tmp/k8s-webhook-server/serving-certs", "/visibility", "/controller_manager_config.yaml"}
    assert (where["/tmp/k8s-webhook-server/serving-certs"][0] / "tls.crt").read_bytes() == b"CERT"
    assert where["/visibility"][1] is True and where["/controller_manager_config.yaml"][1] is False
    # the Secret is kept in step (the cert rotator fills it after the pod starts); the subPath file is not
    assert [entry[0]["name"] for entry in synced] == ["cert"]

    spec = process_of(KUEUE_POD)
    ports = {"probe": 101, "metrics": 102, "webhook": 103, "visibility": 104}
    configure_process(spec, KUEUE_CONTAINER, mounts, ports)
    config = yaml.safe_load(where["/controller_manager_config.yaml"][0].read_text())
    assert config["health"]["healthProbeBindAddress"] == "127.0.0.1:101"
    assert config["metrics"]["bindAddress"] == "127.0.0.1:102"
    assert config["webhook"] == {"port": 103, "host": "127.0.0.1"}
    assert config["visibilityServer"] == {"bindAddress": "127.0.0.1", "bindPort": 104}
    assert config["integrations"] == {"frameworks": ["batch/job"]}  # the rest is the chart's
    assert config_map["data"]["controller_manager_config.yaml"] == CONFIG  # the ConfigMap itself is untouched

    argv = command_line(spec, tmp_path / "build", KUEUE_CONTAINER, ports, tmp_path / "serviceaccount", mounts)
    script = argv[-1]
    assert "--config=/controller_manager_config.yaml" in script and "--metrics-bind-address" not in script
    assert "mount --bind %s %s/visibility" % (where["/visibility"][0], tmp_path / "root") in script


def test_a_missing_secret_keeps_the_container_from_starting(tmp_path):
    config_map = {"kind": "ConfigMap", "metadata": {"name": "kueue-manager-config"}, "data": {}}
    with pytest.raises(VolumeNotReady, match='volume "cert": secret "kueue-webhook-server-cert" not found'):
        pod_volumes(Objects(config_map), KUEUE_POD, KUEUE_CONTAINER, tmp_path)
    optional = dict(KUEUE_POD, spec={"volumes": [{"name": "cert", "secret": {"secretName": "x", "optional": True}}]})
    mounts = pod_volumes(Objects(), optional, {"volumeMounts": [{"name": "cert", "mountPath": "/c"}]}, tmp_path)[0]
    assert [mount[1] for mount in mounts] == ["/c"]


def test_readiness_is_the_containers_probe_at_the_processs_port():
    serves = {"probe": 8081, "metrics": 8443}
    ports = {"probe": 40001, "metrics": 40002}
    probe = {"readinessProbe": {"httpGet": {"path": "/readyz", "port": 8081}}}
    assert readiness_url(probe, serves, ports) == ("http://127.0.0.1:40001/readyz", None)
    named = {"readinessProbe": {"httpGet": {"path": "/m", "port": "metrics", "scheme": "HTTPS"}},
             "ports": [{"name": "metrics", "containerPort": 8443}]}
    assert readiness_url(named, serves, ports) == ("https://127.0.0.1:40002/m", None)
    assert readiness_url({}, serves, ports) == (None, None)  # no probe (Volcano's): Ready once it runs
    url, why = readiness_url({"readinessProbe": {"httpGet": {"path": "/", "port": 9999}}}, serves, ports)
    assert url is None and "port 9999 is none the process serves" in why


def test_only_a_real_operators_jobs_are_held_from_kwok():
    assert held_jobs(["kueue"]) == []
    assert held_jobs(["gpu-operator", "kueue"]) == ["gpu-operator-upgrade-crd"]
    assert held_jobs(["volcano"]) == ["volcano-admission-init"]
    spec = process_of({"metadata": {"labels": {"batch.kubernetes.io/job-name": "volcano-admission-init"}}})
    assert spec.job and spec.command and spec.image_shell == "/bin/bash"
    argv = command_line(spec, Path("/b"), {"command": ["./gen-admission-secret.sh"], "args": ["--secret", "s"]}, {},
                        Path("/pod/serviceaccount"))
    script = argv[-1]
    assert "mount -t tmpfs gpu-platform-pod /tmp" in script and "mount --bind /bin/bash /bin/sh" in script
    assert script.endswith("cd /b/image && exec ./gen-admission-secret.sh --secret s")


def test_kais_crd_upgrader_runs_its_images_command_on_the_machines_userland_read_only(tmp_path):
    assert held_jobs(["kai-scheduler"]) == ["crd-upgrader", "kai-config-deployer", "post-delete-cleanup",
                                            "topology-migration"]
    spec = process_of({"metadata": {"labels": {"batch.kubernetes.io/job-name": "crd-upgrader", "app": "crd-upgrader"}}})
    build = tmp_path / "build"
    (build / "image" / "internal-crds").mkdir(parents=True)
    (build / "image" / "apply-crds.sh").write_text("#!/bin/bash\n")
    account = tmp_path / "pod" / "serviceaccount"
    script = command_line(spec, build, {"name": "upgrader"}, {}, account)[-1]  # the chart's container: no command
    root = str(account.parent / "root")
    assert "mount --bind %s %s/internal-crds" % (build / "image" / "internal-crds", root) in script
    assert "mount --rbind /usr %s/usr && mount -o remount,bind,ro %s/usr" % (root, root) in script
    if os.path.islink("/bin"):  # a merged /usr: the link made again, not a second bind
        assert "ln -s %s %s/bin" % (os.readlink("/bin"), root) in script
    assert "mount --bind %s %s%s" % (TOOLS, root, TOOLS) in script  # kubectl, on the PATH the process gets
    assert "mount --bind %s %s/ " % (build, root) not in script  # no binary: the job runs the image's script
    assert script.endswith("exec unshare --root=%s --wd=/ /apply-crds.sh" % root)
    assert process_of(pod({"app": "kai-operator"})).binary == "operator"


def test_kwok_completes_every_jobs_pod_but_those_a_real_process_ends(tmp_path):
    write_kwok_config(tmp_path, [], held_jobs(["volcano"]))
    stages = {s["metadata"]["name"]: s["spec"]["selector"]["matchExpressions"]
              for s in yaml.safe_load_all((tmp_path / "kwok.yaml").read_text())}
    held = {"key": '.metadata.labels["batch.kubernetes.io/job-name"]', "operator": "NotIn",
            "values": ["volcano-admission-init"]}
    assert held in stages["gpu-platform-job-pod-complete"] and held in stages["gpu-platform-smoke-job-pod-complete"]
    assert held not in stages["gpu-platform-bare-pod-complete"]
    write_kwok_config(tmp_path, [], held_jobs(["kueue"]))
    assert "NotIn" not in (tmp_path / "kwok.yaml").read_text()


def test_a_command_gets_its_variables_as_the_kubelet_expands_them():
    env = {"LOG_VERBOSITY": "4", "NAMESPACE": "nvidia-dra-driver-gpu"}
    assert expand("$(LOG_VERBOSITY)", env) == "4"
    assert expand("--ns=$(NAMESPACE)/$(UNSET)", env) == "--ns=nvidia-dra-driver-gpu/$(UNSET)"  # unknown: as written
    assert expand("$$(LOG_VERBOSITY) costs $$5", env) == "$(LOG_VERBOSITY) costs $5"  # $$ escapes
    container = {"command": ["compute-domain-controller", "-v", "$(LOG_VERBOSITY)"], "args": ["x"]}
    assert expanded(container, env)["command"] == ["compute-domain-controller", "-v", "4"]
    assert container["command"][-1] == "$(LOG_VERBOSITY)"  # the pod's own spec is not changed


def test_the_compute_domain_controller_runs_from_the_images_path_with_its_templates(tmp_path):
    spec = process_of(pod({"nvidia-dra-driver-gpu-component": "controller", "app.kubernetes.io/name": "x"}))
    assert spec.name == "dra-driver"
    build = tmp_path / "build"
    (build / "image" / "templates").mkdir(parents=True)
    account = tmp_path / "pod" / "serviceaccount"
    container = expanded({"command": ["compute-domain-controller", "-v", "$(LOG_VERBOSITY)"],
                          "env": [{"name": "LOG_VERBOSITY", "value": "4"}]}, {"LOG_VERBOSITY": "4"})
    script = command_line(spec, build, container, {}, account)[-1]
    root = str(account.parent / "root")
    assert "mount --bind %s %s/usr/bin/compute-domain-controller" % (build / "compute-domain-controller", root) \
        in script
    assert "mount --bind %s %s/templates" % (build / "image" / "templates", root) in script
    assert script.endswith("--wd=/ compute-domain-controller -v 4")


def _build(tmp_path, name, version):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "manifest.json").write_text('{"pins": {"version": "%s"}}' % version)
    return folder


def test_of_two_releases_built_the_image_tag_picks_the_process(tmp_path):
    """The upgrade from release 0.2.0 runs both releases' builds: each pod gets the one its image tag names, and a
    tag no build has is an error naming the builds (the pod then shows it instead of running the wrong binary)."""
    spec = process_of(pod({"app": "gpu-operator", "app.kubernetes.io/component": "gpu-operator"}))
    builds = {"gpu-operator": _build(tmp_path, "new", "v26.7.0"),
              "gpu-operator@v26.3.3": _build(tmp_path, "old", "v26.3.3"), "kueue": _build(tmp_path, "k", "v0.19.2")}
    assert build_for(builds, spec, {"image": "nvcr.io/nvidia/gpu-operator:v26.3.3"}) == tmp_path / "old"
    assert build_for(builds, spec, {"image": "mirror.example/nvidia/gpu-operator:v26.7.0"}) == tmp_path / "new"
    with pytest.raises(ValueError, match=r"no build of the gpu-operator for image tag v26.3.2 \(builds: gpu-operator, "
                                         r"gpu-operator@v26.3.3\)"):
        build_for(builds, spec, {"image": "nvcr.io/nvidia/gpu-operator:v26.3.2"})
    # one build: whatever the tag (a mirror's retag, a digest)
    assert build_for({"gpu-operator": tmp_path / "new"}, spec, {"image": "x@sha256:abc"}) == tmp_path / "new"
    assert held_jobs(["gpu-operator@v26.3.3"]) == held_jobs(["gpu-operator"])


def test_the_gpu_operators_crd_upgrade_hook_runs_manage_crds_in_its_image(tmp_path):
    """templates/upgrade_crd.yaml's Job: /usr/bin/manage-crds apply on the image's /opt/gpu-operator CRDs."""
    spec = process_of(pod({"batch.kubernetes.io/job-name": "gpu-operator-upgrade-crd",
                           "app.kubernetes.io/component": "gpu-operator"}))
    assert spec.name == "gpu-operator" and spec.job and spec.binary == "manage-crds"
    assert "gpu-operator-upgrade-crd" in held_jobs(["gpu-operator"])
    build = tmp_path / "build"
    (build / "image" / "opt" / "gpu-operator").mkdir(parents=True)
    (build / "manage-crds").write_text("")
    container = {"command": ["/usr/bin/manage-crds"],
                 "args": ["apply", "--filepath=/opt/gpu-operator/nvidia.com_clusterpolicies.yaml"]}
    script = command_line(spec, build, container, {}, tmp_path / "pod" / "serviceaccount")[-1]
    assert "mount --bind %s %s/usr/bin/manage-crds" % (build / "manage-crds", tmp_path / "pod" / "root") in script
    assert "mount --bind %s %s/opt" % (build / "image" / "opt", tmp_path / "pod" / "root") in script
    assert script.endswith("/usr/bin/manage-crds apply --filepath=/opt/gpu-operator/nvidia.com_clusterpolicies.yaml")


def test_the_renamed_dra_charts_controller_gets_its_metrics_endpoint_on_loopback():
    """dra-driver-nvidia-gpu 0.4.x labels its controller after the new chart name and binds HTTP_ENDPOINT :8080."""
    spec = process_of(pod({"dra-driver-nvidia-gpu-component": "controller"}))
    assert spec.name == "dra-driver" and spec.serves == {"metrics": 8080}
    assert {name: address % 41234 for name, address, _port in spec.env_ports} == {"HTTP_ENDPOINT": "127.0.0.1:41234"}
    assert process_of(pod({"batch.kubernetes.io/job-name": "kai-config-deployer"})).volumes
