"""The pure checks of make gitops-test (tests/gitops_checks.py): times read as times, a refusal accepted only when it
names a missing CRD of a kind that was applied, and the final line counted from what was read against the bundle."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
import yaml

from tests.gitops_checks import (expected_flux_objects, image_problems, is_ready, missing_crd_kind, nic_repositories,
                                 order_problem, parse_time, ready_summary, ready_times, unit_objects, waiting_for)

ROOT = ("flux-system", "gpu-platform")


def flux(kind, name, namespace="flux-system", ready="True", generation=1, observed=1, at="2026-11-25T12:00:00Z",
         revision=None, message="Applied"):
    status = {"observedGeneration": observed}
    if ready is not None:
        condition = {"type": "Ready", "status": ready, "message": message}
        if at is not None:
            condition["lastTransitionTime"] = at
        status["conditions"] = [condition]
    if revision:
        status["lastAppliedRevision"] = revision
    return {"kind": kind, "metadata": {"name": name, "namespace": namespace, "generation": generation},
            "status": status}


def expected(kustomizations=("gpu-platform", "gpu-platform-a"), releases=(("nvidia", "op"),)):
    return {"Kustomization": {("Kustomization", "flux-system", n) for n in kustomizations},
            "HelmRelease": {("HelmRelease", ns, n) for ns, n in releases}}


# -- parse_time -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, want", [
    ("2026-11-25T12:00:01Z", datetime(2026, 11, 25, 12, 0, 1, tzinfo=timezone.utc)),
    ("2026-11-25t12:00:01z", datetime(2026, 11, 25, 12, 0, 1, tzinfo=timezone.utc)),
    ("2026-11-25T12:00:01.5Z", datetime(2026, 11, 25, 12, 0, 1, 500000, tzinfo=timezone.utc)),
    ("2026-11-25T12:00:01.123456789Z", datetime(2026, 11, 25, 12, 0, 1, 123456, tzinfo=timezone.utc)),
    ("2026-11-25T14:00:01+02:00", datetime(2026, 11, 25, 12, 0, 1, tzinfo=timezone.utc)),
    ("2026-11-25T07:30:01-04:30", datetime(2026, 11, 25, 12, 0, 1, tzinfo=timezone.utc)),
])
def test_parse_time_reads_rfc3339_as_an_aware_datetime(value, want):
    assert parse_time(value) == want


@pytest.mark.parametrize("value", [None, "", "2026-11-25", "2026-11-25T12:00:01", "12:00:01Z", "yesterday",
                                   "2026-11-25T12:00Z", "2026-13-25T12:00:01Z", 1764072001])
def test_parse_time_refuses_what_is_not_rfc3339(value):
    with pytest.raises(ValueError):
        parse_time(value)


def test_times_in_other_offsets_compare_as_the_same_instant_where_strings_would_not():
    earlier, later = "2026-11-25T13:00:00+02:00", "2026-11-25T12:00:00Z"
    assert earlier > later, "as strings, the earlier instant sorts after"
    assert parse_time(earlier) < parse_time(later)


# -- order ----------------------------------------------------------------------------------------------------------

def items_at(**times):
    return [flux("Kustomization", name.replace("_", "-"), at=at) for name, at in times.items()]


def test_a_dependent_ready_after_its_dependency_is_in_order():
    times = ready_times(items_at(op="2026-11-25T12:00:01Z", config="2026-11-25T12:00:09Z"))
    assert order_problem(times, "op", "config") is None


def test_a_dependent_ready_before_its_dependency_is_a_problem_naming_both():
    times = ready_times(items_at(op="2026-11-25T12:00:09Z", config="2026-11-25T12:00:01Z"))
    problem = order_problem(times, "op", "config")
    assert "config became Ready at 2026-11-25T12:00:01+00:00, before op" in problem


def test_the_order_is_judged_on_instants_not_on_strings():
    # 12:00:05 in UTC+2 is 10:00:05Z: before 11:00:00Z, though it sorts after it as a string
    times = ready_times(items_at(op="2026-11-25T11:00:00Z", config="2026-11-25T12:00:05+02:00"))
    assert order_problem(times, "op", "config") is not None
    times = ready_times(items_at(op="2026-11-25T12:00:05+02:00", config="2026-11-25T11:00:00Z"))
    assert order_problem(times, "op", "config") is None


def test_the_same_second_is_not_a_reversal():
    """Kubernetes keeps condition times to the second: two units Ready in the same second are not out of order."""
    times = ready_times(items_at(op="2026-11-25T12:00:01Z", config="2026-11-25T12:00:01Z"))
    assert order_problem(times, "op", "config") is None


@pytest.mark.parametrize("op_at", [None, "", "soon"])
def test_a_missing_or_unreadable_time_is_a_problem_not_a_pass(op_at):
    """The string comparison this replaces let an empty time ("") pass as earlier than any other."""
    times = ready_times(items_at(op=op_at, config="2026-11-25T12:00:01Z"))
    assert times["op"] is None
    assert "op has no Ready time" in order_problem(times, "op", "config")
    assert "config has no Ready time" in order_problem(ready_times(items_at(op="2026-11-25T12:00:01Z")), "op", "config")


def test_ready_times_without_a_ready_condition_is_none():
    assert ready_times([flux("Kustomization", "a", ready=None)]) == {"a": None}
    assert ready_times([flux("HelmRelease", "r")]) == {}


# -- a missing CRD ----------------------------------------------------------------------------------------------------

KINDS = {"ClusterPolicy": "nvidia.com/v1", "NicClusterPolicy": "mellanox.com/v1alpha1", "Namespace": "v1",
         "ConfigMap": "v1", "HelmRelease": "helm.toolkit.fluxcd.io/v2", "DaemonSet": "apps/v1",
         "DeviceClass": "resource.k8s.io/v1", "ClusterQueue": "kueue.x-k8s.io/v1beta1"}


@pytest.mark.parametrize("message, kind", [
    ('ClusterPolicy/cluster-policy dry-run failed: no matches for kind "ClusterPolicy" in version "nvidia.com/v1"',
     "ClusterPolicy"),
    ('NicClusterPolicy/nic-cluster-policy dry-run failed (BadRequest): no matches for kind "NicClusterPolicy" in '
     'version "mellanox.com/v1alpha1"', "NicClusterPolicy"),
    ('ClusterQueue/vision dry-run failed: no matches for kind "ClusterQueue" in version "kueue.x-k8s.io/v1beta1"\n'
     "more lines", "ClusterQueue"),
    ("ClusterPolicy/cluster-policy namespace not specified: the server could not find the requested resource",
     "ClusterPolicy"),
    ("ClusterQueue/team/vision not found: the server could not find the requested resource (patch clusterqueues)",
     "ClusterQueue"),
])
def test_a_refusal_for_a_missing_crd_names_the_kind(message, kind):
    assert missing_crd_kind(message, KINDS) == kind


@pytest.mark.parametrize("message", [
    "",
    None,
    'Namespace/gpu-operator not found: namespaces "gpu-operator" not found',
    'ConfigMap/gpu-operator/x not found: configmaps "x" not found',
    "kustomization path not found: stat /tmp/flat: no such file or directory",
    'GitRepository flux-system/flat: artifact not found',
    'HelmRepository.source.toolkit.fluxcd.io "x" not found',
    # a kind that was not applied, and one Kubernetes serves itself
    'Foo/x dry-run failed: no matches for kind "Foo" in version "example.com/v1"',
    'DeviceClass/gpu dry-run failed: no matches for kind "DeviceClass" in version "resource.k8s.io/v1"',
    'DaemonSet/ns/x dry-run failed: no matches for kind "DaemonSet" in version "apps/v1"',
    # the kind that was applied, in another version
    'ClusterPolicy/cluster-policy dry-run failed: no matches for kind "ClusterPolicy" in version "nvidia.com/v2"',
    "ClusterPolicy/cluster-policy dry-run failed (Invalid): spec.driver: Invalid value",
])
def test_any_other_refusal_or_not_found_is_not_a_missing_crd(message):
    assert missing_crd_kind(message, KINDS) is None


# -- the bundle -------------------------------------------------------------------------------------------------------

def write(path, *docs):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(list(docs)))


@pytest.fixture
def bundle(tmp_path):
    root = tmp_path / "platform"
    write(root / "kustomization.yaml", {"resources": ["gpu-platform-op.yaml", "gpu-platform-config.yaml"]})
    for unit in ("op", "config"):
        write(root / ("gpu-platform-%s.yaml" % unit),
              {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
               "metadata": {"name": "gpu-platform-" + unit, "namespace": "flux-system"},
               "spec": {"path": "./platform/" + unit}})
    write(root / "op" / "kustomization.yaml", {"resources": ["ns.yaml", "hr.yaml"]})
    write(root / "op" / "ns.yaml", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nvidia"}})
    write(root / "op" / "hr.yaml", {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                                    "metadata": {"name": "op", "namespace": "nvidia"}})
    write(root / "config" / "kustomization.yaml", {"resources": ["policy.yaml"]})
    write(root / "config" / "policy.yaml", {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
                                            "metadata": {"name": "cluster-policy"}})
    return root


def test_the_bundle_makes_the_root_one_kustomization_per_unit_and_its_helmreleases(bundle):
    assert sorted(unit_objects(bundle)) == ["config", "op"]
    assert expected_flux_objects(bundle, ROOT) == {
        "Kustomization": {("Kustomization", "flux-system", "gpu-platform"),
                          ("Kustomization", "flux-system", "gpu-platform-op"),
                          ("Kustomization", "flux-system", "gpu-platform-config")},
        "HelmRelease": {("HelmRelease", "nvidia", "op")}}


# -- waiting and the summary -------------------------------------------------------------------------------------------

def all_ready(revision="main@sha1:1"):
    return [flux("Kustomization", "gpu-platform", revision=revision),
            flux("Kustomization", "gpu-platform-a", revision=revision),
            flux("HelmRelease", "op", namespace="nvidia")]


def test_is_ready_needs_the_current_generation():
    assert is_ready(flux("Kustomization", "a"))
    assert not is_ready(flux("Kustomization", "a", generation=2, observed=1))
    assert not is_ready(flux("Kustomization", "a", ready="False"))
    assert not is_ready(flux("Kustomization", "a", ready=None))


def test_nothing_to_wait_for_when_everything_is_ready_at_the_revision():
    assert waiting_for(all_ready(), expected(), "main@sha1:1") == []


def test_a_helmrelease_not_created_yet_is_waited_for():
    items = [o for o in all_ready() if o["kind"] != "HelmRelease"]
    assert waiting_for(items, expected()) == ["HelmRelease nvidia/op: not created yet"]


def test_not_ready_and_other_revisions_are_waited_for():
    items = all_ready()
    items[1] = flux("Kustomization", "gpu-platform-a", ready="False", message="dependency not ready",
                    revision="main@sha1:1")
    assert waiting_for(items, expected(), "main@sha1:2") == [
        "Kustomization flux-system/gpu-platform: at main@sha1:1, not main@sha1:2",
        "Kustomization flux-system/gpu-platform-a: dependency not ready"]


def test_the_summary_counts_what_was_read_against_what_the_bundle_has():
    line, problems = ready_summary(all_ready(), expected())
    assert line == "gitops: 2/2 Kustomizations Ready, 1/1 HelmReleases Ready"
    assert problems == []


def test_fewer_read_than_the_bundle_has_is_counted_and_fails():
    """The line this replaces counted only what was read: a unit missing from the cluster read N/N."""
    items = [o for o in all_ready() if o["metadata"]["name"] != "gpu-platform-a"]
    line, problems = ready_summary(items, expected(releases=(("nvidia", "op"), ("kai", "kai-scheduler"))))
    assert line == "gitops: 1/2 Kustomizations Ready, 1/2 HelmReleases Ready"
    assert problems == ["Kustomization flux-system/gpu-platform-a: not read from the cluster",
                        "HelmRelease kai/kai-scheduler: not read from the cluster"]


def test_read_but_not_ready_and_not_of_the_bundle_fail():
    items = all_ready() + [flux("Kustomization", "flat", ready="False", message="refused")]
    items[2] = flux("HelmRelease", "op", namespace="nvidia", ready="False", message="install retries exhausted")
    line, problems = ready_summary(items, expected())
    assert line == "gitops: 2/2 Kustomizations Ready, 0/1 HelmReleases Ready"
    assert problems == ["Kustomization flux-system/flat: read from the cluster, not made by the bundle",
                        "HelmRelease nvidia/op: not Ready (install retries exhausted)"]


def test_an_empty_read_is_zero_of_everything():
    line, problems = ready_summary([], expected())
    assert line == "gitops: 0/2 Kustomizations Ready, 0/1 HelmReleases Ready"
    assert len(problems) == 3


def test_ready_times_are_datetimes():
    times = list(ready_times(items_at(a="2026-11-25T12:00:01Z")).values())
    assert len(times) == 1
    at = times[0]
    assert at == datetime(2026, 11, 25, 12, 0, 1, tzinfo=timezone.utc) and at.utcoffset() == timedelta(0)


# -- images -----------------------------------------------------------------------------------------------------------

NIC = {"ofedDriver": {"image": "doca-driver", "repository": "mirror.example.com/nvcr.io/nvidia/mellanox",
                      "version": "x"},
       "rdmaSharedDevicePlugin": {"repository": "mirror.example.com/nvcr.io/nvidia/mellanox"},
       "nvIpam": {"enabled": True},
       "secondaryNetwork": {"multus": {"repository": "mirror.example.com/ghcr.io/k8snetworkplumbingwg"},
                            "ipamPlugin": {"enabled": False}}}


def test_nic_repositories_lists_every_component_that_names_an_image():
    assert nic_repositories(NIC) == {
        "nicclusterpolicy ofedDriver": "mirror.example.com/nvcr.io/nvidia/mellanox",
        "nicclusterpolicy rdmaSharedDevicePlugin": "mirror.example.com/nvcr.io/nvidia/mellanox",
        "nicclusterpolicy secondaryNetwork.multus": "mirror.example.com/ghcr.io/k8snetworkplumbingwg"}
    assert nic_repositories({}) == {} and nic_repositories(None) == {}


def test_images_on_the_mirror_and_all_there_are_no_problem():
    found = dict(nic_repositories(NIC), **{"deployment/gpu-operator": "mirror.example.com/nvcr.io/nvidia/gpu-operator:v1"})
    assert image_problems(found, "mirror.example.com", set(nic_repositories(NIC))) == []


def test_an_image_off_the_mirror_an_empty_one_and_a_missing_component_are_problems():
    """A component the rendered policy names but the cluster's lacks was not judged at all: not a pass."""
    found = nic_repositories(NIC)
    del found["nicclusterpolicy secondaryNetwork.multus"]
    found["nicclusterpolicy ofedDriver"] = "nvcr.io/nvidia/mellanox"
    found["clusterpolicy driver"] = ""
    assert image_problems(found, "mirror.example.com", set(nic_repositories(NIC))) == [
        "clusterpolicy driver: <none>",
        "nicclusterpolicy ofedDriver: nvcr.io/nvidia/mellanox",
        "nicclusterpolicy secondaryNetwork.multus: not on the cluster"]
    assert image_problems({"x": "mirror.example.com.evil.io/a"}, "mirror.example.com", set()) == [
        "x: mirror.example.com.evil.io/a"]
