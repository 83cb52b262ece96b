"""Katib ``Experiment`` (kubeflow.org/v1beta1) manifests for the cluster shape.

One pod (a batch/v1 Job) per trial. The trial container runs the user's unchanged NNI
trial code through ``python -m cube_lab.tuning.katib_trial``, which hands Katib's
substituted parameters to NNI's runtime and prints each metric NNI reports as a
``name=value`` line, the format Katib's StdOut metrics collector reads. Manifests are
validated in tests against Katib's own v1beta1 OpenAPI (its CRD carries no schema) and
the Job with kubernetes-validate; no cluster runs in these tests.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t
from .spec import ExperimentSpec

ALGORITHMS = {"TPE": "tpe", "Random": "random", "GridSearch": "grid", "Evolution": "cmaes"}
EARLY_STOPPING = {"Medianstop": "medianstop"}
DEFAULT_IMAGE = "ghcr.io/cube-lab/trial:latest"
CONTAINER = "training-container"
METRIC_FORMAT = r"([\w|-]+)\s*=\s*([+-]?\d*(\.\d+)?([Ee][+-]?\d+)?)"  # Katib's default
_DISTRIBUTION = {"uniform": "uniform", "loguniform": "logUniform", "normal": "normal",
                 "lognormal": "logNormal"}  # fmt: skip


def _name(text: str) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:63].strip("-")
    return name or "experiment"


def _parameter(name: str, entry: dict[str, Any]) -> dict[str, Any]:
    kind, value = entry["_type"], entry["_value"]
    if kind == "choice":
        if any(isinstance(v, dict | list) for v in value):
            raise InvalidInput(
                _t("searchSpace.{name}: Katib cannot take nested choices", name=name)
            )
        return {
            "name": name,
            "parameterType": "categorical",
            "feasibleSpace": {"list": [str(v) for v in value]},
        }
    if kind == "randint":  # NNI: upper bound exclusive; Katib: inclusive
        space = {"min": str(int(value[0])), "max": str(int(value[1]) - 1)}
        return {"name": name, "parameterType": "int", "feasibleSpace": space}
    base = kind[1:] if kind.startswith("q") else kind
    if base not in _DISTRIBUTION:
        raise InvalidInput(
            _t("searchSpace.{name}: {kind} has no Katib equivalent", name=name, kind=kind)
        )
    space = {"min": str(value[0]), "max": str(value[1]), "distribution": _DISTRIBUTION[base]}
    if base in ("normal", "lognormal"):
        raise InvalidInput(
            _t("searchSpace.{name}: Katib needs bounds; {kind} has none", name=name, kind=kind),
            _t("Use uniform or loguniform with bounds for the cluster."),
        )
    if kind.startswith("q"):
        space["step"] = str(value[2])
    return {"name": name, "parameterType": "double", "feasibleSpace": space}


def experiment(
    spec: ExperimentSpec,
    namespace: str = "default",
    image: str | None = None,
    cpu: str = "1",
    memory: str = "2Gi",
) -> dict[str, Any]:
    algorithm = ALGORITHMS.get(spec.tuner.name)
    if algorithm is None:
        raise InvalidInput(
            _t("Katib has no {name} tuner", name=spec.tuner.name),
            _t("Use one of {value}.", value=", ".join(ALGORITHMS)),
        )
    names = list(spec.search_space)
    args = shlex.split(spec.trial_command)
    if args and args[0] in ("python", "python3"):
        args = args[1:]
    command = [
        "python",
        "-m",
        "cube_lab.tuning.katib_trial",
        *[f"--param={n}=${{trialParameters.{n}}}" for n in names],
        "--",
        *args,
    ]
    body: dict[str, Any] = {
        "objective": {
            "type": spec.mode,
            "objectiveMetricName": spec.metric,
            "additionalMetricNames": [],
            # every report is printed (medianstop needs them); the last one is the result
            "metricStrategies": [{"name": spec.metric, "value": "latest"}],
        },
        "algorithm": {"algorithmName": algorithm},
        "parallelTrialCount": spec.concurrency,
        "maxTrialCount": spec.max_trials,
        "maxFailedTrialCount": spec.max_trials,
        "metricsCollectorSpec": {
            "collector": {"kind": "StdOut"},
            "source": {"filter": {"metricsFormat": [METRIC_FORMAT]}},
        },
        "parameters": [_parameter(n, e) for n, e in spec.search_space.items()],
        "trialTemplate": {
            "primaryContainerName": CONTAINER,
            "trialParameters": [
                {"name": n, "description": f"search space entry {n}", "reference": n} for n in names
            ],
            "trialSpec": {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "spec": {
                    "template": {
                        "metadata": {"annotations": {"sidecar.istio.io/inject": "false"}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": CONTAINER,
                                    "image": image or DEFAULT_IMAGE,
                                    "command": command,
                                    "workingDir": "/workspace",
                                    "resources": {
                                        "requests": {"cpu": cpu, "memory": memory},
                                        "limits": {"cpu": cpu, "memory": memory},
                                    },
                                }
                            ],
                        },
                    }
                },
            },
        },
    }
    if spec.assessor is not None:
        stop = EARLY_STOPPING.get(spec.assessor.name)
        if stop is None:
            raise InvalidInput(
                _t("Katib has no {name} early stopping", name=spec.assessor.name),
                _t("Use Medianstop."),
            )
        settings = [
            {"name": "min_trials_required", "value": "3"},
            {"name": "start_step", "value": str(spec.assessor.class_args.get("start_step", 1))},
        ]
        body["earlyStopping"] = {"algorithmName": stop, "algorithmSettings": settings}
    return {
        "apiVersion": "kubeflow.org/v1beta1",
        "kind": "Experiment",
        "metadata": {
            "name": _name(spec.name),
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "cube-lab"},
        },
        "spec": body,
    }
