"""The runner's Kubernetes machinery, after client-go.

``watches`` reads which kinds to reconcile (operator-framework's ``watches.yaml``);
``informer`` lists and watches one kind and reports each change; ``workqueue`` is the
rate-limited queue of object keys; ``leader`` holds the Lease. Nothing here knows Glance or
playbooks: the controller at the top of ``runner/`` ties these to the passes.
"""
