"""The Open Inference Protocol as real clients speak it, against real local deployments (the
router in front of the model servers): tritonclient and the KServe SDK in their default binary
modes (the binary tensor extension), MLServer's request codecs (``pd``, ``str``, ``base64``),
metadata that matches the answers, the request ``id``, and both servers' output names."""

from __future__ import annotations

import base64
import http.client
import json
import struct
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from serving_util import stop_serving

from cube_lab.config import Settings
from cube_lab.identity import Caller
from cube_lab.workspace import Workspace

httpclient = pytest.importorskip("tritonclient.http", reason="pip install tritonclient[http]")

ALICE = Caller("alice")
REPO = Path(__file__).resolve().parents[2]
KSERVE_PY = REPO / "benchmarks" / ".peers" / "kserve" / "bin" / "python"
KSERVE_SETUP = (
    "python3 -m venv benchmarks/.peers/kserve && "
    "benchmarks/.peers/kserve/bin/pip install kserve==0.21.0"
)
COLUMNS = ["sepal_length", "sepal_width", "petal_length", "petal_width"]

# a custom model that answers each input as an output of the same name: every datatype both ways
ECHO = textwrap.dedent(
    """
    import numpy as np

    class Predictor:
        def __init__(self, path):
            pass

        def predict(self, inputs):
            return {f"{name}_out": np.asarray(value) for name, value in inputs.items()}
    """
)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    import pandas as pd
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    root = tmp_path_factory.mktemp("oip")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root))
        mp.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        ws = Workspace.open(Settings.resolve(root / "cube-data"))
        x, y = load_iris(return_X_y=True)
        names = np.array(["setosa", "versicolor", "virginica"])
        forest = RandomForestClassifier(n_estimators=10, random_state=0).fit(x, y)
        frame = pd.DataFrame(x, columns=COLUMNS)
        named = LogisticRegression(max_iter=500).fit(frame, names[y])
        texts = ["good fine great", "bad awful poor", "great good", "poor bad"] * 3
        labels = ["pos", "neg", "pos", "neg"] * 3
        text = make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(texts, labels)
        echo = root / "echo"
        echo.mkdir()
        (echo / "predictor.py").write_text(ECHO)
        ws.registry.register(ALICE, name="iris", obj=forest)
        ws.registry.register(ALICE, name="named", obj=named)
        ws.registry.register(ALICE, name="text", obj=text)
        ws.registry.register(ALICE, name="echo", path=echo, flavor="generic")
        try:
            ports = {}
            for model in ("iris", "named", "text", "echo"):
                dep = ws.serving.deploy(ALICE, f"{model}:1", name=f"{model}-oip")
                assert dep.status == "running" and dep.endpoint, dep
                ports[model] = dep.endpoint.removeprefix("http://")
            yield {
                "ports": ports,
                "x": x,
                "forest": forest,
                "frame": frame,
                "named": named,
                "text": text,
            }
        finally:
            stop_serving(ws, ALICE)
            ws.close()


def client(d: dict[str, Any], model: str) -> Any:
    return httpclient.InferenceServerClient(url=d["ports"][model])


def post(d: dict[str, Any], model: str, body: Any) -> tuple[int, Any]:
    host, port = d["ports"][model].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request(
            "POST", f"/v2/models/{model}/infer", json.dumps(body), {"Content-Type": "x/json"}
        )
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


# -- the binary tensor extension -----------------------------------------------------------------


def test_tritonclient_default_binary_mode(deployed: dict[str, Any]) -> None:
    x, forest = deployed["x"], deployed["forest"]
    rows = x[[0, 60, 120, 7]]
    c = client(deployed, "iris")
    try:
        inp = httpclient.InferInput("input-0", list(rows.shape), "FP64")
        inp.set_data_from_numpy(rows)  # binary_data=True: tritonclient's default
        outputs = [
            httpclient.InferRequestedOutput("predict"),  # binary_data=True by default
            httpclient.InferRequestedOutput("predict_proba"),
        ]
        result = c.infer("iris", [inp], outputs=outputs)
        for name in ("predict", "predict_proba"):  # the answer came as binary data
            assert "data" not in result.get_output(name)
            assert result.get_output(name)["parameters"]["binary_data_size"] > 0
        assert result.as_numpy("predict").tolist() == forest.predict(rows).tolist()
        assert np.array_equal(result.as_numpy("predict_proba"), forest.predict_proba(rows))
        # no outputs named: tritonclient asks binary_data_output for all of them
        plain = c.infer("iris", [inp])
        assert plain.as_numpy("predict").tolist() == forest.predict(rows).tolist()
        # FP32 and INT64 inputs, binary, as other clients send them
        for dtype, name in ((np.float32, "FP32"), (np.int64, "INT64")):
            typed = rows.astype(dtype)
            inp = httpclient.InferInput("input-0", list(typed.shape), name)
            inp.set_data_from_numpy(typed)
            got = c.infer("iris", [inp]).as_numpy("predict")
            assert got.tolist() == forest.predict(typed).tolist()
    finally:
        c.close()


@pytest.mark.parametrize(
    "datatype, values",
    [
        ("FP32", np.array([[1.5, -2.25], [3.0, 1e-7]], dtype=np.float32)),
        ("FP64", np.array([0.1, -1e300, 2.5], dtype=np.float64)),
        ("INT8", np.array([-128, 0, 127], dtype=np.int8)),
        ("INT16", np.array([-32768, 7], dtype=np.int16)),
        ("INT32", np.array([[-(2**31), 2**31 - 1]], dtype=np.int32)),
        ("INT64", np.array([-(2**63), 2**63 - 1, 0], dtype=np.int64)),
        ("UINT8", np.array([0, 255], dtype=np.uint8)),
        ("UINT64", np.array([2**64 - 1], dtype=np.uint64)),
        ("BOOL", np.array([[True, False, True]], dtype=np.bool_)),
        ("BYTES", np.array([b"caf\xc3\xa9", b"", b"a,b\x00c"], dtype=np.object_)),
    ],
)
def test_every_datatype_round_trips_binary_both_ways(
    deployed: dict[str, Any], datatype: str, values: np.ndarray
) -> None:
    c = client(deployed, "echo")
    try:
        for binary_in in (True, False):
            inp = httpclient.InferInput("t", list(values.shape), datatype)
            inp.set_data_from_numpy(values, binary_data=binary_in)
            for binary_out in (True, False):
                out = httpclient.InferRequestedOutput("t_out", binary_data=binary_out)
                result = c.infer("echo", [inp], outputs=[out])
                got = result.as_numpy("t_out")
                assert result.get_output("t_out")["datatype"] == datatype
                assert got.shape == values.shape
                assert ("data" in result.get_output("t_out")) is not binary_out
                if datatype == "BYTES":
                    assert [bytes(v) if binary_out else v for v in got.ravel()] == [
                        v if binary_out else v.decode() for v in values.ravel()
                    ]
                else:
                    assert got.dtype == values.dtype and np.array_equal(got, values)
    finally:
        c.close()


def raw_infer(d: dict[str, Any], model: str, body: bytes, header: str) -> tuple[int, Any]:
    host, port = d["ports"][model].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        headers = {"Inference-Header-Content-Length": header}
        conn.request("POST", f"/v2/models/{model}/infer", body, headers)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_malformed_binary_requests_are_400_with_a_reason(deployed: dict[str, Any]) -> None:
    def request(size: int, datatype: str = "FP64", shape: list[int] | None = None) -> bytes:
        item = {"name": "t", "shape": shape or [2], "datatype": datatype}
        item["parameters"] = {"binary_data_size": size}
        return json.dumps({"inputs": [item]}).encode()

    head = request(16)
    good = head + struct.pack("<2d", 1.0, 2.0)
    assert raw_infer(deployed, "echo", good, str(len(head)))[0] == 200
    cases = [
        (good, "abc", "must be the length"),
        (good, str(len(good) + 1), "must be the length"),
        (head + b"\0" * 8, str(len(head)), "goes past the end"),
        (head + b"\0" * 24, str(len(head)), "bytes after the inputs"),
    ]
    odd = request(12)
    cases.append((odd + b"\0" * 12, str(len(odd)), "not a whole number of FP64"))
    cut = request(6, "BYTES", [1])
    cases.append((cut + struct.pack("<I", 9) + b"ab", str(len(cut)), "goes past"))
    for body, header, words in cases:
        status, answer = raw_infer(deployed, "echo", body, header)
        assert status == 400 and words in answer["error"], (header, answer)
        assert answer["detail"]


# -- metadata, id, output names -------------------------------------------------------------


def test_metadata_datatypes_match_the_answers(deployed: dict[str, Any]) -> None:
    x = deployed["x"][:3]
    for model, frame in (("iris", False), ("named", True)):
        c = client(deployed, model)
        try:
            meta = {o["name"]: o["datatype"] for o in c.get_model_metadata(model)["outputs"]}
            if frame:
                inputs = []
                for i, col in enumerate(COLUMNS):
                    inp = httpclient.InferInput(col, [3], "FP64")
                    inp.set_data_from_numpy(x[:, i].copy())
                    inputs.append(inp)
                params = {"content_type": "pd"}
                result = c.infer(model, inputs, parameters=params)
            else:
                inp = httpclient.InferInput("input-0", list(x.shape), "FP64")
                inp.set_data_from_numpy(x)
                result = c.infer(model, [inp])
            assert result.get_output("predict")["datatype"] == meta["predict"]
        finally:
            c.close()
    assert meta["predict"] == "BYTES"  # string labels


def test_request_id_must_be_a_string(deployed: dict[str, Any]) -> None:
    rows = deployed["x"][:1]
    body = {"inputs": [{"name": "input-0", "shape": [1, 4], "datatype": "FP64"}]}
    body["inputs"][0]["data"] = rows.ravel().tolist()
    status, answer = post(deployed, "iris", {**body, "id": "req-7"})
    assert status == 200 and answer["id"] == "req-7"
    for bad in (7, 1.5, ["a"]):
        status, answer = post(deployed, "iris", {**body, "id": bad})
        assert status == 400 and "'id' must be a string" in answer["error"], answer


def test_both_servers_default_output_names(deployed: dict[str, Any]) -> None:
    x, forest = deployed["x"], deployed["forest"]
    body = {
        "inputs": [{"name": "input-0", "shape": [3, 4], "datatype": "FP64", "data": x[:3].tolist()}]
    }
    want = forest.predict(x[:3]).tolist()
    for name in ("predict", "output-0"):  # MLServer's name, KServe's sklearn server's name
        status, answer = post(deployed, "iris", {**body, "outputs": [{"name": name}]})
        assert status == 200, answer
        assert [o["name"] for o in answer["outputs"]] == [name]
        assert answer["outputs"][0]["data"] == want
    status, answer = post(deployed, "iris", {**body, "outputs": [{"name": "output-1"}]})
    assert status == 400 and "unknown output" in answer["error"]


# -- MLServer's request codecs -------------------------------------------------------------------


def test_pd_content_type_is_a_dataframe_of_named_columns(deployed: dict[str, Any]) -> None:
    frame, named = deployed["frame"], deployed["named"]
    rows = frame.iloc[[0, 55, 140]]
    inputs = [
        {"name": col, "shape": [3], "datatype": "FP64", "data": rows[col].tolist()}
        for col in COLUMNS
    ]
    body = {"parameters": {"content_type": "pd"}, "inputs": inputs}
    status, answer = post(deployed, "named", body)
    assert status == 200, answer
    assert answer["outputs"][0]["data"] == named.predict(rows).tolist()
    # columns in another order than the model was fit on: scikit-learn's refusal, as MLServer
    status, answer = post(deployed, "named", {**body, "inputs": inputs[::-1]})
    assert status == 400 and "feature names" in answer["error"], answer
    # [n, 1] columns, as MLServer's PandasCodec writes them, work too
    tall = [{**i, "shape": [3, 1]} for i in inputs]
    assert post(deployed, "named", {**body, "inputs": tall})[0] == 200
    bad = [{**inputs[0], "shape": [1, 3]}, *inputs[1:]]
    status, answer = post(deployed, "named", {**body, "inputs": bad})
    assert status == 400 and "shape [n] or [n, 1]" in answer["error"]
    # without content_type, four inputs are still four tensors for one model input
    status, answer = post(deployed, "named", {"inputs": inputs})
    assert status == 400 and "one input tensor" in answer["error"]


def test_str_and_base64_content_types(deployed: dict[str, Any]) -> None:
    text = deployed["text"]
    sentences = ["good great", "awful poor bad"]
    body = {
        "parameters": {"content_type": "str"},
        "inputs": [{"name": "text", "shape": [2], "datatype": "BYTES", "data": sentences}],
    }
    status, answer = post(deployed, "text", body)
    assert status == 200, answer
    assert answer["outputs"][0]["data"] == text.predict(sentences).tolist()
    # the same strings as binary BYTES through tritonclient
    c = client(deployed, "text")
    try:
        inp = httpclient.InferInput("text", [2], "BYTES")
        inp.set_data_from_numpy(np.array(sentences, dtype=object))
        got = c.infer("text", [inp], parameters={"content_type": "str"}).as_numpy("predict")
        assert [v.decode() for v in got] == text.predict(sentences).tolist()
    finally:
        c.close()
    # base64 on an input: the model gets the decoded bytes
    blob = "héllo wörld"
    encoded = base64.b64encode(blob.encode()).decode()
    body = {
        "inputs": [
            {
                "name": "b",
                "shape": [1],
                "datatype": "BYTES",
                "data": [encoded],
                "parameters": {"content_type": "base64"},
            }
        ]
    }
    status, answer = post(deployed, "echo", body)
    assert status == 200 and answer["outputs"][0]["data"] == [blob], answer
    body["inputs"][0]["parameters"]["content_type"] = "yaml"
    status, answer = post(deployed, "echo", body)
    assert status == 400 and "unknown content_type 'yaml'" in answer["error"]
    assert "base64" in answer["detail"]


# -- the KServe SDK --------------------------------------------------------------------------

KSERVE_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    import numpy as np
    from kserve import InferenceRESTClient, InferInput, InferRequest, RESTConfig
    from kserve.protocol.infer_type import RequestedOutput

    async def main(url, rows, binary_out):
        client = InferenceRESTClient(RESTConfig(protocol="v2"))
        inp = InferInput("input-0", list(rows.shape), "FP64")
        inp.set_data_from_numpy(rows)  # binary_data=True: the SDK's default
        outputs = None
        if binary_out:
            outputs = [RequestedOutput("predict", {"binary_data": True}),
                       RequestedOutput("predict_proba", {"binary_data": True})]
        req = InferRequest("iris", [inp], request_id="k-1", request_outputs=outputs)
        res = await client.infer(url, req, model_name="iris")
        return {o.name: [o.datatype, o.as_numpy().tolist()] for o in res.outputs}, res.id

    rows = np.array(json.loads(sys.argv[2]), dtype=np.float64)
    out = {}
    for binary_out in (False, True):
        out[str(binary_out)] = asyncio.run(main(sys.argv[1], rows, binary_out))
    print(json.dumps(out))
    """
)


@pytest.mark.skipif(not KSERVE_PY.exists(), reason=f"the KServe SDK's venv: {KSERVE_SETUP}")
def test_kserve_sdk_v2_rest_client_default_mode(deployed: dict[str, Any]) -> None:
    x, forest = deployed["x"], deployed["forest"]
    rows = x[[3, 70, 110]]
    run = subprocess.run(
        [
            str(KSERVE_PY),
            "-c",
            KSERVE_SCRIPT,
            f"http://{deployed['ports']['iris']}",
            json.dumps(rows.tolist()),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    answers = json.loads(run.stdout.strip().splitlines()[-1])
    for binary_out in ("False", "True"):
        outputs, rid = answers[binary_out]
        assert rid == "k-1"
        assert outputs["predict"] == ["INT64", forest.predict(rows).tolist()]
        if binary_out == "True":
            assert np.array_equal(outputs["predict_proba"][1], forest.predict_proba(rows))


def test_a_big_binary_request_is_answered_off_the_loop_in_binary() -> None:
    """Over OFFLOOP_BYTES the model server parses and answers on its worker thread; the binary
    extension takes that path too (in process: no deployment needed)."""
    import asyncio

    from sklearn.linear_model import LinearRegression

    from cube_lab.serving.http import Request
    from cube_lab.serving.loaders import SklearnPredictor
    from cube_lab.serving.server import OFFLOOP_BYTES, ModelApp

    rng = np.random.default_rng(0)
    model = LinearRegression().fit(rng.random((20, 4)), rng.random(20))
    app = ModelApp("r", "1", SklearnPredictor(model))
    assert app.metadata["outputs"][0]["datatype"] == "FP64"  # a regressor predicts floats
    rows = rng.random((40000, 4))
    item = {"name": "input-0", "shape": list(rows.shape), "datatype": "FP64"}
    item["parameters"] = {"binary_data_size": rows.nbytes}
    asked = [{"name": "output-0", "parameters": {"binary_data": True}}]
    head = json.dumps({"inputs": [item], "outputs": asked}).encode()
    body = head + rows.tobytes()
    assert len(body) >= OFFLOOP_BYTES
    path = "/v2/models/r/infer"
    headers = {"inference-header-content-length": str(len(head))}
    resp = asyncio.run(app.infer(Request("POST", path, "", headers, body, True, path)))
    length = int(dict(resp.headers)["Inference-Header-Content-Length"])
    (out,) = json.loads(resp.body[:length])["outputs"]
    assert resp.status == 200 and out["parameters"]["binary_data_size"] == 8 * len(rows)
    assert np.array_equal(np.frombuffer(resp.body[length:]), model.predict(rows))
