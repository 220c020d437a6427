"""Table-driven tests of the shared validators: every bad input names the field and the fix."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError


@pytest.mark.parametrize("value", ["1.2.3", "v26.7.0", "1.0.0-rc.1", "0.0.1+build.5", "v25.10.1-beta.2"])
def test_exact_versions_pass(value):
    assert validate.exact_version("chart_version", value) == value


@pytest.mark.parametrize("value, words", [
    ("", "is required and empty"),
    (None, "is required and empty"),
    ("latest", "not a version"),
    ("LATEST", "not a version"),
    ("*", "not a version"),
    ("^1.2.0", "not an exact version"),
    ("~1.2.0", "not an exact version"),
    (">=1.0.0", "not an exact version"),
    ("1.2", "not an exact version"),
    ("1.2.x", "not an exact version"),
    ("1.0.0 || 2.0.0", "not an exact version"),
    ("--devel", "not an exact version"),
    ("01.2.3", "not an exact version"),
])
def test_inexact_versions_refused(value, words):
    with pytest.raises(ParamError) as err:
        validate.exact_version("chart_version", value)
    assert err.value.field == "chart_version"
    assert words in err.value.msg
    assert "Fix:" in err.value.msg


@pytest.mark.parametrize("value, seconds", [(300, 300), ("300", 300), ("5m", 300), ("1m30s", 90), ("1h", 3600), ("300s", 300)])
def test_durations(value, seconds):
    assert validate.duration_seconds("wait_timeout", value) == seconds


@pytest.mark.parametrize("value", ["5 minutes", "m5", "1.5m", "", "0", True, "-3s", "5d"])
def test_bad_durations(value):
    with pytest.raises(ParamError) as err:
        validate.duration_seconds("wait_timeout", value)
    assert err.value.msg.startswith("wait_timeout:")


@pytest.mark.parametrize("value", ["gpu-operator", "a", "a1-b2"])
def test_namespace_names(value):
    assert validate.dns_label("release_namespace", value) == value


@pytest.mark.parametrize("value", ["", "GPU", "-x", "x-", "a_b", "a.b", "x" * 64])
def test_bad_namespace_names(value):
    with pytest.raises(ParamError) as err:
        validate.dns_label("release_namespace", value)
    assert err.value.field == "release_namespace"


def test_release_name_limit_is_53():
    assert validate.release_name("release_name", "r" * 53)
    with pytest.raises(ParamError, match="at most 53"):
        validate.release_name("release_name", "r" * 54)
    with pytest.raises(ParamError, match="not a valid Helm release name"):
        validate.release_name("release_name", "My_Release")


def test_labels_good():
    labels = {"pod-security.kubernetes.io/enforce": "privileged", "team": "", "a.b_c-d": "x.y-z_1"}
    assert validate.labels("namespace_labels", labels) == labels


@pytest.mark.parametrize("labels, words", [
    ({"pod-security.kubernetes.io/enforce": True}, "not a string"),
    ({"bad key!": "x"}, "not a valid Kubernetes label name"),
    ({"Bad_Prefix/x": "y"}, "invalid prefix"),
    ({"k": "has space"}, "invalid value"),
    ({"k": "x" * 64}, "invalid value"),
    ({"k": "-lead"}, "invalid value"),
    ("enforce=privileged", "must be a dictionary"),
])
def test_bad_labels(labels, words):
    with pytest.raises(ParamError) as err:
        validate.labels("namespace_labels", labels)
    assert words in err.value.msg
    assert err.value.field == "namespace_labels"


def test_sha256():
    digest = "a" * 64
    assert validate.sha256_hex("chart_sha256", "sha256:" + digest.upper()) == digest
    assert validate.sha256_hex("chart_sha256", None) is None
    with pytest.raises(ParamError, match="not a SHA-256 digest"):
        validate.sha256_hex("chart_sha256", "abc")


def test_given_drops_unset_options_and_suboptions():
    params = {"mode": "sriov", "ip_gateway": None, "selectors": {"vendors": ["15b3"], "link_type": None},
              "mig_config": {"version": None}}
    assert validate.given(params, suboptions=("selectors",)) == {
        "mode": "sriov", "selectors": {"vendors": ["15b3"]}, "mig_config": {"version": None}}


@pytest.mark.parametrize("value, expected", [("10m", "10m"), (" 1h30m ", "1h30m"), ("90s", "90s"), ("1.5h", "1.5h")])
def test_go_durations_as_flux_takes_them(value, expected):
    assert validate.go_duration("flux_interval", value) == expected


@pytest.mark.parametrize("value, words", [
    ("forever", "not a duration"), ("10", "not a duration"), ("-5m", "not a duration"), ("", "not a duration"),
    (None, "not a duration"), (True, "not a duration"), ("10d", "not a duration"), ("0s", "outside"),
    ("9999h", "outside"), ("500ms", "outside"),
])
def test_bad_go_durations_are_refused(value, words):
    with pytest.raises(ParamError) as err:
        validate.go_duration("flux_interval", value)
    assert err.value.field == "flux_interval" and words in err.value.msg


@pytest.mark.parametrize("url", ["https://robot:s3cr3t@charts.example.com/x", "oci://robot:s3cr3t@ghcr.io/a/b",
                                 "http://token@charts.example.com"])
def test_credentials_in_a_url_are_refused_and_not_echoed(url):
    with pytest.raises(ParamError) as err:
        validate.url_without_credentials("chart_repo_url", url)
    assert "credentials" in err.value.msg and "s3cr3t" not in err.value.msg and "robot" not in err.value.msg


def test_a_url_without_credentials_passes():
    assert validate.url_without_credentials("f", " https://helm.ngc.nvidia.com/nvidia ") == "https://helm.ngc.nvidia.com/nvidia"
    assert validate.url_without_credentials("f", "oci://ghcr.io/nvidia/x@sha256:abc") == "oci://ghcr.io/nvidia/x@sha256:abc"
