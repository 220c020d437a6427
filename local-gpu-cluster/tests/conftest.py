"""The package's own tests: its fixtures (fake API server, chart repository and OCI registry, the session's local
control plane) come from the package itself, as they do for a project that uses it."""
pytest_plugins = ["local_gpu_cluster.fixtures", "local_gpu_cluster.repo_fixtures", "local_gpu_cluster.testing"]
