"""platform_settings: the platform's shared settings checked in one pass, every mistake reported at once."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import settings as platform_settings
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError


def test_nothing_set_checks_the_three_always_there():
    assert platform_settings.check({}) == {"charts": [], "mirrors": {}, "pins": []}


def test_gitops_and_the_driver_policy_are_checked_only_when_set():
    out = platform_settings.check({"gitops": {"format": "flux", "path": "./platform", "source": None},
                                   "driver_upgrade_policy": {}})
    assert sorted(out) == ["charts", "driver_upgrade_policy", "gitops", "mirrors", "pins"]
    assert "driver_upgrade_policy" not in platform_settings.check({"driver_upgrade_policy": None})
    assert "gitops" not in platform_settings.check({"gitops": None})


def test_the_gitops_path_defaults_from_the_render_folder():
    # an empty path alone is refused (test_bundle); with the render folder it is ./<its name>
    out = platform_settings.check({"gitops": {"format": "flux", "root": "/srv/git/gpu-platform", "path": ""}})
    assert out["gitops"] == {"kustomization.yaml": {"apiVersion": "kustomize.config.k8s.io/v1beta1",
                                                    "kind": "Kustomization", "resources": []}}
    with pytest.raises(ParamError) as err:
        platform_settings.check({"gitops": {"format": "flux", "root": "/srv/git/gpu-platform", "path": "gpu"}})
    assert err.value.field == "gpu_platform_flux_path"


def test_good_mirrors_come_back_checked():
    out = platform_settings.check({"mirrors": {"gpu_platform_image_mirrors": {"nvcr.io": " harbor.example.com/nvcr "}}})
    assert out["mirrors"] == {"gpu_platform_image_mirrors": {"nvcr.io": "harbor.example.com/nvcr"}}


def test_every_wrong_setting_is_named_in_one_error():
    with pytest.raises(ParamError) as err:
        platform_settings.check({"mirrors": {"gpu_platform_image_mirrors": {"nvcr.io": "https://u:p@harbor/x"}},
                                 "charts": {"scheduling_kueue_chart_version": "latest"},
                                 "gitops": {"format": "helm"},
                                 "driver_upgrade_policy": {"bogus": 1}})
    msg = err.value.msg
    assert "4 platform settings are wrong" in msg
    for field in ("gpu_platform_image_mirrors.nvcr.io", "scheduling_kueue_chart_version",
                  "gpu_operator_driver_upgrade_policy.bogus"):
        assert field in msg
    assert "u:p@" not in msg


def test_one_wrong_setting_is_its_own_error():
    with pytest.raises(ParamError) as err:
        platform_settings.check({"pins": {}, "allow_image_overrides": "yes"})
    assert err.value.field == "gpu_platform_allow_image_overrides"
