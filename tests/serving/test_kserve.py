"""KServe InferenceService manifests checked against the real CRD schema (tests/data/crds),
strictly: a field the CRD does not know fails, as `kubectl apply --validate=strict` would."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from cube_lab import cli
from cube_lab.errors import InvalidInput
from cube_lab.identity import Caller
from cube_lab.serving import kserve

CRD = Path(__file__).parents[1] / "data" / "crds" / "serving.kserve.io_inferenceservices.yaml"


def _strict(schema: Any) -> Any:
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@functools.cache
def validator() -> tuple[str, jsonschema.Draft4Validator]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load(CRD.read_text(), Loader=loader)
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    api = f"{crd['spec']['group']}/{version['name']}"
    return api, jsonschema.Draft4Validator(_strict(version["schema"]["openAPIV3Schema"]))


def check(doc: dict[str, Any]) -> None:
    api, v = validator()
    assert doc["apiVersion"] == api == "serving.kserve.io/v1beta1"
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(doc)]
    assert not errors, errors


def test_a_plain_sklearn_service_validates() -> None:
    doc = kserve.inference_service("Iris_RF", "sklearn", "s3://models/iris/3")
    check(doc)
    predictor = doc["spec"]["predictor"]
    assert doc["metadata"]["name"] == "iris-rf"
    assert predictor["model"] == {
        "modelFormat": {"name": "sklearn"},
        "protocolVersion": "v2",
        "storageUri": "s3://models/iris/3",
    }
    assert predictor["minReplicas"] == 1


def test_replicas_canary_and_gpu_resources_validate() -> None:
    doc = kserve.inference_service(
        "llm",
        "transformers",
        "pvc://cube-lab-artifacts/models/4/2/model",
        namespace="team-a",
        min_replicas=2,
        max_replicas=6,
        canary_percent=10,
        cpu="4",
        memory="16Gi",
        gpus=1,
        gpu_type="hami-vgpu",
    )
    check(doc)
    predictor = doc["spec"]["predictor"]
    assert (predictor["minReplicas"], predictor["maxReplicas"]) == (2, 6)
    assert predictor["canaryTrafficPercent"] == 10
    assert predictor["model"]["modelFormat"]["name"] == "huggingface"
    limits = predictor["model"]["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == "1" and limits["memory"] == "16Gi"
    ascend = kserve.inference_service("npu", "onnx", "s3://m", gpus=2, gpu_type="ascend-910b")
    check(ascend)
    assert (
        "tolerations" in ascend["spec"]["predictor"]
        or "nodeSelector" in ascend["spec"]["predictor"]
    )


def test_bad_requests_say_what_is_wrong() -> None:
    with pytest.raises(InvalidInput, match="no serving runtime for flavor 'generic'"):
        kserve.inference_service("x", "generic", "s3://m")
    with pytest.raises(InvalidInput, match="min_replicas <= max_replicas"):
        kserve.inference_service("x", "sklearn", "s3://m", min_replicas=3, max_replicas=2)
    with pytest.raises(InvalidInput, match="canary percent"):
        kserve.inference_service("x", "sklearn", "s3://m", canary_percent=120)


def test_cli_dry_run_prints_the_manifest_of_a_registered_version(
    ws: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "model.joblib"
    model.write_bytes(b"not really a model: only its path and flavor matter here")
    ws.registry.register(Caller(cli.local_username()), name="iris", path=model)
    code = cli.main(
        [
            "--data-dir",
            str(ws.settings.data_dir),
            "deploy",
            "iris:1",
            "--backend",
            "kubernetes",
            "--dry-run",
            "--max-replicas",
            "3",
            "--gpus",
            "1",
        ]
    )
    assert code == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    check(doc)
    model_spec = doc["spec"]["predictor"]["model"]
    assert model_spec["modelFormat"]["name"] == "sklearn"
    assert model_spec["storageUri"].startswith("pvc://cube-lab-artifacts/models/")
    assert model_spec["storageUri"].endswith("/1/model.joblib")
    assert doc["metadata"]["labels"]["cube-lab/version"] == "1"
