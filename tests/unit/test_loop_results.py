"""loop_results: registered stat and find loop results as the domain's plain inputs."""
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import loop_results

STATS = [{"item": "/etc/containerd/config.toml", "stat": {"exists": True, "checksum": "ab", "mode": "0644"}},
         {"item": "/etc/containerd/gone.toml", "stat": {"exists": False}},
         {"item": "/etc/skipped.toml", "skipped": True}]
DIRS = [{"item": "/etc/containerd/conf.d", "stat": {"exists": True, "isdir": True}},
        {"item": "/etc/containerd/empty.d", "stat": {"exists": True, "isdir": True}},
        {"item": "/etc/containerd/missing.d", "stat": {"exists": False}},
        {"item": "/etc/containerd/a-file", "stat": {"exists": True, "isdir": False}}]
FOUND = [{"item": "/etc/containerd/conf.d",
          "files": [{"path": "/etc/containerd/conf.d/10.toml"}, {"path": "/etc/containerd/conf.d/20.toml"}]},
         {"item": "/etc/containerd/empty.d", "skipped": True}]


def test_stat_files():
    assert loop_results.stat_files(STATS) == [
        {"path": "/etc/containerd/config.toml", "exists": True, "checksum": "ab", "mode": "0644"},
        {"path": "/etc/containerd/gone.toml", "exists": False, "checksum": None, "mode": None},
        {"path": "/etc/skipped.toml", "exists": False, "checksum": None, "mode": None}]
    assert loop_results.stat_files(None) == []


def test_dropins_list_the_files_of_folders_and_none_for_what_is_not_one():
    assert loop_results.dropins(DIRS, FOUND) == {
        "/etc/containerd/conf.d": ["/etc/containerd/conf.d/10.toml", "/etc/containerd/conf.d/20.toml"],
        "/etc/containerd/empty.d": [],
        "/etc/containerd/missing.d": None,
        "/etc/containerd/a-file": None}
    assert loop_results.dropins(DIRS, None)["/etc/containerd/conf.d"] == []
    assert loop_results.dropins(None, FOUND) == {}
