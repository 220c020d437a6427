"""The test lock with this collection's runtime requirements at the floors of their ranges.

    python scripts/requirement_floors.py lock       the lock (requirements-dev.txt) with each package that
                                                    requirements.txt names pinned at its floor (`name>=X` -> `name==X`)
                                                    and ansible-core at requires_ansible's (meta/runtime.yml), less the
                                                    tools the floor tests do not run (DROPPED), on stdout
    python scripts/requirement_floors.py check      run by the floor venv's python: each such package is installed
                                                    at its floor, or a one-line error says which is not

make requirement-floors installs the first into a virtualenv of its own and runs tests/unit, tests/modules and the
render-mode site.yml in it.
"""
from __future__ import annotations

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# ansible-lint requires cryptography>=46.0.7 (its own need, not the collection's); make lint runs it in the lock's venv.
DROPPED = {"ansible-lint"}
RANGE = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)>=(?P<floor>[0-9][0-9A-Za-z.]*),<(?P<below>[0-9][0-9A-Za-z.]*)$")


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def floors(path=os.path.join(ROOT, "requirements.txt")):
    """{canonical name: floor} from requirements.txt; every requirement must be a `name>=X,<Y` range."""
    found = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            match = RANGE.match(line)
            if not match:
                raise SystemExit("requirements.txt line %d: %r is not a range: write it as name>=LOWEST_TESTED,<NEXT_MAJOR"
                                 % (number, line))
            found[canonical(match.group("name"))] = match.group("floor")
    return found


def ansible_core_floor(path=os.path.join(ROOT, "meta", "runtime.yml")):
    """The lowest ansible-core meta/runtime.yml's requires_ansible admits (its `>=X`)."""
    with open(path, encoding="utf-8") as handle:
        match = re.search(r"^requires_ansible:\s*[\"']?>=([0-9][0-9.]*)", handle.read(), re.MULTILINE)
    if not match:
        raise SystemExit("meta/runtime.yml: requires_ansible has no >=X.Y.Z floor")
    return match.group(1)


def all_floors():
    """requirements.txt's floors and ansible-core's (requires_ansible)."""
    return dict(floors(), **{"ansible-core": ansible_core_floor()})


def lock_at_floors(lock=os.path.join(ROOT, "requirements-dev.txt")):
    wanted = all_floors()
    out, seen = [], set()
    with open(lock, encoding="utf-8") as handle:
        for line in handle:
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            name = canonical(text.split("==", 1)[0])
            if name in DROPPED:
                continue
            if name in wanted:
                seen.add(name)
                text = "%s==%s" % (name, wanted[name])
            out.append(text)
    missing = sorted(set(wanted) - seen)
    if missing:
        raise SystemExit("requirements-dev.txt pins no %s: the lock must pin every requirement of requirements.txt"
                         % ", ".join(missing))
    return out


def check():
    from importlib import metadata  # pylint: disable=import-outside-toplevel

    wanted = all_floors()
    wrong = ["%s %s (floor %s)" % (name, metadata.version(name), floor) for name, floor in sorted(wanted.items())
             if metadata.version(name) != floor]
    if wrong:
        raise SystemExit("not at the floors of requirements.txt and requires_ansible: %s" % ", ".join(wrong))
    print("at the floors of requirements.txt and requires_ansible: %s"
          % ", ".join("%s %s" % item for item in sorted(wanted.items())))


def main(argv):
    if argv[1:] == ["lock"]:
        print("\n".join(lock_at_floors()))
    elif argv[1:] == ["check"]:
        check()
    else:
        raise SystemExit("usage: requirement_floors.py lock|check")


if __name__ == "__main__":
    main(sys.argv)
