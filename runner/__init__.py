"""The in-cluster runner of the c5c3.glance collection: it watches the custom resources of
``watches.yaml``, runs the reconcile playbooks through ansible-runner, and serves the
admission webhook, health endpoints and metrics."""
