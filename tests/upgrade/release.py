"""Release 0.2.0's checkout, for the upgrade test: the files of the commit that landed it, as ``git archive`` gives
them, in a folder of the build (``python -m tests.upgrade.release <folder>``; make upgrade-test's operators are built
from its pins before the test runs)."""
from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Release 0.2.0: the commit that landed it (galaxy.yml's version 0.2.0), the last before 0.3.0.
RELEASE = "0.2.0"
RELEASE_COMMIT = "37f77c7693ff6953d0e8c1c6a87529588fd3498a"
DEFAULT_DIR = ROOT / "build" / ("release-" + RELEASE)


class ReleaseMissing(Exception):
    """The clone has no such commit (a shallow one)."""


def _git(*args):
    return subprocess.run(["git", *args], cwd=str(ROOT), capture_output=True, check=False)


def checkout(folder=DEFAULT_DIR):
    """The release's files in ``folder`` (made anew when its marker names another commit), and a collections folder
    beside them where ansible finds them as gpu_platform.cluster: {"tree", "collections"}."""
    folder = Path(folder)
    tree, marker = folder / "gpu_platform.cluster", folder / "commit"
    collections = folder / "collections"
    if not (marker.is_file() and marker.read_text().strip() == RELEASE_COMMIT):
        found = _git("cat-file", "-e", RELEASE_COMMIT + "^{commit}")
        if found.returncode != 0:
            raise ReleaseMissing("release %s's commit %s is not in this clone (%s): clone the repository with its "
                                 "history" % (RELEASE, RELEASE_COMMIT, found.stderr.decode().strip()))
        galaxy = _git("show", RELEASE_COMMIT + ":galaxy.yml").stdout.decode()
        if "\nversion: %s\n" % RELEASE not in galaxy:
            raise ReleaseMissing("commit %s is not release %s (its galaxy.yml)" % (RELEASE_COMMIT, RELEASE))
        archive = _git("archive", "--format=tar", RELEASE_COMMIT)
        if archive.returncode != 0:
            raise ReleaseMissing("git archive %s failed: %s" % (RELEASE_COMMIT, archive.stderr.decode().strip()))
        subprocess.run(["rm", "-rf", str(folder)], check=True)
        tree.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(tree, filter="data")
        link = collections / "ansible_collections" / "gpu_platform" / "cluster"
        link.parent.mkdir(parents=True)
        link.symlink_to(tree, target_is_directory=True)
        marker.write_text(RELEASE_COMMIT + "\n")
    return {"tree": tree, "collections": collections}


if __name__ == "__main__":
    try:
        print(checkout(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DIR)["tree"])
    except ReleaseMissing as exc:
        sys.exit("previous-release: %s" % exc)
