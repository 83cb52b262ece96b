"""Katib Experiment manifests, checked against Katib's own OpenAPI; the trial shim runs
unchanged NNI code and prints what Katib's StdOut collector reads. No cluster runs here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from cube_lab.errors import InvalidInput
from cube_lab.tuning import katib
from cube_lab.tuning.katib_trial import metric_lines
from cube_lab.tuning.spec import parse

SWAGGER = Path(__file__).parents[1] / "data" / "crds" / "katib_v1beta1_swagger.json"


def _strict(schema: Any, defs: dict[str, Any]) -> Any:
    """Inline Katib's $refs (unknown ones, e.g. core/v1 types, accept anything) and refuse
    unknown fields, so a misspelt field fails."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            target = defs.get(schema["$ref"].rsplit("/", 1)[-1])
            return _strict(target, defs) if target else {}
        out = {k: _strict(v, defs) for k, v in schema.items()}
        if "properties" in out:
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(schema, list):
        return [_strict(v, defs) for v in schema]
    return schema


def check(doc: dict[str, Any]) -> None:
    defs = json.loads(SWAGGER.read_text())["definitions"]
    schema = _strict(defs["v1beta1.Experiment"], defs)
    schema["properties"]["metadata"] = {"type": "object"}
    errors = [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
        for e in jsonschema.Draft4Validator(schema).iter_errors(doc)
    ]
    assert not errors, errors
    job = doc["spec"]["trialTemplate"]["trialSpec"]
    kubernetes_validate.validate(job, "1.30.0", strict=True)


def config(tmp_path: Path, **extra: Any) -> Any:
    (tmp_path / "trial.py").write_text("import nni\n")
    cfg = {
        "experimentName": "Digits SVC",
        "searchSpace": {
            "C": {"_type": "loguniform", "_value": [0.01, 100]},
            "kernel": {"_type": "choice", "_value": ["rbf", "linear"]},
            "layers": {"_type": "randint", "_value": [1, 5]},
            "lr": {"_type": "quniform", "_value": [0.1, 1.0, 0.1]},
        },
        "trialCommand": "python3 trial.py --epochs 3",
        "trialConcurrency": 3,
        "maxTrialNumber": 12,
        "tuner": {"name": "TPE", "classArgs": {"optimize_mode": "maximize"}},
        "assessor": {"name": "Medianstop", "classArgs": {"start_step": 2}},
        **extra,
    }
    return parse(cfg, tmp_path)


def test_an_experiment_manifest_validates(tmp_path: Path) -> None:
    doc = katib.experiment(config(tmp_path), namespace="team-a", image="registry/trial:1")
    check(doc)
    spec = doc["spec"]
    assert doc["metadata"] == {
        "name": "digits-svc",
        "namespace": "team-a",
        "labels": {"app.kubernetes.io/managed-by": "cube-lab"},
    }
    assert spec["algorithm"]["algorithmName"] == "tpe"
    assert spec["objective"]["type"] == "maximize"
    assert spec["parallelTrialCount"] == 3 and spec["maxTrialCount"] == 12
    params = {p["name"]: p for p in spec["parameters"]}
    log_uniform = {"min": "0.01", "max": "100", "distribution": "logUniform"}
    assert params["C"]["feasibleSpace"] == log_uniform
    assert params["kernel"]["feasibleSpace"]["list"] == ["rbf", "linear"]
    assert params["layers"] == {
        "name": "layers",
        "parameterType": "int",
        "feasibleSpace": {"min": "1", "max": "4"},  # NNI's randint upper bound is exclusive
    }
    assert params["lr"]["feasibleSpace"]["step"] == "0.1"
    container = spec["trialTemplate"]["trialSpec"]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry/trial:1"
    assert "--param=C=${trialParameters.C}" in container["command"]
    assert container["command"][-3:] == ["trial.py", "--epochs", "3"]
    assert spec["earlyStopping"]["algorithmName"] == "medianstop"


def test_what_katib_cannot_express_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="Katib has no Anneal"):
        katib.experiment(config(tmp_path, tuner={"name": "Anneal"}))
    with pytest.raises(InvalidInput, match="Katib has no Curvefitting"):
        katib.experiment(config(tmp_path, assessor={"name": "Curvefitting"}))
    bad = config(tmp_path, searchSpace={"w": {"_type": "normal", "_value": [0, 1]}})
    with pytest.raises(InvalidInput, match=r"searchSpace\.w: Katib needs bounds"):
        katib.experiment(bad)


def test_the_trial_shim_runs_nni_code_and_prints_katib_metrics(tmp_path: Path) -> None:
    (tmp_path / "trial.py").write_text(
        "import nni\n"
        "p = nni.get_next_parameter()\n"
        "print('got', p['lr'], p['kernel'])\n"
        "nni.report_intermediate_result(p['lr'] * 2)\n"
        "nni.report_final_result({'default': p['lr'] * 3, 'loss': 0.5})\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "cube_lab.tuning.katib_trial", "--param=lr=0.5",
         "--param=kernel=rbf", "--", "trial.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert "got 0.5 rbf" in lines
    assert lines[-3:] == ["default=1.0", "default=1.5", "loss=0.5"]
    assert metric_lines("plain output") == []


async def test_cli_creates_and_follows_a_katib_experiment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio
    import time

    import yaml
    from k8s_mock import api_server

    from cube_lab.cli import main

    (tmp_path / "trial.py").write_text("import nni\n")
    cfg = {
        "experimentName": "lr-search",
        "searchSpace": {"lr": {"_type": "loguniform", "_value": [0.001, 0.1]}},
        "trialCommand": "python3 trial.py",
        "maxTrialNumber": 4,
        "trialConcurrency": 2,
        "tuner": {"name": "Random", "classArgs": {"optimize_mode": "maximize"}},
    }
    (tmp_path / "config.yml").write_text(yaml.safe_dump(cfg))
    url = "/apis/kubeflow.org/v1beta1/namespaces/ml/experiments/lr-search"
    async with api_server() as km:
        monkeypatch.setenv("CUBE_LAB_K8S_HOST", str(km.url))
        monkeypatch.setenv("CUBE_LAB_K8S_TOKEN", "t0k")
        argv = ["tune", str(tmp_path / "config.yml"), "--backend", "kubernetes"]
        argv += ["--namespace", "ml", "--image", "reg/trial:2", "--json"]
        cli = asyncio.create_task(asyncio.to_thread(main, argv))
        deadline = time.monotonic() + 30
        while not any(k[2] == "lr-search" for k in km.objects) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        created = next(v for k, v in km.objects.items() if k[2] == "lr-search")
        check(created.raw)  # what reached the API server is a valid Katib Experiment
        running = {"conditions": [{"type": "Running", "status": "True"}], "trials": 2}
        assert (await km.patch(url, json={"status": running})).status == 200
        seen = ""
        while "running  trials 2" not in seen and time.monotonic() < deadline + 30:
            seen += capsys.readouterr().err  # the follower reports what it watched
            await asyncio.sleep(0.05)
        done = {
            "conditions": [
                {"type": "Running", "status": "False"},
                {"type": "Succeeded", "status": "True", "reason": "MaxTrialsReached"},
            ],
            "trials": 4,
            "trialsSucceeded": 4,
            "currentOptimalTrial": {
                "bestTrialName": "lr-search-abc",
                "parameterAssignments": [{"name": "lr", "value": "0.0123"}],
                "observation": {"metrics": [{"name": "default", "latest": "0.91"}]},
            },
        }
        assert (await km.patch(url, json={"status": done})).status == 200
        assert await asyncio.wait_for(cli, 30) == 0
    out, err = capsys.readouterr()
    result = json.loads(out[out.index("{") :])
    assert "running  trials 2" in seen and "done     trials 4" in err
    assert result["status"] == "done" and result["trials"] == 4
    assert result["best"] == {
        "trial": "lr-search-abc",
        "parameters": {"lr": 0.0123},
        "metric": 0.91,
    }
