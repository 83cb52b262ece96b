"""The cube-lab service's side of the cluster shape, as Kubernetes manifests.

Under Zero to JupyterHub the cube-lab service (the store's owner) runs in the hub pod, as the
hub's service account. That account gets, on top of the chart's own rights (pods and claims for
KubeSpawner), exactly what the compute backends create and follow:

- training (``cube_lab.training``): Kubeflow PyTorchJob, TFJob (kubeflow.org/v1), MPIJob
  (kubeflow.org/v2beta1) and TrainJob (trainer.kubeflow.org/v1alpha1); their pods are listed
  and their logs read;
- tuning (``cube_lab.tuning.cluster``): Katib Experiments (kubeflow.org/v1beta1);
- serving (``cube_lab.serving.kserve_cluster``): KServe InferenceServices, patched for
  traffic splits.

Not here, because nothing in cube-lab creates them: Volcano PodGroups and Jobs (the training
operators make the PodGroup for ``schedulerName: volcano``), Argo Workflows (KFP runs are
submitted to the KFP API server, which creates them), the Jobs of Katib trials (Katib's).

One Role and RoleBinding in the hub's namespace, and with ``project_namespaces`` the same in
each configured project group's namespace ``cube-<group>`` (with the Namespace). The Secret
holds the store's database URL (key ``db-url``); the hub pod reads it through
``hub.extraEnv`` and hands it to the service alone (``kubernetes.pass_store_env``).

``python -m cube_lab.hub.service_manifests [--settings FILE]`` prints them as YAML for
``kubectl apply -f -``; the Secret is printed only when ``$CUBE_LAB_DB_URL`` is set where the
command runs (never from the settings file, which the chart's values hold in clear).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import yaml

from ..config import ENV_DB_URL
from ..errors import CubeError
from .kubernetes import STORE_SECRET, STORE_SECRET_KEY, project_namespace
from .settings import HubSettings, load

ROLE = "cube-lab-service"
HUB_SERVICE_ACCOUNT = "hub"  # Zero to JupyterHub's hub.serviceAccount (fullnameOverride "")
LABELS = {"app.kubernetes.io/part-of": "cube-lab", "app.kubernetes.io/component": "service"}

# (API group, resource, verbs): what the backends call through cube_lab.k8s.Kube
# (create / get / watch / patch / delete a custom object, list pods, read a pod's log);
# tests/hub/test_cluster_boundary.py checks it against the manifests the backends build.
_FOLLOW = ["create", "get", "list", "watch", "delete"]
RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("kubeflow.org", "pytorchjobs", tuple(_FOLLOW)),
    ("kubeflow.org", "tfjobs", tuple(_FOLLOW)),
    ("kubeflow.org", "mpijobs", tuple(_FOLLOW)),
    ("trainer.kubeflow.org", "trainjobs", tuple(_FOLLOW)),
    ("kubeflow.org", "experiments", tuple(_FOLLOW)),
    ("kubeflow.org", "trials", ("get", "list")),  # Katib's, read into the experiment's record
    ("serving.kserve.io", "inferenceservices", (*_FOLLOW, "patch")),
    ("", "pods", ("list",)),
    ("", "pods/log", ("get",)),
    # the Secret with a job's (or an experiment's) token for its pods, deleted with the job
    ("", "secrets", ("create", "delete")),
)


def role_rules() -> list[dict[str, Any]]:
    """The Role's rules, one per API group (resources sharing their verbs)."""
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for group, resource, verbs in RULES:
        grouped.setdefault((group, verbs), []).append(resource)
    return [
        {"apiGroups": [group], "resources": sorted(resources), "verbs": list(verbs)}
        for (group, verbs), resources in grouped.items()
    ]


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(LABELS)}
    if namespace:
        meta["namespace"] = namespace
    return meta


def job_namespaces(settings: HubSettings) -> list[str]:
    """Where the service creates jobs: the hub's namespace, and with ``project_namespaces``
    each configured project group's (groups added later on the admin page need theirs
    applied then)."""
    spaces = [settings.kubernetes.namespace]
    if settings.kubernetes.project_namespaces:
        spaces += [project_namespace(group) for group in settings.groups]
    return list(dict.fromkeys(spaces))


def rbac(settings: HubSettings, service_account: str = HUB_SERVICE_ACCOUNT) -> list[dict[str, Any]]:
    """Role + RoleBinding (and the Namespace of each project) for the hub's account."""
    home = settings.kubernetes.namespace
    out: list[dict[str, Any]] = []
    for ns in job_namespaces(settings):
        if ns != home:
            out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(ns)})
        out.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": _meta(ROLE, ns),
                "rules": role_rules(),
            }
        )
        out.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": _meta(ROLE, ns),
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": ROLE,
                },
                "subjects": [
                    {"kind": "ServiceAccount", "name": service_account, "namespace": home}
                ],
            }
        )
    return out


def store_secret(settings: HubSettings, db_url: str) -> dict[str, Any]:
    """The Secret with the store's database URL, in the hub's namespace."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(STORE_SECRET, settings.kubernetes.namespace),
        "type": "Opaque",
        "stringData": {STORE_SECRET_KEY: db_url},
    }


def manifests(
    settings: HubSettings,
    *,
    db_url: str | None = None,
    service_account: str = HUB_SERVICE_ACCOUNT,
) -> list[dict[str, Any]]:
    """Everything to apply for the service: the RBAC, and the Secret when ``db_url`` is given."""
    out = rbac(settings, service_account)
    if db_url:
        out.append(store_secret(settings, db_url))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cube_lab.hub.service_manifests",
        description="Print the cube-lab service's Role, RoleBinding and Secret as YAML.",
    )
    parser.add_argument("--settings", help="the hub settings file (default: $CUBE_HUB_SETTINGS)")
    parser.add_argument(
        "--service-account",
        default=HUB_SERVICE_ACCOUNT,
        help="the hub pod's service account (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    try:
        settings = load(args.settings)
    except CubeError as exc:
        print(f"error: {exc.error}. {exc.detail or ''}".strip(), file=sys.stderr)
        return 2
    db_url = os.environ.get(ENV_DB_URL) or None
    docs = manifests(settings, db_url=db_url, service_account=args.service_account)
    sys.stdout.write(yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True))
    if not db_url:
        print(
            f"note: no Secret printed; set ${ENV_DB_URL} to the store's database URL, or run "
            f"kubectl -n {settings.kubernetes.namespace} create secret generic {STORE_SECRET} "
            f"--from-literal={STORE_SECRET_KEY}='postgresql+psycopg://USER:PASSWORD@HOST/DB'",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
