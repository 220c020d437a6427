"""`make checkov`: checkov's Kubernetes checks on a rendered bundle, against the findings accepted with a reason.

    python -m tests.security.checkov_scan CHECKOV_BIN BUNDLE_DIR

Prints one line per finding with its verdict and a last line `checkov: N passed, A accepted, U unaccepted,
S stale`; exits 1 on an unaccepted finding or a stale entry of tests/security/checkov_accepted.yml.
"""
from __future__ import annotations

import fnmatch
import json
import subprocess
import sys
from pathlib import Path

import yaml

ACCEPTED = Path(__file__).with_name("checkov_accepted.yml")


def findings(checkov, bundle):
    proc = subprocess.run([checkov, "-d", str(bundle), "--framework", "kubernetes", "--quiet", "--compact", "-o",
                           "json"], capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        raise SystemExit("checkov did not run (rc %s): %s" % (proc.returncode, proc.stderr[-2000:]))
    reports = json.loads(proc.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    failed = [(f["check_id"], f["resource"], f["file_path"]) for r in reports
              for f in (r.get("results") or {}).get("failed_checks", [])]
    passed = sum((r.get("summary") or {}).get("passed", 0) for r in reports)
    return failed, passed


def judge(failed, accepted):
    """(accepted findings, unaccepted findings, stale entries)."""
    used, ok, bad = set(), [], []
    for check, resource, path in failed:
        match = next((i for i, e in enumerate(accepted)
                      if e["check"] == check and fnmatch.fnmatchcase(resource, e["resource"])), None)
        if match is None:
            bad.append((check, resource, path))
        else:
            used.add(match)
            ok.append((check, resource, path))
    stale = [e for i, e in enumerate(accepted) if i not in used]
    return ok, bad, stale


def main(argv=None):
    checkov, bundle = (argv or sys.argv[1:])[:2]
    accepted = yaml.safe_load(ACCEPTED.read_text(encoding="utf-8"))
    missing = [e for e in accepted if not str(e.get("reason") or "").strip()]
    if missing:
        raise SystemExit("checkov_accepted.yml: entries without a reason: %s" % missing)
    failed, passed = findings(checkov, bundle)
    ok, bad, stale = judge(failed, accepted)
    for check, resource, path in ok:
        print("accepted   %s %s (%s)" % (check, resource, path))
    for check, resource, path in bad:
        print("UNACCEPTED %s %s (%s): fix it, or list it with its reason in %s" % (check, resource, path, ACCEPTED))
    for entry in stale:
        print("STALE      %s %s: no finding matches it any more; remove it from %s"
              % (entry["check"], entry["resource"], ACCEPTED))
    print("checkov: %d passed, %d accepted, %d unaccepted, %d stale" % (passed, len(ok), len(bad), len(stale)))
    return 1 if bad or stale else 0


if __name__ == "__main__":
    sys.exit(main())
