"""Every "`old` -> `new`" rename README.md and docs/*.md show is one the platform contract refuses with that new
name (plugins/module_utils/domain/platform/contract.py RENAMED): README once mapped gpu_platform_network_mode to itself."""
from __future__ import annotations

import glob
import os
import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform.contract import RENAMED
from tests.docs.doc_repository import ROOT

PAIR = re.compile(r"`(\w+)` -> `(\w+)`")


def renames_shown():
    """(doc, old, new) of every backticked pair whose new name is a contract variable or old name a renamed one."""
    found = []
    for path in [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        with open(path, encoding="utf-8") as handle:
            for old, new in PAIR.findall(handle.read()):
                if old in RENAMED or new in RENAMED.values():
                    found.append((os.path.relpath(path, ROOT), old, new))
    return found


def test_the_readme_shows_renames():
    assert [doc for doc, dummy, dummy in renames_shown() if doc == "README.md"]


def _why(old, new):
    if old in RENAMED:
        return "contract.py renames `%s` to `%s`" % (old, RENAMED[old])
    return "contract.py renames nothing named `%s` to `%s`" % (old, new)


def test_every_rename_shown_is_the_contracts():
    wrong = ["%s: `%s` -> `%s`, but %s" % (doc, old, new, _why(old, new))
             for doc, old, new in renames_shown() if RENAMED.get(old) != new]
    assert wrong == []
