"""A real Kubernetes control plane on loopback, built from pinned Go modules, with fake GPU nodes.

``python -m local_gpu_cluster build|up|down|status|env`` (``make cluster-build``,
``make cluster-up``, ``make cluster-down``). The pieces:

* ``build``: the multi-call binary of ``local_gpu_cluster/go/cluster`` (etcd, kube-apiserver,
  kube-controller-manager, kube-scheduler) and KWOK from ``local_gpu_cluster/go/kwok``, cached outside the
  checkout under a key made of every pin (go.mod, go.sum, sources, Go version); the Flux
  controllers from ``local_gpu_cluster/go/flux`` in a cache entry of their own;
* ``pki``: the cluster's CA, serving and client certificates and service-account keys;
* ``components``: each component's command line;
* ``processes``: start, readiness, the state file, stop by pid;
* ``audit``: the API server's audit log read back (``kubeconfig --user NAME`` gives a client a name of its own in
  it): the judge of "nothing written";
* ``fleet``: the fake GPU nodes (labels and resources as NFD and GPU Feature Discovery leave
  them) and KWOK's stages and logs;
* ``gitops`` (``up --gitops``): the Flux CRDs, ``flux-system`` and the controllers, fed by
  ``git_server``, a loopback smart-HTTP git server (``git http-backend``).

Every failure is a ``ClusterError`` whose message names the component and what to do; the
command line prints it without a traceback.
"""


class ClusterError(Exception):
    """A failure with a message for the user (printed as is, exit status 1)."""
