"""Where the local GPU cluster finds what it serves and runs with.

The package is used from a checkout of the project it tests (the ``gpu_platform.cluster`` collection): its
``build/`` folder holds the clusters' directories, its ``tools/bin`` the pinned helm and kubectl, its roles'
``defaults/main.yml`` the chart pins of the operators it builds (read as a user of the collection reads them), and
``../shared/upstream`` beside it the upstream sources and CRDs. Each has one environment variable to point it
elsewhere; nothing else in the package computes a path from its own location.
"""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
# the project checkout: local_gpu_cluster/paths.py -> the checkout holding local-gpu-cluster/
PROJECT = Path(os.environ.get("LOCAL_GPU_CLUSTER_PROJECT") or PACKAGE_DIR.parents[1])
TOOLS_BIN = Path(os.environ.get("LOCAL_GPU_CLUSTER_TOOLS") or PROJECT / "tools" / "bin")
SHARED = Path(os.environ.get("LOCAL_GPU_CLUSTER_SHARED") or PROJECT.parent / "shared")
BUILD = PROJECT / "build"
# the Go modules whose go.mod/go.sum pin the control plane, KWOK and the Flux controllers
GO_DIR = PACKAGE_DIR / "go"
# the charts served for an operator that is not built from its source, and CRDs transcribed where upstream ships none
FIXTURE_CHARTS_DIR = PACKAGE_DIR / "fixture_charts"
FIXTURE_CRDS_DIR = PACKAGE_DIR / "fixture_crds"


def python_path_env(base=None) -> dict:
    """``base`` (nothing by default) with the PYTHONPATH a child ``python -m local_gpu_cluster.<module>`` needs to
    import this package, installed or not: the folder holding it, ahead of what ``base`` had there."""
    env = dict(base or {})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(PACKAGE_DIR.parent), env.get("PYTHONPATH"))))
    return env
