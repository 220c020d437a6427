"""Every layout of the GPU Operator's default mig-parted config, read from the release tarballs in ../shared at test
time, is accepted by the MIG catalog for each GPU it is for; made-up and mixed GB200 names are still refused.

The config is the ConfigMap ``default-mig-parted-config`` (controllers/object_controls.go
MigPartedDefaultConfigMapName) of assets/state-mig-manager/; since gpu-operator commit db0bb63e the MIG manager
mounts it as config-default.yaml and falls back to it when it cannot generate a config from the hardware. The chart's
templates/mig_config.yaml renders only a user's migManager.config.data, never this config.
"""
import functools
import os
import tarfile

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import layouts as mig
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

SOURCES = "upstream/src/gpu-operator-%s.tar.xz"
ASSETS = "assets/state-mig-manager/"
CONFIG_MAP = "default-mig-parted-config"
CURRENT, PREVIOUS = "v26.7.0", "v26.3.3"
GB200 = "GB200"


@functools.lru_cache(maxsize=None)
def _read(archive):
    """(path in the release, parsed config.yaml) of the default mig-parted ConfigMap in a `git archive` .tar.xz."""
    with tarfile.open(archive, "r:xz") as tar:
        for member in tar:
            path = member.name.split("/", 1)[-1]
            if not (member.isfile() and path.startswith(ASSETS) and path.endswith(".yaml")):
                continue
            doc = yaml.safe_load(tar.extractfile(member).read().decode("utf-8"))
            if isinstance(doc, dict) and doc.get("kind") == "ConfigMap" and doc["metadata"]["name"] == CONFIG_MAP:
                return path, yaml.safe_load(doc["data"]["config.yaml"])
    raise AssertionError("%s has no ConfigMap %s under %s" % (archive, CONFIG_MAP, ASSETS))


def operator_config(shared_dir, release):
    return _read(os.path.join(shared_dir, SOURCES % release))


def _by_device():
    return {i.upper(): key for key, spec in mig.CATALOG.items() for i in spec["device_ids"]}


def _targets(entries):
    """The catalog products one layout is for: the GPUs its device filters name; for an entry without a filter,
    every product whose profile names it uses (all of them for all-disabled and all-enabled). Device IDs the
    catalog lacks are returned apart."""
    by_device = _by_device()
    products, missing = set(), set()
    for entry in entries:
        filt = entry.get("device-filter")
        if filt is not None:
            for device in [filt] if isinstance(filt, str) else filt:
                (products.add(by_device[device.upper()]) if device.upper() in by_device else missing.add(device))
        elif entry.get("mig-devices"):
            products.update(key for key in mig.CATALOG if set(entry["mig-devices"]) <= set(mig.accepted_names(key)))
        else:
            products.update(mig.CATALOG)
    return products, missing


def _problems(config):
    """Every way the catalog disagrees with the config, as sentences (empty when it accepts all of it)."""
    problems = []
    mig.validate_mig_parted_config(config)
    for name, entries in config["mig-configs"].items():
        products, missing = _targets(entries)
        if missing:
            problems.append("%s names devices the catalog lacks: %s" % (name, sorted(missing)))
        if not products:
            problems.append("%s fits no GPU of the catalog (%s)" % (name, entries))
        for product in sorted(products):
            try:
                mig.validate_mig_parted_config(config, {"node-1": product}, profile=name)
                if name in mig.layout_names(product):
                    mig.check_layout_name("profile", name, product)
                    applying = [e for e in entries if mig._applies_to(mig.CATALOG[product], e)]
                    ours = mig.named_layout(name, product)
                    if [e.get("mig-devices") for e in applying] != [e.get("mig-devices") for e in ours]:
                        problems.append("%s on %s: the catalog's layout %s, the config's %s"
                                        % (name, product, ours, applying))
            except ParamError as exc:
                problems.append("%s on %s: %s" % (name, product, exc.msg))
    return problems


@pytest.mark.parametrize("release", [CURRENT, PREVIOUS])
def test_every_layout_of_the_default_config_is_accepted_for_each_gpu_it_is_for(shared_dir, release):
    path, config = operator_config(shared_dir, release)
    assert path == "assets/state-mig-manager/0400_configmap.yaml"
    assert len(config["mig-configs"]) > 80
    problems = _problems(config)
    assert not problems, "gpu-operator %s %s:\n%s" % (release, path, "\n".join(problems))


def test_the_previous_release_ships_the_same_default_config(shared_dir):
    # v26.3.3 -> v26.7.0 left the file as it was; the per-release test above keeps both accepted should that change.
    assert operator_config(shared_dir, PREVIOUS)[1] == operator_config(shared_dir, CURRENT)[1]


def test_every_gpu_of_a_device_filter_is_in_the_catalog(shared_dir):
    config = operator_config(shared_dir, CURRENT)[1]
    named = set()
    for entries in config["mig-configs"].values():
        for entry in entries:
            filt = entry.get("device-filter", [])
            named.update(d.upper() for d in ([filt] if isinstance(filt, str) else filt))
    assert named and named <= set(_by_device()), sorted(named - set(_by_device()))


def test_each_gb200_spelling_is_a_layout_of_the_config_and_is_accepted_for_gb200(shared_dir):
    config = operator_config(shared_dir, CURRENT)[1]["mig-configs"]
    rows = mig.CATALOG[GB200]["spellings"]
    assert len(rows) == 2 and all(row["source"].startswith("https://github.com/NVIDIA/") for row in rows)
    for row in rows:
        for profile in row["names"]:
            name = mig._layout_name(profile)
            assert name in config, "%s (%s) is not a layout of the default config" % (name, row["reported_by"])
            assert name in mig.layout_names(GB200)
            assert mig.named_layout(name, GB200) == config[name]
            assert GB200 in _targets(config[name])[0]
    # The older names are not the B200's (same 7-slice design, other sizes).
    with pytest.raises(ParamError) as err:
        mig.validate_layout("B200", {rows[1]["names"][0]: 1})
    assert "a profile of GB200" in err.value.msg


def test_a_made_up_gb200_profile_name_is_refused_with_a_clear_message():
    made_up = "3g.94gb"
    assert all(made_up not in mig.accepted_names(key) for key in mig.CATALOG)
    config = {"version": "v1", "mig-configs": {
        "all-3g.94gb": [{"device-filter": mig.CATALOG[GB200]["device_ids"][0], "devices": "all", "mig-enabled": True,
                         "mig-devices": {made_up: 2}}]}}
    with pytest.raises(ParamError) as err:
        mig.validate_mig_parted_config(config, {"gb200-node": "NVIDIA-GB200"}, profile="all-3g.94gb")
    msg = err.value.msg
    assert msg.startswith("mig_config: mig-configs.all-3g.94gb[0].mig-devices (for GB200 on gb200-node): ")
    assert "3g.94gb (no GPU in the catalog has it) is not a MIG profile of GB200" in msg
    assert "Fix: use the profiles of GB200: " in msg
    for row in mig.CATALOG[GB200]["spellings"]:
        assert all(name in msg.split("Fix: ")[1] for name in row["names"])


def test_a_gb200_layout_that_mixes_the_two_spellings_is_refused():
    first, other = mig.CATALOG[GB200]["spellings"]
    mixed = {first["names"][1]: 1, other["names"][0]: 1}
    with pytest.raises(ParamError) as err:
        mig.validate_layout(GB200, mixed)
    msg = err.value.msg
    assert "mixes %s" % first["names"][1] in msg and other["names"][0] in msg
    assert first["reported_by"] in msg and other["reported_by"] in msg and "Fix:" in msg
    # Each spelling alone fits, the same as the other (same slices, same limits).
    mig.validate_layout(GB200, {first["names"][1]: 1, first["names"][0]: 1})
    mig.validate_layout(GB200, {other["names"][1]: 1, other["names"][0]: 1})
