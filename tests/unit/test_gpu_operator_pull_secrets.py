"""Image pull Secrets from registry credentials (the gpu_operator role's registry_pull_secrets filter)."""
from __future__ import annotations

import base64
import json

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import gpu_operator as domain
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError


def test_registry_credentials_become_dockerconfigjson_pull_secrets():
    secret, = domain.pull_secrets([{"name": "ngc", "registry": "nvcr.io", "username": "$oauthtoken",
                                    "password": "tok"}], "gpu-operator")
    assert secret["type"] == "kubernetes.io/dockerconfigjson"
    assert secret["metadata"] == {"name": "ngc", "namespace": "gpu-operator"}
    config = json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))
    assert config == {"auths": {"nvcr.io": {"username": "$oauthtoken", "password": "tok",
                                            "auth": base64.b64encode(b"$oauthtoken:tok").decode()}}}


@pytest.mark.parametrize("bad, field", [
    ({"name": "ngc", "registry": "nvcr.io", "username": "u"}, "[0].password: is missing"),
    ({"name": "NGC!", "registry": "nvcr.io", "username": "u", "password": "pw-value"}, "[0].name: 'NGC!'"),
    ("ngc", "[0]: is not a dictionary"),
])
def test_a_bad_credential_names_its_field_and_never_its_password(bad, field):
    with pytest.raises(ParamError) as err:
        domain.pull_secrets([bad], "gpu-operator")
    assert "gpu_operator_registry_credentials" + field in err.value.msg and "Fix:" in err.value.msg
    assert "pw-value" not in err.value.msg
