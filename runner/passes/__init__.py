"""How the runner runs one pass: the watch's playbook through ansible-runner.

``extravars`` builds what the playbook gets and reads what it said back; ``runner_dir`` keeps
ansible-runner's private data dirs; ``playbook`` runs the pass; ``warm/`` is the fork server
that runs ``ansible-playbook`` in a pre-imported interpreter, the small client ansible-runner
starts in its place and the runner's handle on both.
"""
