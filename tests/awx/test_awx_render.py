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
