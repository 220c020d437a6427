"""Every checkable reference in README.md and docs/*.md names something the repository has.

A doc that names a variable, a path, a make target, a module, a filter or a module option that does
not exist fails here, with the doc, the line, the reference and what is missing. What is checked:

* variables: an identifier in backticks (or a top-level key of a ```yaml mapping, a play's or task's
  ``vars``, or ``-e name=...`` in a shell block) that starts with a collection prefix (``gpu_platform_``
  or a role's name and ``_``, from roles/*/defaults/main.yml) must be defined by a role's defaults or
  argument specs (the platform's: roles/gpu_platform), or be read somewhere in roles/ or playbooks/.
  ``*`` is a wildcard and a trailing ``_`` a prefix: such a family must match at least one name;
* paths: a backticked (or shell-block, or Markdown-link) path under one of the repository's folders must
  exist (``*`` and ``<placeholder>`` are globs that must match); ``tests/x.py::test_y`` also needs the test;
* ``make <target>``: a target of the Makefile;
* ``gpu_platform.cluster.<name>``: a module, a role or a filter;
* module options: every key under ``gpu_platform.cluster.<module>:`` in a ```yaml example must be an
  option (or alias) of the module, doc fragments included; and in docs/<module>.md every backticked
  ``snake_case`` name or ``key: value`` must be one of the module's options, aliases or return keys.

Run ``python -m tests.docs.test_doc_claims`` to print how many references of each kind are checked."""
from __future__ import annotations

import collections
import os

import pytest

from tests.docs.doc_references import Docs, Ref
from tests.docs.doc_repository import ROOT, Repo

DOCS = ["README.md"] + sorted(os.path.join("docs", name) for name in os.listdir(os.path.join(ROOT, "docs"))
                              if name.endswith(".md"))

_CACHE = {}


def scanned():
    if "docs" not in _CACHE:
        docs = Docs()
        for doc in DOCS:
            docs.scan(doc)
        _CACHE["docs"] = docs.refs
        _CACHE["repo"] = Repo()
    return _CACHE["docs"], _CACHE["repo"]


def failures(doc=None):
    refs, repo = scanned()
    found = []
    for ref in refs:
        if doc is not None and ref.doc != doc:
            continue
        problem = repo.check(ref)
        if problem:
            found.append("%s:%d: %s `%s`: %s" % (ref.doc, ref.line, ref.kind, ref.text, problem))
    return found


@pytest.mark.parametrize("doc", DOCS)
def test_every_reference_in_the_doc_exists(doc):
    found = failures(doc)
    assert not found, "%d stale reference(s):\n%s" % (len(found), "\n".join(found))


def test_the_scanner_finds_each_kind_of_reference():
    """A scanner that silently finds nothing would pass every doc: each kind must be seen, and known ones found."""
    refs, _repo = scanned()
    kinds = collections.Counter(ref.kind for ref in refs)
    for kind in ("variable", "yaml variable", "path", "make", "fqcn", "option", "module doc option", "yaml"):
        assert kinds[kind] > 0, "no %s reference found in the docs" % kind
    seen = {(ref.kind, ref.doc, ref.text) for ref in refs}
    assert ("make", "README.md", "demo") in seen
    assert ("fqcn", "README.md", "helm_pinned_release") in seen
    assert ("option", "README.md", "chart_version") in seen
    assert ("path", "README.md", "playbooks/smoke.yml") in seen
    assert ("variable", "README.md", "gpu_platform_image_mirrors") in seen


@pytest.mark.parametrize("ref, problem", [
    (Ref("variable", "x", 1, "gpu_operator_no_such_thing", None), "nothing in roles/"),
    (Ref("variable", "x", 1, "*_no_such_family", None), "no defined variable matches"),
    (Ref("variable", "x", 1, "gpu_operator_chart_*", None), None),
    (Ref("variable", "x", 1, "*_image_mirrors", None), None),
    (Ref("path", "x", 1, "playbooks/nope.yml", None), "no such file"),
    (Ref("path", "x", 1, "roles/*/defaults/main.yml", None), None),
    (Ref("path", "x", 1, "tests/docs/test_doc_claims.py::test_nope", None), "has no test"),
    (Ref("make", "x", 1, "nope", None), "no target"),
    (Ref("fqcn", "x", 1, "nope", None), "no module"),
    (Ref("fqcn", "x", 1, "image_mirror", None), None),
    (Ref("option", "x", 1, "chart_versoin", "helm_pinned_release"), "no option"),
    (Ref("option", "x", 1, "kubeconfig", "helm_pinned_release"), None),
])
def test_the_checks_tell_stale_from_real(ref, problem):
    _refs, repo = scanned()
    result = repo.check(ref)
    if problem is None:
        assert result is None
    else:
        assert result and problem in result


def test_the_scanner_reads_spans_blocks_and_links():
    docs = Docs()
    text = ("Set `gpu_operator_wait: false` and `*_extra_values`, see [x](../playbooks/site.yml).\n"
            "```bash\nmake demo && ansible-playbook -i inventories/local playbooks/smoke.yml -e gpu_platform_x=1\n```\n"
            "```yaml\ngpu_sharing_pools: []\n- bad\n```\n")
    docs.scan("docs/probe.md", text)
    got = {(r.kind, r.text) for r in docs.refs}
    assert {("variable", "gpu_operator_wait"), ("variable", "*_extra_values"), ("path", "playbooks/site.yml"),
            ("make", "demo"), ("path", "inventories/local"), ("path", "playbooks/smoke.yml"),
            ("variable", "gpu_platform_x")} <= got
    assert [r for r in docs.refs if r.kind == "yaml" and r.extra], "an unparsable YAML example is reported"


if __name__ == "__main__":
    REFS, REPO = scanned()
    print(collections.Counter(ref.kind for ref in REFS))
    for message in failures():
        print(message)
