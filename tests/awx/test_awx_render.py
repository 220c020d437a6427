"""The site job template in GitOps render mode, as AWX runs it (tests/awx/runner.py): the survey's folder answer
renders the bundle from the installed artifact with no cluster and no credential, and a second run changes
nothing. No local control plane: this runs with the fast tests."""
from __future__ import annotations

import pytest

from tests.awx.runner import Job, cluster_inventory, job_templates, scan

pytestmark = pytest.mark.slow


def test_the_site_job_renders_a_bundle_without_a_cluster(awx_collections, tmp_path):
    template = job_templates()["GPU platform"]
    bundle = tmp_path / "bundle"
    answers = {"gpu_platform_driver_mode": "operator", "gpu_platform_network_mode": "rdma_shared",
               "gpu_platform_render_to": str(bundle)}
    inventory = cluster_inventory("https://charts.example.com")
    results = []
    for ident in ("render", "render-again"):
        job = Job(template, awx_collections, inventory, answers=answers)
        job.layout(tmp_path / ident)
        results.append(job.run(tmp_path / ident, ident))
    first, second = results
    assert first.status == "successful", first.summary()
    assert first.changed > 0 and sorted(bundle.rglob("*.yaml")), "the bundle was written"
    assert second.status == "successful" and second.changed == 0, second.changed_tasks()
    files, events, hits, found = scan(first.artifacts, {}, {"the bundle's folder": str(bundle)})
    assert events == len(first.events) and files > events and found["the bundle's folder"] > 0
    assert not hits


# Three mistakes in three layers (network, GPU Operator, monitoring), as an inventory of the job could hold them.
MISTAKES = {"network_operator_ip_range": "192.168.100.0/33", "gpu_operator_release_name": "a" * 60,
            "monitoring_thresholds": {"temperature_celsius": 300}}


@pytest.mark.parametrize("name", ["GPU platform", "GPU platform: drivers, network and GPU Operator",
                                  "GPU platform: GPU sharing", "GPU platform: DRA, scheduling and monitoring"])
def test_a_job_with_three_wrong_inputs_fails_in_one_event_with_one_line_each(awx_collections, tmp_path, name):
    """Every job template that writes runs checks.yml first: the failed event's message (what AWX shows for the job)
    is the preflight's, one line per mistake, nothing around it, and nothing is written."""
    template = job_templates()[name]
    # site.yml imports checks.yml itself; the layer templates import it before their layers
    assert template["imports"] == ["gpu_platform.cluster.site"] or "gpu_platform.cluster.checks" in template["imports"]
    bundle = tmp_path / "bundle"
    answers = {"gpu_platform_driver_mode": "operator", "gpu_platform_network_mode": "rdma_shared",
               "gpu_platform_render_to": str(bundle)}
    job = Job(template, awx_collections, dict(cluster_inventory("https://charts.example.com"), **MISTAKES),
              answers=answers)
    job.layout(tmp_path / "job")
    result = job.run(tmp_path / "job", "mistakes")
    assert result.status == "failed" and result.changed == 0
    [(task, msg)] = result.failure_messages()
    assert [line.split(": ")[0] for line in msg.splitlines()] == [
        "network_operator_ip_range", "gpu_operator_release_name", "monitoring_thresholds.temperature_celsius"], msg
    assert msg.splitlines()[2].startswith("monitoring_thresholds.temperature_celsius: 300 is out of range")
    assert "Finalization of task args" not in result.stdout() and "filter plugin" not in result.stdout()
    assert not bundle.exists()
