"""What the runner serves over HTTP: the admission webhook and its certificate, the health
probes and the Prometheus metrics.

``webhook`` serves HTTPS on the four admission paths, ``admission_review`` answers an
AdmissionReview without HTTP, ``webhook_certs`` makes and renews the serving certificate;
``probes`` serves ``/healthz``, ``/readyz`` and ``/metrics``; ``metrics`` defines the series and
``metrics_feed`` feeds the reference's ``glance_operator_*`` ones.
"""
