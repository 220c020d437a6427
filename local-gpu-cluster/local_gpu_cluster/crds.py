"""Loading CustomResourceDefinitions from YAML files (parsed once per process, cached).

``load_crds(dirs)`` returns every object of kind CustomResourceDefinition found in the
``*.yaml``/``*.yml`` files under ``dirs`` (recursively, in sorted path order). When two
files define the same CRD name, the later file wins. The returned dicts are shared with
the cache: callers must copy before changing them (the store does).
"""

import json
import pathlib
import threading

import yaml

from .paths import SHARED

DEFAULT_CRD_DIR = SHARED / "upstream"

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CACHE = {}
_LOCK = threading.Lock()


def _crds_in_file(path):
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    with _LOCK:
        if key not in _CACHE:
            text = path.read_text(encoding="utf-8")
            docs = []
            if "CustomResourceDefinition" in text:
                docs = [d for d in yaml.load_all(text, Loader=_LOADER)
                        if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]
            # JSON round trip: YAML timestamps and the like become plain strings.
            _CACHE[key] = json.loads(json.dumps(docs, default=str))
        return _CACHE[key]


def load_crds(dirs):
    """All CRD objects under ``dirs`` (a list of directories), later files winning."""
    by_name = {}
    for directory in dirs:
        paths = sorted(p for pattern in ("*.yaml", "*.yml")
                       for p in pathlib.Path(directory).rglob(pattern))
        for path in paths:
            for crd in _crds_in_file(path):
                by_name[crd["metadata"]["name"]] = crd
    return list(by_name.values())
