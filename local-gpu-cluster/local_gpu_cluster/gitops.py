"""GitOps on the local control plane (``up --gitops``): the real Flux controllers and a git server to feed them.

After the cluster is up: the Flux CRDs (source-controller's GitRepository, HelmRepository, HelmChart,
OCIRepository, Bucket and ExternalArtifact, kustomize-controller's Kustomization, helm-controller's
HelmRelease; the files of the pinned modules, copied into the build's ``crds/``) are applied and
Established, the ``flux-system`` namespace is made, then the git server (``<state>/gitops/repos``) and
the three controllers start like every other component. ``state.json`` records, under ``gitops``, the
git server's URL and the repositories' directory, for tests and playbooks to push to.
"""

import time

import yaml

from . import ClusterError
from .build import FLUX_CONTROLLERS, flux_pins
from .components import flux_controllers, git_server
from .processes import start

NAMESPACE = "flux-system"
PORT_NAMES = ("git-server", "source-controller-storage") + tuple(
    "%s-%s" % (name, port) for name in FLUX_CONTROLLERS for port in ("metrics", "health"))
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _established(crd):
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])


def install_crds(api, paths, timeout, what):
    """Apply (server-side, so a new pin updates them) every CRD in the files ``paths``; wait until each is Established.
    ``what`` names whose CRDs they are, in errors."""
    names = []
    for path in paths:
        for crd in yaml.safe_load_all(path.read_text()):
            if not crd:
                continue
            name = crd["metadata"]["name"]
            code, body = api.request("PATCH", "%s/%s?fieldManager=local-cluster&force=true" % (CRDS, name), crd,
                                     content_type="application/apply-patch+yaml")
            if code not in (200, 201):
                raise ClusterError("applying the %s CRD %s (%s) failed: %s %s"
                                   % (what, name, path, code, body.get("message")))
            names.append(name)
    deadline = time.monotonic() + timeout
    pending = list(names)
    while pending:
        pending = [name for name in pending if not _established(api.request("GET", "%s/%s" % (CRDS, name))[1])]
        if pending and time.monotonic() > deadline:
            raise ClusterError("the %s CRDs %s are not Established after %d s" % (what, ", ".join(pending), timeout))
        if pending:
            time.sleep(0.25)
    return names


def start_gitops(api, state, pki, ports, flux, timeout, data):
    """CRDs, namespace, git server and controllers; each started component is recorded in ``data`` at once (so
    a failure stops it with the rest). Returns the ``gitops`` record of the state file."""
    install_crds(api, sorted((flux / "crds").glob("*.yaml")), timeout, "Flux")
    code, body = api.request("POST", "/api/v1/namespaces",
                             {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    if code not in (201, 409):
        raise ClusterError("creating the namespace %s failed: %s %s" % (NAMESPACE, code, body.get("message")))
    (state.dir / "gitops" / "storage").mkdir(parents=True, exist_ok=True)
    for component in [git_server(state, ports)] + flux_controllers(flux, state, ports):
        data["components"][component.name] = start(component, state, pki, timeout)
        state.save(data)
    return {"git_url": "http://127.0.0.1:%d" % ports["git-server"], "repos": str(state.dir / "gitops" / "repos"),
            "storage_url": "http://127.0.0.1:%d" % ports["source-controller-storage"], "namespace": NAMESPACE,
            "binaries": str(flux), "pins": flux_pins()}
