"""The Kubernetes adapter under injected API faults (FakeApiServer.inject): transient answers retried with bounded
back-off, Retry-After honoured, POSTs not replayed, resets and time-outs retried, and what cannot be had ends in one
clear error naming the API server and the request, never a traceback."""
from __future__ import annotations

import os
import re
import time

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import kube_retry
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, ToolError

CM = "/api/v1/namespaces/default/configmaps"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def documented():
    """The numbers docs/hardening.md ("API faults") states, read from its text: the tests hold the code to them, so a
    changed constant without the doc (or the doc without the code) fails here."""
    with open(os.path.join(ROOT, "docs", "hardening.md"), encoding="utf-8") as handle:
        text = handle.read()

    def number(pattern):
        match = re.search(pattern, text)
        assert match, "docs/hardening.md no longer says %r" % pattern
        return [float(g) if "." in g else int(g) for g in match.groups()]

    retries, backoff, backoff_max, jitter = number(
        r"It retries up to (\d+) times, with exponential back-off \(([\d.]+) s doubling, at most (\d+) s between "
        r"attempts\) and up to\s+([\d.]+) s of jitter")
    (retry_after_max,) = number(r"honouring `Retry-After` up to (\d+) s")
    (connect,) = number(r"\| `api_connect_timeout` \| (\d+) s \|")
    (read,) = number(r"\| `api_read_timeout` \| (\d+) s \|")
    attempts, sum_connect, sum_read, pauses, pause, worst = number(
        r"One call therefore takes at most (\d+) × \((\d+) \+ (\d+)\) \+ (\d+) × (\d+) = (\d+) s")
    # the doc's sum is made of the doc's own numbers, and adds up
    assert (attempts, sum_connect, sum_read, pauses, pause) == (retries + 1, connect, read, retries, retry_after_max)
    assert attempts * (sum_connect + sum_read) + pauses * pause == worst
    return {"retries": retries, "attempts": attempts, "backoff": backoff, "backoff_max": backoff_max,
            "jitter": jitter, "retry_after_max": retry_after_max, "connect_timeout": connect, "read_timeout": read,
            "worst_case": worst}


DOC = documented()


def configmap(name="c", value="1"):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"k": value}}


@pytest.fixture
def api(fake_api_factory):
    return fake_api_factory()


@pytest.fixture
def client(api):
    made = KubeClient(kubeconfig=api.kubeconfig, api_read_timeout=2)
    made.resource("v1", "ConfigMap")  # discovery before any fault
    made.apply(configmap())
    api.clear_log()
    return made


def attempts(api, method, path):
    return [e for e in api.request_log if e["method"] == method and path in e["path"]]


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_a_transient_answer_is_retried_and_the_call_succeeds(api, client, status):
    api.inject("GET", CM + "/c$", {"status": status}, {"status": status})
    assert client.get("v1", "ConfigMap", "c", "default")["data"] == {"k": "1"}
    assert [e.get("fault", {}).get("status") for e in attempts(api, "GET", CM + "/c")] == [status, status, None]


def test_server_side_apply_is_retried(api, client):
    api.inject("PATCH", CM + "/c$", {"status": 503}, {"reset": True})
    client.apply(configmap(value="2"))
    assert client.get("v1", "ConfigMap", "c", "default")["data"] == {"k": "2"}
    assert len(attempts(api, "PATCH", CM + "/c")) == 3


def test_retry_after_is_honoured(api, client):
    api.inject("GET", CM + "/c$", {"status": 429, "retry_after": 2})
    started = time.monotonic()
    client.get("v1", "ConfigMap", "c", "default")
    assert time.monotonic() - started >= 1.9, "waited as long as the server asked"


def test_a_long_retry_after_is_capped(monkeypatch, api, client):
    monkeypatch.setattr(kube_retry, "RETRY_AFTER_MAX", 1.0)
    fresh = KubeClient(kubeconfig=api.kubeconfig)  # the policy is made with the client
    api.inject("GET", CM + "/c$", {"status": 429, "retry_after": 3600})
    started = time.monotonic()
    fresh.get("v1", "ConfigMap", "c", "default")
    assert time.monotonic() - started < 60, "not an hour"


def test_a_connection_reset_on_a_read_is_retried(api, client):
    api.inject("GET", CM + "$", {"reset": True})
    assert [c["metadata"]["name"] for c in client.list("v1", "ConfigMap", "default")] == ["c"]


def test_a_post_is_not_replayed_after_an_answer(api, client):
    api.inject("POST", "/eviction$", {"status": 503})
    api.store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                      "spec": {"containers": [{"name": "c", "image": "busybox:1.37.0"}]}})
    with pytest.raises(ToolError) as err:
        client.evict("p", "default")
    assert "503" in err.value.msg
    assert len(attempts(api, "POST", "/eviction")) == 1, "an eviction may have happened: not sent twice"


def test_a_fault_that_persists_ends_in_one_clear_error(api, client):
    api.inject("GET", CM + "/c$", *[{"status": 503}] * 10)
    with pytest.raises(ToolError) as err:
        client.get("v1", "ConfigMap", "c", "default")
    assert err.value.msg.startswith("get ConfigMap c failed: 503")
    assert len(attempts(api, "GET", CM + "/c")) == DOC["attempts"], "bounded (docs/hardening.md: 5 attempts)"


def test_a_server_that_never_answers_times_out_with_a_message(api, client):
    api.inject("GET", CM + "/c$", *[{"delay": 3}] * DOC["attempts"])
    with pytest.raises(ToolError) as err:
        client.get("v1", "ConfigMap", "c", "default")
    assert "did not answer after %d attempts" % DOC["attempts"] in err.value.msg
    # each attempt took one injected delay (the fake logs a delayed request again when it answers, too late)
    assert len([e for e in attempts(api, "GET", CM + "/c") if "fault" in e]) == DOC["attempts"]
    assert api.url in err.value.msg and "api_read_timeout (now 2s)" in err.value.msg
    assert "(from the kubeconfig's server)" in err.value.msg, "where the URL came from"


def test_an_unreachable_server_is_a_message(api):
    api.stop()
    with pytest.raises(ToolError) as err:
        KubeClient(kubeconfig=api.kubeconfig, api_connect_timeout=1).get("v1", "ConfigMap", "c", "default")
    assert "did not answer" in err.value.msg or "cannot reach" in err.value.msg


def test_a_conflict_names_the_field_manager(api, client):
    conflict = 'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.k'
    api.inject("PATCH", CM + "/c$", {"status": 409, "message": conflict})
    with pytest.raises(ToolError) as err:
        client.apply(configmap(value="3"))
    assert "409" in err.value.msg and "kubectl-client-side-apply" in err.value.msg
    assert len(attempts(api, "PATCH", CM + "/c")) == 1, "a conflict is not transient"


@pytest.mark.parametrize("value", [0, -1, 3601, "10", True])
def test_bad_time_outs_are_refused(api, value):
    with pytest.raises(ParamError) as err:
        KubeClient(kubeconfig=api.kubeconfig, api_read_timeout=value)
    assert err.value.field == "api_read_timeout"


def test_the_documented_numbers_are_the_ones_docs_hardening_states():
    """docs/hardening.md, "API faults": up to 4 retries (5 attempts), 0.5 s back-off doubling to at most 8 s, 0.5 s
    of jitter, Retry-After honoured up to 30 s, time-outs of 10 s and 60 s, 470 s at worst. Hard-coded here as well
    as read from the doc, so that neither the doc's text nor the code can drift alone."""
    assert DOC == {"retries": 4, "attempts": 5, "backoff": 0.5, "backoff_max": 8, "jitter": 0.5,
                   "retry_after_max": 30, "connect_timeout": 10, "read_timeout": 60, "worst_case": 470}


def test_the_retry_policy_is_the_documented_one():
    assert (kube_retry.RETRIES, kube_retry.BACKOFF, kube_retry.BACKOFF_MAX, kube_retry.JITTER,
            kube_retry.RETRY_AFTER_MAX) == (DOC["retries"], DOC["backoff"], DOC["backoff_max"], DOC["jitter"],
                                            DOC["retry_after_max"])
    assert (kube_retry.CONNECT_TIMEOUT, kube_retry.READ_TIMEOUT) == (DOC["connect_timeout"], DOC["read_timeout"])
    policy = kube_retry.retry_policy()
    assert (policy.total, policy.connect, policy.read, policy.status) == (DOC["retries"],) * 4
    assert policy.backoff_factor == DOC["backoff"] and policy.backoff_max == DOC["backoff_max"]


def test_the_worst_case_is_the_documented_one():
    assert kube_retry.worst_case_seconds() == DOC["worst_case"]
    assert kube_retry.worst_case_seconds(DOC["connect_timeout"], DOC["read_timeout"]) == DOC["worst_case"]


def test_the_module_docs_state_the_same_numbers():
    """The kube auth doc fragment (every module's documentation) says what docs/hardening.md says."""
    from ansible_collections.gpu_platform.cluster.plugins.doc_fragments.kube_auth import ModuleDocFragment
    options = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    text = " ".join(options["api_read_timeout"]["description"])
    assert "retried up to %d times" % DOC["retries"] in text
    assert "(%g s doubling, at most %g s between attempts)" % (DOC["backoff"], DOC["backoff_max"]) in text
    assert "honoured up to %d s" % DOC["retry_after_max"] in text
    assert options["api_connect_timeout"]["default"] == DOC["connect_timeout"]
    assert options["api_read_timeout"]["default"] == DOC["read_timeout"]
