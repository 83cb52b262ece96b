"""The alert watcher: conditions checked while objects run. A real deployment (an sklearn
model behind its router) whose error rate and p99 pass a rule's threshold, told once while
they stay bad and again after they recover; its router killed: unhealthy. A real training job
running past its limit: told once while it runs, not again when it ends. Thresholds are
checked when a rule is made. Another project's rules hear nothing."""

from __future__ import annotations

import http.client
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alert_util import Hooks, webhook
from serving_util import LIVE, stop_serving

from cube_lab.alerts.watch import Watcher
from cube_lab.config import Settings
from cube_lab.errors import InvalidInput
from cube_lab.identity import Caller
from cube_lab.workspace import Workspace

ALICE, BOB = Caller("alice"), Caller("bob")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    root = tmp_path_factory.mktemp("watch")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root))
        mp.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        ws = Workspace.open(Settings.resolve(root / "cube-data"))
        x, y = load_iris(return_X_y=True)
        ws.projects.create(ALICE, "team-a")
        ws.projects.create(BOB, "team-b")
        model = LogisticRegression(max_iter=300).fit(x, y)
        ws.registry.register(ALICE, name="iris", obj=model, project="team-a")
        try:
            yield ws
        finally:
            for dep in ws.serving.list(ALICE, project="team-a"):
                if dep.status in LIVE:
                    ws.serving.undeploy(ALICE, dep.name, project="team-a")
            stop_serving(ws, ALICE)
            ws.close()


def _post(port: int, body: Any) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(
            "POST",
            "/v2/models/iris/infer",
            json.dumps(body),
            {"Content-Type": "application/json"},
        )
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


GOOD = {
    "inputs": [
        {"name": "input-0", "shape": [1, 4], "datatype": "FP64", "data": [5.1, 3.5, 1.4, 0.2]}
    ]
}
BAD = {"inputs": [{"name": "input-0", "shape": [1, 3], "datatype": "FP64", "data": [1, 2]}]}


def _traffic(port: int, good: int, bad: int) -> None:
    for _ in range(good):
        assert _post(port, GOOD) == 200
    for _ in range(bad):
        assert _post(port, BAD) == 400


def test_thresholds_are_checked_when_a_rule_is_made(served: Workspace, hooks: Hooks) -> None:
    rules = served.alerts

    def refused(data: dict[str, Any]) -> str:
        with pytest.raises(InvalidInput) as caught:
            rules.create(ALICE, "team-a", {"name": "x", "channel": webhook(hooks.url), **data})
        return f"{caught.value.error} {caught.value.detail}"

    assert "needs a threshold" in refused({"events": ["deployment.error_rate"]})
    assert "exactly one threshold event" in refused({"events": ["deployment.*"], "threshold": 0.1})
    assert "at most 1" in refused({"events": ["deployment.error_rate"], "threshold": 5})
    assert "must be a number" in refused({"events": ["deployment.p99"], "threshold": "fast"})
    assert "matches no known event" in refused({"events": ["deployment.latency"]})
    # a broad pattern without a threshold is the unhealthy event alone
    view = rules.create(
        ALICE, "team-a", {"name": "any", "events": ["deployment.*"], "channel": webhook(hooks.url)}
    )
    assert view.threshold is None
    rules.delete(ALICE, "team-a", "any")


def test_error_rate_p99_and_unhealthy_fire_once_per_episode(
    served: Workspace, hooks: Hooks
) -> None:
    ws = served
    rules = ws.alerts
    rules.create(
        ALICE,
        "team-a",
        {
            "name": "errors",
            "events": ["deployment.error_rate"],
            "threshold": 0.2,
            "channel": webhook(hooks.url + "/errors"),
        },
    )
    rules.create(
        ALICE,
        "team-a",
        {
            "name": "slow",
            "events": ["deployment.p99"],
            "threshold": 0.001,  # ms: every real request is slower
            "channel": webhook(hooks.url + "/slow"),
        },
    )
    rules.create(
        ALICE,
        "team-a",
        {"name": "down", "events": ["deployment.*"], "channel": webhook(hooks.url + "/down")},
    )
    rules.create(
        BOB,
        "team-b",
        {"name": "b", "events": ["deployment.*"], "channel": webhook(hooks.url + "/b")},
    )
    dep = ws.serving.deploy(ALICE, "iris:1", name="watched", project="team-a")
    port = int(dep.endpoint.rsplit(":", 1)[1])  # type: ignore[union-attr]
    watcher = Watcher(ws.store, ws.alert_engine, ws.serving, interval_s=3600)

    def check() -> None:
        watcher.check()
        assert ws.alert_engine.drain(30)

    check()  # the first reading: no window yet
    _traffic(port, good=10, bad=10)
    check()
    errors = hooks.at("/errors")
    assert len(errors) == 1, errors
    body = errors[0]["body"]
    assert body["event"] == "deployment.error_rate"
    assert body["object"]["name"] == "watched" and body["object"]["kind"] == "deployment"
    assert body["object"]["window"]["requests"] == 20
    assert body["object"]["window"]["errors"] == 10
    assert "10 of 20 requests failed (50.0%)" in body["text"]
    assert "past the threshold of 20.0%" in body["text"]
    slow = hooks.at("/slow")
    assert len(slow) == 1 and slow[0]["body"]["object"]["window"]["p99_ms"] > 0.001

    _traffic(port, good=0, bad=10)
    check()  # still bad: no second message
    assert len(hooks.at("/errors")) == 1 and len(hooks.at("/slow")) == 1

    _traffic(port, good=2, bad=0)
    check()  # too few requests to tell: nothing changes
    _traffic(port, good=10, bad=0)
    check()  # recovered: the error rule is armed again (p99 is still past 0.001 ms)
    assert len(hooks.at("/errors")) == 1 and len(hooks.at("/slow")) == 1
    _traffic(port, good=5, bad=5)
    check()
    assert len(hooks.at("/errors")) == 2
    assert len(hooks.at("/down")) == 0

    router = next(
        p for p in ws.serving.get(ALICE, "watched", "team-a").processes if p["role"] == "router"
    )
    os.kill(router["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not hooks.at("/down"):
        check()
        time.sleep(0.2)
    down = hooks.at("/down")
    assert len(down) == 1, down
    assert down[0]["body"]["event"] == "deployment.unhealthy"
    assert "Deployment watched is unhealthy" in down[0]["body"]["title"]
    check()
    assert len(hooks.at("/down")) == 1  # dead stays dead: told once
    assert hooks.at("/b") == []  # team-b's rule hears nothing of team-a's deployment
    log = rules.deliveries(ALICE, "team-a", "errors")
    assert [d.event for d in log] == ["deployment.error_rate"] * 2 and all(d.ok for d in log)
    ws.serving.undeploy(ALICE, "watched", project="team-a")
    for name in ("errors", "slow", "down"):
        rules.delete(ALICE, "team-a", name)


def test_a_job_past_its_limit_is_told_while_it_runs_and_not_again_at_its_end(
    served: Workspace, hooks: Hooks, tmp_path: Path
) -> None:
    ws = served
    ws.alerts.create(
        ALICE,
        "team-a",
        {
            "name": "long",
            "events": ["job.duration"],
            "duration_s": 1,
            "channel": webhook(hooks.url + "/long"),
        },
    )
    (tmp_path / "slow.py").write_text("import time\ntime.sleep(4)\nprint('done')\n")
    job = ws.training.prepare(
        ALICE, {"framework": "plain", "script": "slow.py", "project": "team-a"}, cwd=tmp_path
    )
    ended: list[str] = []
    runner = threading.Thread(target=lambda: ended.append(ws.training.run_foreground(job)))
    runner.start()
    watcher = Watcher(ws.store, ws.alert_engine, ws.serving, interval_s=3600)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not hooks.at("/long"):
        watcher.check()
        ws.alert_engine.drain(10)
        time.sleep(0.3)
    sent = hooks.at("/long")
    assert len(sent) == 1 and not ended, (sent, ended)  # told while it still runs
    assert sent[0]["body"]["object"]["running"] is True
    assert "so far, past the limit of 1 s" in sent[0]["body"]["text"]
    watcher.check()
    runner.join(30)
    assert ended == ["succeeded"]
    assert ws.alert_engine.drain(20)
    assert len(hooks.at("/long")) == 1  # the end's duration event is not sent again
