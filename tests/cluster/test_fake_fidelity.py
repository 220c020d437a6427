"""The fake API server against the real one: the same kubectl session on both, answers compared.

Each step is a real ``kubectl`` 1.35 command; its exit status and its output (uids, resourceVersions and
timestamps taken out) must be the same on the fake (local_gpu_cluster) and on the local control plane. Where they
differ, the fake is wrong: either it is fixed, or the difference is listed in ``KNOWN`` with why the fake
does not model it (a test that needs that judgement runs on the real server). A listed difference that
goes away fails too, so the list stays true.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import subprocess

import pytest
from kubernetes import config, dynamic

from tests.integration.conftest import install_crds
from local_gpu_cluster.testing import ROOT

pytestmark = pytest.mark.slow
KUBECTL = ROOT / "tools" / "bin" / "kubectl"
CLUSTER_POLICY_CRD = ROOT.parent / "shared" / "upstream" / "gpu-operator" / "clusterpolicies.nvidia.com.yaml"

CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "settings", "namespace": "NS", "labels": {"tier": "backend"}}, "data": {"mode": "a"}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "NS"},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}},
                                    "spec": {"containers": [{"name": "c", "image": "registry.example/web:1"}]}}}}
POLICY = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "fidelity-NS"},
          "spec": {"driver": {"enabled": True}}}
PRIVILEGED_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "privileged", "namespace": "NS"},
                  "spec": {"containers": [{"name": "c", "image": "registry.example/b:1",
                                           "securityContext": {"privileged": True}}]}}


def _with(obj, **data):
    copy = json.loads(json.dumps(obj))
    copy.update(data)
    return copy


# (step name, kubectl arguments, stdin object or None); NS is replaced by the test's namespace.
STEPS = [
    ("apply creates", ["apply", "-f", "-"], CONFIGMAP),
    ("apply changes", ["apply", "-f", "-"], _with(CONFIGMAP, data={"mode": "b"})),
    ("apply again", ["apply", "-f", "-"], _with(CONFIGMAP, data={"mode": "b"})),
    ("server-side apply", ["apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-"],
     _with(CONFIGMAP, data={"mode": "c"})),
    ("data", ["-n", "NS", "get", "cm", "settings", "-o", "jsonpath={.data}"], None),
    ("set-based selector", ["-n", "NS", "get", "cm", "-l", "tier in (backend)", "-o", "name"], None),
    ("label", ["-n", "NS", "label", "cm", "settings", "gpu=yes"], None),
    ("negative selector", ["-n", "NS", "get", "cm", "-l", "gpu!=yes,tier", "-o", "name"], None),
    ("server dry-run changes nothing", ["apply", "--dry-run=server", "-f", "-"], _with(CONFIGMAP, data={"mode": "d"})),
    ("data after dry-run", ["-n", "NS", "get", "cm", "settings", "-o", "jsonpath={.data.mode}"], None),
    ("delete", ["-n", "NS", "delete", "cm", "settings", "--wait=false"], None),
    ("get missing", ["-n", "NS", "get", "cm", "settings"], None),
    ("custom resource", ["apply", "--server-side", "-f", "-"], POLICY),
    ("unknown field refused (Strict)", ["apply", "--server-side", "-f", "-"],
     _with(POLICY, spec={"driver": {"enabled": True, "noSuchField": 1}})),
    ("schema type refused", ["apply", "--server-side", "-f", "-"], _with(POLICY, spec={"driver": {"enabled": "yes"}})),
    ("deployment", ["apply", "--server-side", "-f", "-"], DEPLOYMENT),
    ("deployment defaults", ["-n", "NS", "get", "deployment", "web", "-o",
                             "jsonpath={.spec.strategy.type} {.spec.revisionHistoryLimit} "
                             "{.spec.progressDeadlineSeconds} {.spec.template.spec.restartPolicy} "
                             "{.spec.template.spec.dnsPolicy} {.spec.template.spec.schedulerName}"], None),
    ("privileged pod in a restricted namespace", ["apply", "-f", "-"], PRIVILEGED_POD),
]

# step -> why the fake answers differently (a test that needs this judgement runs on the real server).
_NO_ADMISSION = "the fake has no admission plugins: PodSecurity is judged by the real server only (tests/cluster)"
_NO_CR_SCHEMA = ("the fake stores custom resources as sent: their CRD schemas are checked by tests/schema and by the "
                 "real server (tests/cluster/test_dry_run.py)")
KNOWN = {
    "privileged pod in a restricted namespace": _NO_ADMISSION,
    "deployment": _NO_ADMISSION + " (the real server warns that the pod template would violate it)",
    "custom resource": _NO_CR_SCHEMA + " (a ClusterPolicy without the fields its schema requires is refused)",
    "unknown field refused (Strict)": _NO_CR_SCHEMA,
    "schema type refused": _NO_CR_SCHEMA,
    "server dry-run changes nothing": "the fake's server-side apply does not move field ownership from "
                                      "kubectl's client-side apply to the new manager, so it keeps the "
                                      "last-applied annotation the real server drops (and kubectl warns about)",
}


def kubectl(kubeconfig, home, args, stdin=None):
    env = dict(os.environ, KUBECONFIG=kubeconfig, HOME=str(home))
    proc = subprocess.run([str(KUBECTL), *args], input=json.dumps(stdin) if stdin else None, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    return proc.returncode, _normal(proc.stdout), _normal(proc.stderr.splitlines()[0] if proc.stderr else "")


def _normal(text):
    text = re.sub(r'"?resourceVersion"?[:=]\s*"?\d+"?', "resourceVersion=N", text)
    return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "UID", text).strip()


def session(kubeconfig, home, namespace):
    kubectl(kubeconfig, home, ["create", "namespace", namespace])
    kubectl(kubeconfig, home, ["label", "namespace", namespace, "pod-security.kubernetes.io/enforce=restricted"])
    answers = {}
    for name, args, stdin in STEPS:
        text = json.dumps(stdin).replace('"NS"', json.dumps(namespace)).replace("fidelity-NS", "fidelity-" + namespace)
        args = [a.replace("NS", namespace) if a == "NS" else a for a in args]
        answers[name] = kubectl(kubeconfig, home, args, json.loads(text) if stdin else None)
    kubectl(kubeconfig, home, ["delete", "clusterpolicy", "fidelity-" + namespace, "--wait=false"])
    kubectl(kubeconfig, home, ["delete", "namespace", namespace, "--wait=false"])
    return {name: tuple(str(part).replace(namespace, "NS") for part in answer) for name, answer in answers.items()}


class CrdTarget:
    """What install_crds needs of a cluster: its kubeconfig and a discovery cache to refresh."""

    def __init__(self, kubeconfig):
        self.kubeconfig = kubeconfig
        self.dyn = dynamic.DynamicClient(config.new_client_from_config(config_file=kubeconfig))


def test_the_fake_answers_kubectl_as_the_real_api_server_does(local_cluster, fake_api_factory, tmp_path):
    namespace = "fidelity-" + secrets.token_hex(3)
    real_home, fake_home = tmp_path / "real-home", tmp_path / "fake-home"

    target = CrdTarget(local_cluster.kubeconfig)
    had_crd = target.dyn.resources.search(api_version="nvidia.com/v1", kind="ClusterPolicy")
    install_crds(target, [CLUSTER_POLICY_CRD])
    fake = fake_api_factory(require_namespaces=True)
    real = session(local_cluster.kubeconfig, real_home, namespace)
    faked = session(fake.kubeconfig, fake_home, namespace)
    if not had_crd:  # the GPU Operator chart of a later test installs it itself (helm skips a CRD that exists)
        kubectl(local_cluster.kubeconfig, real_home, ["delete", "crd", "clusterpolicies.nvidia.com", "--wait=true"])
    differ = {name: {"real": real[name], "fake": faked[name]} for name in real if real[name] != faked[name]}
    unexpected = {name: answers for name, answers in differ.items() if name not in KNOWN}
    assert unexpected == {}, json.dumps(unexpected, indent=1)
    assert sorted(differ) == sorted(KNOWN), "a known difference went away: update KNOWN %s" % sorted(set(KNOWN) - set(differ))
    # and the real server answered as kubectl users expect, so the comparison means something
    assert real["apply again"][1] == "configmap/settings unchanged"
    assert real["get missing"][0] == "1" and 'configmaps "settings" not found' in real["get missing"][2]
    assert real["unknown field refused (Strict)"][0] == "1"
