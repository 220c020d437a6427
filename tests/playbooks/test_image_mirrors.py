"""site.yml with registry mirrors: every pinned image of the demo bundle moves to the mirror, nothing else changes;
a bad mirror stops the run before anything is written, without echoing credentials."""
from __future__ import annotations

import os

import pytest

from tests.playbooks.test_site_layers import demo_choices

pytestmark = pytest.mark.slow

MIRRORS = {"nvcr.io": "harbor.example.com/nvcr", "docker.io": "harbor.example.com/hub"}


def texts(folder):
    return {os.path.relpath(os.path.join(d, f), folder): open(os.path.join(d, f), encoding="utf-8").read()
            for d, dummy, files in os.walk(folder) for f in files}


def test_every_image_moves_to_the_mirror_and_the_pins_stay(render_site, tmp_path):
    runner, out = render_site
    choices = dict(demo_choices(), gpu_platform_flux_path="./platform")
    plain_out = tmp_path / "plain"
    plain = runner.run(**dict(choices, gpu_platform_render_to=str(plain_out)))
    assert plain.failed == 0, plain.failure_messages()
    mirrored = runner.run(**dict(choices, gpu_platform_render_to=str(out), gpu_platform_image_mirrors=MIRRORS))
    assert mirrored.failed == 0, mirrored.failure_messages()
    before, after = texts(plain_out), texts(out)
    assert sorted(before) == sorted(after)
    moved = sum(text.count("harbor.example.com/nvcr/") for text in after.values())
    # The GPU Operator's 21 repositories, the Network Operator's 4, the NicClusterPolicy's components, the DRA
    # driver's image and the smoke Jobs' CUDA image.
    assert moved >= 30, moved
    leftovers = {name: [line for line in text.splitlines() if "nvcr.io/" in line or "docker.io/" in line]
                 for name, text in after.items()}
    assert {k: v for k, v in leftovers.items() if v} == {}, "an image still pulled from its registry"
    for name, text in after.items():
        undone = text.replace("harbor.example.com/nvcr/", "nvcr.io/").replace("harbor.example.com/hub/", "docker.io/")
        if name.startswith("gpu-operator/") or name.startswith("network-operator/") or name.startswith("dra-driver/"):
            # The mirror's values are extra keys in the releases: only the repositories, all of them mirrored.
            assert all(line in text for line in before[name].splitlines() if "repository" not in line), name
        else:
            assert undone == before[name], "only the registry changes in %s" % name
    again = runner.run()
    assert again.failed == 0 and again.changed == 0, again.changed_tasks()


@pytest.mark.parametrize("over, field", [
    ({"gpu_platform_image_mirrors": {"nvcr.io": "https://robot:s3cr3t@harbor.example.com/nvcr"}},
     "gpu_platform_image_mirrors.nvcr.io"),
    ({"network_operator_image_mirrors": {"nvcr.io": "harbor"}}, "network_operator_image_mirrors.nvcr.io"),
])
def test_a_bad_mirror_stops_the_run_before_any_write(render_site, over, field):
    runner, out = render_site
    result = runner.run(**dict(demo_choices(), **over))
    assert result.failed == 1
    message = " ".join(result.failure_messages())
    assert field in message and "Fix:" in message
    assert "s3cr3t" not in result.stdout and "robot" not in result.stdout
    assert not out.exists(), "nothing is written"
