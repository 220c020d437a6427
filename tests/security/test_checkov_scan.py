"""The checkov gate's verdicts: a finding nobody accepted fails it, and so does an accepted entry nothing matches."""
from __future__ import annotations

from tests.security.checkov_scan import ACCEPTED, judge

import yaml

ACCEPT = [{"check": "CKV_K8S_11", "resource": "Job.smoke.*", "reason": "short-lived"},
          {"check": "CKV_K8S_23", "resource": "Job.smoke.nccl", "reason": "needs root"}]


def test_accepted_unaccepted_and_stale():
    ok, bad, stale = judge([("CKV_K8S_11", "Job.smoke.cuda", "/a.yaml"), ("CKV_K8S_22", "Job.smoke.cuda", "/a.yaml")],
                           ACCEPT)
    assert ok == [("CKV_K8S_11", "Job.smoke.cuda", "/a.yaml")]
    assert bad == [("CKV_K8S_22", "Job.smoke.cuda", "/a.yaml")], "a new finding is not waved through"
    assert stale == [ACCEPT[1]], "an entry that matches nothing any more is reported"


def test_every_accepted_finding_has_a_reason():
    entries = yaml.safe_load(ACCEPTED.read_text(encoding="utf-8"))
    assert entries and all(str(e.get("reason") or "").strip() and e.get("check") and e.get("resource")
                           for e in entries)
