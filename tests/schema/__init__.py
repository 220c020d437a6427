"""Schema-layer tests: rendered objects against upstream CRDs and core Kubernetes rules."""
