"""cube-lab's multi-user hub: one settings file (``hub/cube_hub.yaml``) drives JupyterHub in
both shapes - local processes on one machine and KubeSpawner pods on Kubernetes.

- ``settings``: the file; ``units``: CPU and memory amounts; ``quotas``: group quotas and what
  a server or job takes; ``policy``: which profiles a user may start, which group pays;
  ``ledger``: atomic admission (SQLite ``BEGIN IMMEDIATE``), release and reconcile.
- ``spawner``: admission at spawn for both shapes, and the local spawner; ``kubernetes``: the
  cluster shape (KubeSpawner profiles, volumes); ``auth``: NativeAuthenticator with a
  generated first admin password, and the OIDC group mapping.
- ``config``: applies it all to JupyterHub's config (``hub/jupyterhub_config.py``);
  ``admin`` + ``hubapi`` + ``templates/``: the cube-admin service; ``client``: admission for
  code in a lab server; ``devhub``: a throwaway hub for tests, UI tests and benchmarks.
"""
