"""Fidelity: ``kubernetes.core.k8s`` / ``k8s_info`` (bundled 6.2.0) via ansible-playbook."""

import json
import pathlib
import sys

import pytest

from local_gpu_cluster.helpers import DEMO_CHART, binary, run

PLAYBOOK = """\
- hosts: localhost
  gather_facts: false
  module_defaults:
    group/kubernetes.core.k8s:
      kubeconfig: "{{ kubeconfig }}"
  tasks:
    - name: Create a ConfigMap
      kubernetes.core.k8s:
        definition: &cm
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: settings, namespace: default, labels: {tier: db}}
          data: {mode: one}
      register: created
    - name: Create it again
      kubernetes.core.k8s:
        definition: *cm
      register: again
    - name: Other ConfigMaps for selectors
      kubernetes.core.k8s:
        definition:
          - {apiVersion: v1, kind: ConfigMap,
             metadata: {name: web, namespace: default, labels: {tier: web}}}
          - {apiVersion: v1, kind: ConfigMap,
             metadata: {name: cache, namespace: default, labels: {tier: db, role: cache}}}
    - name: Client-side apply a change, twice
      kubernetes.core.k8s:
        apply: true
        definition:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: settings, namespace: default, labels: {tier: db}}
          data: {mode: two}
      loop: [1, 2]
      register: applied
    - name: Check mode create stores nothing
      kubernetes.core.k8s:
        definition:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: phantom, namespace: default}
      check_mode: true
      register: phantom
    - name: Server-side apply a Deployment and wait for it, twice
      kubernetes.core.k8s:
        server_side_apply: {field_manager: ansible-test}
        wait: true
        wait_timeout: 20
        wait_condition: {type: Available, status: "True"}
        definition:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: web, namespace: apps}
          spec:
            selector: {matchLabels: {app: web}}
            template:
              metadata: {labels: {app: web}}
              spec: {containers: [{name: web, image: "web:1"}]}
      loop: [1, 2]
      register: deployment
    - name: A custom resource, created then merged (no strategic merge for CRs)
      kubernetes.core.k8s:
        definition:
          apiVersion: nvidia.com/v1
          kind: ClusterPolicy
          metadata: {name: cluster-policy}
          spec: {driver: {enabled: "{{ item }}"}}
      loop: [true, false]
      register: policy
    - name: A Job that completes
      kubernetes.core.k8s:
        wait: true
        wait_timeout: 20
        wait_condition: {type: Complete, status: "True"}
        definition:
          apiVersion: batch/v1
          kind: Job
          metadata: {name: once, namespace: default}
          spec:
            template:
              spec:
                restartPolicy: Never
                containers: [{name: c, image: "busybox:1"}]
      register: job
    - name: A helm release through kubernetes.core.helm
      kubernetes.core.helm:
        binary_path: "{{ helm }}"
        chart_ref: "{{ chart }}"
        release_name: demo
        release_namespace: charts
        create_namespace: true
        wait: true
        values: {config: {mode: from-ansible}}
      register: release
    - name: Select by label
      kubernetes.core.k8s_info:
        kind: ConfigMap
        namespace: default
        label_selectors: ["tier=db", "role notin (cache)"]
      register: by_label
    - name: Select by field
      kubernetes.core.k8s_info:
        kind: ConfigMap
        field_selectors: ["metadata.name=web"]
      register: by_field
    - name: Delete
      kubernetes.core.k8s:
        state: absent
        api_version: v1
        kind: ConfigMap
        name: web
        namespace: default
      register: deleted
    - name: Report
      ansible.builtin.copy:
        dest: "{{ report }}"
        content: "{{ results | to_json }}"
      vars:
        results:
          created: "{{ created.changed }}"
          again: "{{ again.changed }}"
          applied: "{{ applied.results | map(attribute='changed') | list }}"
          phantom: "{{ phantom.changed }}"
          deployment: "{{ deployment.results | map(attribute='changed') | list }}"
          ready: "{{ deployment.results[1].result.status.readyReplicas }}"
          policy: "{{ policy.results | map(attribute='changed') | list }}"
          job: "{{ job.result.status.succeeded }}"
          by_label: "{{ by_label.resources | map(attribute='metadata.name') | list }}"
          by_field: "{{ by_field.resources | map(attribute='metadata.namespace') | list }}"
          deleted: "{{ deleted.changed }}"
          release: "{{ release.status.status }}"
"""


@pytest.mark.slow
def test_kubernetes_core_modules(fake_api, tmp_path, monkeypatch):
    ansible_playbook = pathlib.Path(sys.executable).with_name("ansible-playbook")
    if not ansible_playbook.exists():
        pytest.skip("ansible-playbook is not installed in this environment")
    for name in ("ANSIBLE_CONFIG", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_PATHS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    playbook = tmp_path / "playbook.yml"
    playbook.write_text(PLAYBOOK)
    report = tmp_path / "report.json"
    run([ansible_playbook, "-i", "localhost,", "-c", "local", playbook,
         "-e", f"ansible_python_interpreter={sys.executable}",
         "-e", f"kubeconfig={fake_api.kubeconfig}", "-e", f"report={report}",
         "-e", f"helm={binary('helm3')}", "-e", f"chart={DEMO_CHART}"], timeout=120)
    results = json.loads(report.read_text())
    assert results == {
        "created": True, "again": False, "applied": [True, False], "phantom": True,
        "deployment": [True, False], "ready": 1,
        "policy": [True, True], "job": 1, "by_label": ["settings"], "by_field": ["default"],
        "deleted": True, "release": "deployed"}
    store = fake_api.store
    assert store.get("v1", "ConfigMap", "settings", "default")["data"] == {"mode": "two"}
    assert store.get("v1", "ConfigMap", "phantom", "default") is None
    assert store.get("v1", "ConfigMap", "web", "default") is None
    assert store.get("v1", "ConfigMap", "demo-config", "charts")["data"]["mode"] == \
        "from-ansible"
    assert store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")["spec"] == {
        "driver": {"enabled": False}}
    assert any(e["query"].get("dryRun") == "All" for e in fake_api.request_log)
