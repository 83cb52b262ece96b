"""Schemathesis against the served OpenAPI (/cube/api/v1/openapi.json) of a real jupyter server.

The server is seeded with one of each kind of object (a registered model with two versions and
an alias, a running local deployment of a small scikit-learn model, a finished pipeline run
and a schedule, a finished training job, an image dataset and a labeling project with tasks).
Path parameters are either generated or, for half of the cases, the seeded objects' names and
ids, so the fuzzed queries and bodies reach real objects too. Every operation gets a bounded
number of cases from a fixed seed; any 5xx fails (``not_a_server_error``), and so does an
answer that does not match the documented response schema.

``CUBE_FUZZ_EXAMPLES`` (10) sets the number of generated cases per operation and ``CUBE_FUZZ_SEED``
(15) the seed, for a longer or a different run; ``CUBE_FUZZ_LOG=FILE`` writes every request,
status and time there.
"""

from __future__ import annotations

import collections
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
import requests
import schemathesis
from labeling_util import make_images
from pipeline_util import node, write_pipeline
from schemathesis import engine
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import Status, events

TOKEN = "fuzz-token"
USER = "fuzzer"
SEED = int(os.environ.get("CUBE_FUZZ_SEED", "15"))
MAX_EXAMPLES = int(os.environ.get("CUBE_FUZZ_EXAMPLES", "10"))
HEADERS = {"Authorization": f"token {TOKEN}"}

# Operations that remove or stop what the others need keep generated (unknown) names: a
# seeded deployment, model or project must outlive the run. Re-runs launch new processes.
_KEEP_GENERATED = ("DELETE", "/stop", "/cancel", "/rerun", "/resume")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    url: str
    seeded: dict[str, str] = field(default_factory=dict)
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    statuses: collections.Counter[int] = field(default_factory=collections.Counter)
    checks: collections.Counter[str] = field(default_factory=collections.Counter)

    def api(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(
            method, f"{self.url}/cube/api/v1/{path}", headers=HEADERS, timeout=120, **kwargs
        )

    def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        resp = self.api(method, path, **kwargs)
        assert resp.status_code < 300, (method, path, resp.status_code, resp.text)
        return resp.json() if resp.content else None

    def wait(self, path: str, done: tuple[str, ...], timeout: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            found = self.ok("GET", path)
            if found["status"] in done or time.monotonic() > deadline:
                return found
            time.sleep(0.3)


def _start(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    root = tmp / "root"
    root.mkdir()
    env = {**os.environ, "CUBE_LAB_USER": USER}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "server", f"--port={port}", "--ip=127.0.0.1",
         f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={TOKEN}",
         "--ServerApp.allow_root=True", "--no-browser", f"--CubeLab.data_dir={tmp / 'data'}"],
        env=env, stdout=subprocess.DEVNULL, stderr=open(tmp / "server.log", "wb"),
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            if requests.get(f"{url}/api/status", headers=HEADERS, timeout=2).ok:
                return proc, url
        except requests.ConnectionError:
            pass
        assert proc.poll() is None, (tmp / "server.log").read_text()
        time.sleep(0.3)
    raise AssertionError("the jupyter server did not come up")


def _seed(served: Served, root: Path) -> None:
    import joblib
    from sklearn.datasets import load_iris
    from sklearn.tree import DecisionTreeClassifier

    x, y = load_iris(return_X_y=True)
    (root / "models").mkdir()
    joblib.dump(
        DecisionTreeClassifier(max_depth=2, random_state=0).fit(x, y), root / "models/iris.joblib"
    )
    body = {"name": "iris", "path": "models/iris.joblib", "aliases": ["staging"]}
    served.ok("POST", "models", json=body)
    # v2's file name holds a newline and a quote: its download must still name it (RFC 6266)
    odd = 'iris "v2"\nfinal.joblib'
    (root / "models" / odd).write_bytes((root / "models/iris.joblib").read_bytes())
    served.ok("POST", "models", json={"name": "iris", "path": f"models/{odd}"})
    deployment = served.ok("POST", "deployments", json={"model": "iris:1"})
    assert deployment["status"] == "running", deployment

    (root / "hello.py").write_text("print('hello')\n")
    write_pipeline(root, [node("hello", filename="hello.py")])
    run = served.ok("POST", "pipelines/runs", json={"path": "p.pipeline"})
    served.wait(f"pipelines/runs/{run['id']}", ("succeeded", "failed"))
    schedule = served.ok(
        "POST", "pipelines/schedules", json={"path": "p.pipeline", "cron": "0 0 1 1 *"}
    )

    (root / "train.py").write_text("print('loss=0.5', flush=True)\n")
    job = served.ok("POST", "training/jobs", json={"framework": "plain", "script": "train.py"})
    served.wait(f"training/jobs/{job['id']}", ("succeeded", "failed"))

    make_images(root / "pics", 3)
    served.ok("POST", "datasets", json={"name": "iris", "path": "pics"})
    labels = {"name": "iris", "dataset": "iris", "type": "image-class", "labels": ["a", "b"]}
    served.ok("POST", "labeling", json=labels)
    task = served.ok("POST", f"projects/{USER}/labeling/iris/next")

    served.seeded.update(
        project=USER,
        name="iris",
        version="2",
        alias="staging",
        username=USER,
        run_id=str(run["id"]),
        node_id="hello",
        schedule_id=str(schedule["id"]),
        job_id=str(job["id"]),
        task_id=str(task["id"]),
        item_id=str(task["item"]["id"]),
    )


@pytest.fixture
def served(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Served]:
    started = time.monotonic()
    proc, url = _start(tmp_path)
    served = Served(url)
    try:
        _seed(served, tmp_path / "root")
        seeded_s = time.monotonic() - started
        yield served
    finally:
        # the fuzzer may have deployed more than the seeded one
        deployments = served.api("GET", "deployments").json().get("deployments", [])
        undeployed = [
            served.api("DELETE", f"projects/{d['project']}/deployments/{d['name']}").status_code
            for d in deployments
        ]
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    if served.counts:
        with capsys.disabled():
            total = time.monotonic() - started
            print(
                f"\nfuzz: {len(served.counts)} operations, {sum(served.counts.values())} cases, "
                f"start and seeding {seeded_s:.0f} s, total {total:.0f} s "
                f"(max {MAX_EXAMPLES} generated per operation, seed {SEED}); statuses "
                f"{dict(sorted(served.statuses.items()))}; checks {dict(served.checks)}; "
                f"undeployed {undeployed}"
            )


def _schema(served: Served) -> Any:
    config = SchemathesisConfig.from_dict(
        {
            "seed": SEED,
            "headers": HEADERS,
            "request-timeout": 60,
            "generation": {
                "max-examples": MAX_EXAMPLES,
                "deterministic": True,
                "database": "none",
                "no-shrink": True,
            },
            "phases": {"stateful": {"enabled": False}},
            "checks": {
                "enabled": False,
                "not_a_server_error": {"enabled": True},
                "response_schema_conformance": {"enabled": True},
            },
        }
    )
    schema = schemathesis.openapi.from_url(
        f"{served.url}/cube/api/v1/openapi.json", headers=HEADERS, config=config
    )

    @schema.hook("before_generate_path_parameters")
    def seeded_half_the_time(context: Any, strategy: Any) -> Any:
        op = context.operation
        if op is None or op.method.upper() == "DELETE" or op.path.endswith(_KEEP_GENERATED):
            return strategy

        def seeded(params: dict[str, Any] | None) -> dict[str, Any] | None:
            return {k: served.seeded.get(k, v) for k, v in params.items()} if params else params

        def fill(generated: Any) -> Any:  # a GeneratedValue (value + provenance) or a dict
            if hasattr(generated, "map_value"):
                return generated.map_value(seeded)
            return seeded(generated)

        return st.one_of(strategy, strategy.map(fill))

    return schema


@pytest.mark.timeout(600)  # about 2 minutes here; the default 300 s is tight under load
def test_no_operation_answers_5xx_or_off_its_schema(served: Served) -> None:
    failures: list[str] = []
    errors: list[str] = []
    for event in engine.from_schema(_schema(served)).execute():
        if isinstance(event, events.ScenarioFinished):
            recorder = event.recorder
            served.counts[recorder.label] += len(recorder.cases)
            for interaction in recorder.interactions.values():
                if interaction.response is not None:
                    served.statuses[interaction.response.status_code] += 1
                    if os.environ.get("CUBE_FUZZ_LOG"):
                        with open(os.environ["CUBE_FUZZ_LOG"], "a") as log:
                            body = interaction.response.content[:200]
                            log.write(
                                f"{event.phase} {interaction.request.method} "
                                f"{interaction.request.uri} -> "
                                f"{interaction.response.status_code} "
                                f"{interaction.response.elapsed:.3f}s {body!r}\n"
                            )
            for checks in recorder.checks.values():
                for check in checks:
                    served.checks[check.name] += 1
                    if check.status == Status.FAILURE and check.failure_info is not None:
                        info = check.failure_info
                        failures.append(
                            f"{recorder.label} [{event.phase}] {check.name}: "
                            f"{info.failure.title}\n{info.failure.message}\n{info.code_sample}"
                        )
        elif isinstance(event, events.NonFatalError):
            errors.append(f"{event.label}: {event.info.format()}")
        elif isinstance(event, events.FatalError):
            raise event.exception
    unique = sorted(set(failures))
    assert not unique, f"{len(unique)} failures:\n\n" + "\n\n".join(unique[:40])
    assert not errors, "\n".join(errors)
    assert len(served.counts) >= 70, sorted(served.counts)
