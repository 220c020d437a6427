"""docs/quickstart.md's table of what `make demo` writes against a rendered bundle folder.

``python -m tests.docs.quickstart_bundle <bundle folder>`` exits 1 naming every entry the table lists that the
folder lacks and every top-level file or folder the folder has that the table does not list. make demo-fresh-clone
runs it on the bundle its demo wrote; tests/docs/test_quickstart_bundle.py checks the comparison itself."""
from __future__ import annotations

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUICKSTART = os.path.join(ROOT, "docs", "quickstart.md")
UNIT_FILE = "gpu-platform-<unit>.yaml"  # the table's one row for every gpu-platform-*.yaml Flux Kustomization
ROW = re.compile(r"^\| `([^`]+)` \|")


def table_entries(text):
    """The first column of the table after the '| file or folder | what |' header."""
    entries, inside = set(), False
    for line in text.splitlines():
        if line.startswith("| file or folder |"):
            inside = True
        elif inside and not line.startswith("|"):
            break
        elif inside and ROW.match(line):
            entries.add(ROW.match(line).group(1))
    return entries


def bundle_entries(folder):
    """The folder's top-level names as the table writes them: folders with a trailing /, one row for the units'
    Flux Kustomizations."""
    entries = set()
    for name in os.listdir(folder):
        if os.path.isdir(os.path.join(folder, name)):
            entries.add(name + "/")
        elif re.fullmatch(r"gpu-platform-[a-z0-9-]+\.yaml", name):
            entries.add(UNIT_FILE)
        else:
            entries.add(name)
    return entries


def differences(documented, rendered):
    """One line per entry that differs; empty when they agree."""
    return (["docs/quickstart.md lists %s, which make demo does not write" % name
             for name in sorted(documented - rendered)]
            + ["make demo writes %s, which docs/quickstart.md's table does not list" % name
               for name in sorted(rendered - documented)])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or not os.path.isdir(argv[0]):
        sys.exit("usage: python -m tests.docs.quickstart_bundle <the bundle folder make demo wrote>")
    with open(QUICKSTART, encoding="utf-8") as handle:
        documented = table_entries(handle.read())
    lines = differences(documented, bundle_entries(argv[0]))
    for line in lines:
        print(line)
    if lines:
        return 1
    print("docs/quickstart.md: its table names the %d entries make demo wrote" % len(documented))
    return 0


if __name__ == "__main__":
    sys.exit(main())
