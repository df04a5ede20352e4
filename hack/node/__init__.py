"""The one-node cluster of ``hack/node_cluster.py``, by job.

``layout`` holds the node's fixed names and addresses; ``packages`` what a machine needs
for it (the Kubernetes binaries, Debian's programs); ``pki`` its CA and certificates;
``processes`` how it runs and stops programs. ``NodeCluster`` (``cluster``) is ``base``
(its state, processes and logs) with one part for each component group: ``control_plane``
(etcd, kube-apiserver, kube-controller-manager, kube-scheduler), ``worker`` (the network,
containerd with CNI, the kubelet), ``kube_proxy``, ``images`` (the sandbox image, loading
images) and ``teardown`` (``down``). ``pause.c`` is the sandbox image's one program.
"""
