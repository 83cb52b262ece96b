"""The labels every pod cube-lab creates carries, so cluster metrics join to its objects.

One vocabulary for training job pods (every framework and rank), Katib trial pods, KServe
predictor pods, the pods of pipeline steps compiled for Kubeflow Pipelines and hub user
servers::

    cube-lab.io/project   the project (group) the pod's object belongs to
    cube-lab.io/owner     the user who made it
    cube-lab.io/kind      run-node | job | trial | deployment | server
    + the object's id     cube-lab.io/job-id, experiment-id and trial, deployment-id,
                          pipeline and node-id (run-node), server (server)

DCGM exporter (``--kubernetes``) puts ``namespace`` and ``pod`` on its GPU series and
kube-state-metrics exports a pod's labels as ``kube_pod_labels{label_cube_lab_io_project=...}``
(once they are allow-listed: ``--metric-labels-allowlist=pods=[...]``, :func:`allowlist`):
the recording rules in ``deploy/grafana/cube-lab-dcgm-rules.yml`` join the two on
``namespace, pod``. Their label names come from :data:`PROMETHEUS_LABELS`, and
``tests/alerts/test_dcgm_rules.py`` checks that they do.

Values are valid label values: user and group names go through the one reversible escaping
(``cube_lab.names.label_value``, as ``user_label`` always did); ids are kept when they are
valid label values already and shortened with a hash otherwise (:func:`id_value`).
"""

from __future__ import annotations

import hashlib
import re
from typing import Literal

from ..names import label_value

__all__ = [
    "DEPLOYMENT_ID",
    "EXPERIMENT_ID",
    "ID_LABELS",
    "JOB_ID",
    "KIND",
    "KINDS",
    "NODE_ID",
    "OWNER",
    "PIPELINE",
    "PROJECT",
    "PROMETHEUS_LABELS",
    "SERVER",
    "TRIAL",
    "allowlist",
    "deployment",
    "id_value",
    "is_label_value",
    "job",
    "prometheus_name",
    "run_node",
    "server",
    "trial",
]

PREFIX = "cube-lab.io/"
PROJECT = PREFIX + "project"
OWNER = PREFIX + "owner"
KIND = PREFIX + "kind"
JOB_ID = PREFIX + "job-id"
EXPERIMENT_ID = PREFIX + "experiment-id"
TRIAL = PREFIX + "trial"
DEPLOYMENT_ID = PREFIX + "deployment-id"
PIPELINE = PREFIX + "pipeline"
NODE_ID = PREFIX + "node-id"
SERVER = PREFIX + "server"

Kind = Literal["run-node", "job", "trial", "deployment", "server"]
KINDS: tuple[Kind, ...] = ("run-node", "job", "trial", "deployment", "server")
# the labels naming the object, per kind (besides project, owner and kind)
ID_LABELS: dict[Kind, tuple[str, ...]] = {
    "run-node": (PIPELINE, NODE_ID),
    "job": (JOB_ID,),
    "trial": (EXPERIMENT_ID, TRIAL),
    "deployment": (DEPLOYMENT_ID,),
    "server": (SERVER,),
}

_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
MAX_VALUE = 63
_HASH = 10


def is_label_value(text: str) -> bool:
    """Whether ``text`` is a valid Kubernetes label value."""
    return len(text) <= MAX_VALUE and bool(_VALUE.match(text))


def id_value(text: str) -> str:
    """An object id as a label value: itself when valid (ids cube-lab makes are), else its
    readable part, ``-`` and 10 hex digits of its SHA-256 (distinct ids stay distinct)."""
    text = str(text)
    if text and is_label_value(text):
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH]
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "-", text)[: MAX_VALUE - _HASH - 1]
    readable = re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", readable)
    return f"{readable}-{digest}" if readable else digest


def labels(kind: Kind, project: str, owner: str, ids: dict[str, str]) -> dict[str, str]:
    """The labels of a pod of ``kind``: project and owner escaped, ``ids`` (label -> id)."""
    if kind not in KINDS:
        raise ValueError(f"unknown pod kind {kind!r}")
    if set(ids) != set(ID_LABELS[kind]):
        raise ValueError(f"a {kind} pod is named by {ID_LABELS[kind]}, not {tuple(ids)}")
    return {
        PROJECT: label_value(project),
        OWNER: label_value(owner),
        KIND: kind,
        **{key: id_value(value) for key, value in ids.items()},
    }


def job(project: str, owner: str, job_id: str) -> dict[str, str]:
    """The labels of a training job's pods (every rank, every framework)."""
    return labels("job", project, owner, {JOB_ID: job_id})


def trial(
    project: str, owner: str, experiment_id: str, trial_name: str, *, placeholder: bool = False
) -> dict[str, str]:
    """The labels of a tuning trial's pods. ``placeholder``: ``trial_name`` is text the
    operator replaces with the Trial's name (Katib's ``${trialParameters.X}``), kept as is."""
    out = labels("trial", project, owner, {EXPERIMENT_ID: experiment_id, TRIAL: trial_name})
    if placeholder:
        out[TRIAL] = trial_name
    return out


def deployment(project: str, owner: str, deployment_id: str) -> dict[str, str]:
    """The labels of a deployment's predictor pods."""
    return labels("deployment", project, owner, {DEPLOYMENT_ID: deployment_id})


def run_node(project: str, owner: str, pipeline: str, node_id: str) -> dict[str, str]:
    """The labels of a pipeline step's pod (the run itself is KFP's ``pipeline/runid``)."""
    return labels("run-node", project, owner, {PIPELINE: pipeline, NODE_ID: node_id})


def server(project: str, owner: str, server_name: str) -> dict[str, str]:
    """The labels of a hub user's server pod (``server_name`` ``default`` for the default)."""
    return labels("server", project, owner, {SERVER: server_name or "default"})


def prometheus_name(label: str) -> str:
    """The name kube-state-metrics gives a pod label in ``kube_pod_labels``
    (``cube-lab.io/project`` -> ``label_cube_lab_io_project``)."""
    return "label_" + re.sub(r"[^A-Za-z0-9_]", "_", label)


ALL_LABELS: tuple[str, ...] = (
    PROJECT,
    OWNER,
    KIND,
    *dict.fromkeys(key for keys in ID_LABELS.values() for key in keys),
)
# what the recording rules may join on: every label above, as kube-state-metrics names it
PROMETHEUS_LABELS: frozenset[str] = frozenset(prometheus_name(k) for k in ALL_LABELS)


def allowlist() -> str:
    """kube-state-metrics' ``--metric-labels-allowlist`` value that exports these labels."""
    return "pods=[" + ",".join(ALL_LABELS) + "]"
