"""An experiment spec, read from NNI's YAML/JSON experiment config (v2 field names).

The fields NNI users already write (``searchSpace`` or ``searchSpaceFile``,
``trialCommand``, ``trialCodeDirectory``, ``trialConcurrency``, ``maxTrialNumber``,
``maxExperimentDuration``, ``tuner``, ``assessor``) mean what they mean in NNI. cube-lab
adds ``project`` and ``objective`` (``{metric, mode}``: which key of a dict metric is
optimised; NNI's is always ``default``).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t
from . import searchspace

TUNERS = {  # NNI builtin name -> (class path, fixed class args)
    "TPE": ("nni.algorithms.hpo.tpe_tuner.TpeTuner", {}),
    "Random": ("nni.algorithms.hpo.random_tuner.RandomTuner", {}),
    "Anneal": ("nni.algorithms.hpo.hyperopt_tuner.HyperoptTuner", {"algorithm_name": "anneal"}),
    "Evolution": ("nni.algorithms.hpo.evolution_tuner.EvolutionTuner", {}),
    "GridSearch": ("nni.algorithms.hpo.gridsearch_tuner.GridSearchTuner", {}),
}
ASSESSORS = {
    "Medianstop": "nni.algorithms.hpo.medianstop_assessor.MedianstopAssessor",
    "Curvefitting": "nni.algorithms.hpo.curvefitting_assessor.CurvefittingAssessor",
}
_MODES = ("maximize", "minimize")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_KNOWN = {
    "experimentName",
    "searchSpace",
    "searchSpaceFile",
    "trialCommand",
    "trialCodeDirectory",
    "trialConcurrency",
    "maxTrialNumber",
    "maxExperimentDuration",
    "tuner",
    "assessor",
    "trainingService",
    "trialGpuNumber",
    "useAnnotation",
    "debug",
    "logLevel",
    "experimentWorkingDirectory",
    "project",
    "objective",
}


@dataclass
class Algorithm:
    name: str
    class_args: dict[str, Any] = field(default_factory=dict)


@dataclass
class ExperimentSpec:
    name: str
    search_space: dict[str, Any]
    trial_command: str
    code_dir: str  # absolute
    concurrency: int = 1
    max_trials: int = 10
    max_duration_s: float | None = None
    tuner: Algorithm = field(default_factory=lambda: Algorithm("TPE"))
    assessor: Algorithm | None = None
    metric: str = "default"  # which key of a dict metric is the objective
    mode: str = "maximize"
    project: str | None = None
    backend: str = "local"  # or "kubernetes": a Katib Experiment the service runs
    image: str | None = None  # the trials' container image (kubernetes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> ExperimentSpec:
        data = dict(data)
        data.pop("cluster", None)  # where a cluster experiment runs: the record's, not the spec's
        data["tuner"] = Algorithm(**data["tuner"])
        data["assessor"] = Algorithm(**data["assessor"]) if data.get("assessor") else None
        return cls(**data)


def duration_s(value: Any, where: str = "maxExperimentDuration") -> float | None:
    if value in (None, ""):
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", str(value))
    if not match:
        raise InvalidInput(
            _t("{where}: {value!r} is not a duration", where=where, value=value),
            _t("Write e.g. 90s, 30m, 2h, 1d."),
        )
    return float(match.group(1)) * _UNITS[match.group(2)]


def _positive_int(data: dict[str, Any], key: str, default: int) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(
            _t("{key} must be a whole number of at least 1", key=key), {"got": value}
        )
    return value


def _algorithm(raw: Any, key: str, known: dict[str, Any]) -> Algorithm | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = {"name": raw}
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise InvalidInput(_t("{key} must be an object with a name", key=key), {"got": raw})
    name = raw["name"]
    match = next((k for k in known if k.lower() == name.lower()), None)
    if match is None:
        raise InvalidInput(
            _t("{key}: unknown {key} {name!r}", key=key, name=name),
            _t("Use one of: {value}.", value=", ".join(known)),
        )
    args = raw.get("classArgs") or {}
    if not isinstance(args, dict):
        raise InvalidInput(_t("{key}.classArgs must be an object", key=key), {"got": args})
    return Algorithm(match, dict(args))


def parse(data: Any, base_dir: Path) -> ExperimentSpec:
    """A spec from a parsed NNI config; relative paths start at ``base_dir``."""
    if not isinstance(data, dict):
        raise InvalidInput(
            _t("an experiment config must be a mapping"), {"got": type(data).__name__}
        )
    unknown = sorted(set(data) - _KNOWN)
    if unknown:
        raise InvalidInput(
            _t("unknown config fields {unknown}", unknown=unknown),
            _t("Known: {value}.", value=", ".join(sorted(_KNOWN))),
        )
    if "searchSpace" in data and "searchSpaceFile" in data:
        raise InvalidInput(_t("give searchSpace or searchSpaceFile, not both"))
    if "searchSpaceFile" in data:
        path = (base_dir / str(data["searchSpaceFile"])).resolve()
        try:
            space = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise InvalidInput(
                _t("searchSpaceFile {value!r} cannot be read", value=str(path)), str(exc)
            ) from None
    else:
        space = data.get("searchSpace")
    searchspace.check(space)
    command = data.get("trialCommand")
    if not isinstance(command, str) or not command.strip():
        raise InvalidInput(
            _t("trialCommand is required"), _t("e.g. trialCommand: python3 trial.py")
        )
    try:
        shlex.split(command)
    except ValueError as exc:
        raise InvalidInput(_t("trialCommand: {exc}", exc=exc)) from None
    code_dir = (base_dir / str(data.get("trialCodeDirectory") or ".")).resolve()
    if not code_dir.is_dir():
        raise InvalidInput(_t("trialCodeDirectory {value!r} is not a folder", value=str(code_dir)))
    tuner = _algorithm(data.get("tuner") or {"name": "TPE"}, "tuner", TUNERS)
    assert tuner is not None
    assessor = _algorithm(data.get("assessor"), "assessor", ASSESSORS)
    objective = data.get("objective") or {}
    if not isinstance(objective, dict):
        raise InvalidInput(_t("objective must be an object {{metric, mode}}"), {"got": objective})
    mode = objective.get("mode") or tuner.class_args.get("optimize_mode") or "maximize"
    if mode not in _MODES:
        raise InvalidInput(_t("objective mode {mode!r} must be maximize or minimize", mode=mode))
    platform = (data.get("trainingService") or {}).get("platform", "local")
    if platform != "local":
        raise InvalidInput(
            _t("trainingService.platform {platform!r} runs on a cluster", platform=platform),
            _t("Use --backend kubernetes --dry-run for a Katib Experiment; locally use 'local'."),
        )
    return ExperimentSpec(
        name=str(data.get("experimentName") or code_dir.name),
        search_space=space,
        trial_command=command.strip(),
        code_dir=str(code_dir),
        concurrency=_positive_int(data, "trialConcurrency", 1),
        max_trials=_positive_int(data, "maxTrialNumber", 10),
        max_duration_s=duration_s(data.get("maxExperimentDuration")),
        tuner=tuner,
        assessor=assessor,
        metric=str(objective.get("metric") or "default"),
        mode=mode,
        project=data.get("project"),
    )
