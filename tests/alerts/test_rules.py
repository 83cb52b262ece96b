"""Alert rules end to end: a real failing training job (and pipeline run) in project A fires
its rule at a local HTTP server; success and duration rules; retries in the delivery log;
tenancy and masked secrets over REST; the CLI's add / list / test / deliveries / remove."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from alert_util import Hooks
from pipeline_util import node, script, write_pipeline

from cube_lab.alerts import channels, engine, events
from cube_lab.cli import alerts as cli_alerts
from cube_lab.cli import main
from cube_lab.identity import Caller
from cube_lab.lab_links import ENV_LAB_URL
from cube_lab.pipelines.validation import PipelineInvalid

LAB = "http://lab.example:8888/lab"
FAIL = "import time, sys\ntime.sleep(0.6)\nprint('boom', flush=True)\nsys.exit(3)\n"
OK = "print('fine')\n"


@pytest.fixture
def lab(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(ENV_LAB_URL, LAB)
    return LAB


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/gone"


def _webhook(url: str) -> dict[str, Any]:
    return {"type": "webhook", "url": url}


def test_failing_job_fires_its_rule_with_the_documented_body(
    ws: Any, alice: Caller, bob: Caller, tmp_path: Path, hooks: Hooks, lab: str
) -> None:
    ws.projects.create(alice, "team-a")
    ws.projects.create(bob, "team-b")
    rules = ws.alerts
    rules.create(
        alice,
        "team-a",
        {"name": "fail", "events": ["job.failed"], "channel": _webhook(hooks.url + "/fail")},
    )
    rules.create(
        alice,
        "team-a",
        {"name": "ok", "events": ["job.succeeded"], "channel": _webhook(hooks.url + "/ok")},
    )
    rules.create(
        alice,
        "team-a",
        {
            "name": "slow",
            "events": ["*.duration"],
            "duration_s": 0.3,
            "channel": _webhook(hooks.url + "/slow"),
        },
    )
    rules.create(
        alice,
        "team-a",
        {
            "name": "very-slow",
            "events": ["job.duration"],
            "duration_s": 3600,
            "channel": _webhook(hooks.url + "/never"),
        },
    )
    rules.create(
        alice,
        "team-a",
        {
            "name": "off",
            "events": ["job.*"],
            "enabled": False,
            "channel": _webhook(hooks.url + "/off"),
        },
    )
    # another project's rule on the same event hears nothing of team-a's job
    rules.create(
        bob,
        "team-b",
        {"name": "fail", "events": ["*.failed"], "channel": _webhook(hooks.url + "/b")},
    )
    (tmp_path / "fail.py").write_text(FAIL)
    job = ws.training.prepare(
        alice, {"framework": "plain", "script": "fail.py", "project": "team-a"}, cwd=tmp_path
    )
    assert ws.training.run_foreground(job) == "failed"
    assert ws.alert_engine.drain(20)
    job_id = job.plan.job_id

    [sent] = hooks.at("/fail")
    body = sent["body"]
    assert set(body) == {"event", "title", "text", "link", "project", "object"}
    assert body["event"] == "job.failed" and body["project"] == "team-a"
    assert body["link"] == f"{lab}?cube-open=job&id={job_id}"
    assert body["title"] == f"Training job {body['object']['name']} failed"
    assert body["object"]["id"] == job_id and body["object"]["status"] == "failed"
    assert body["object"]["owner"] == "alice" and body["object"]["duration_s"] >= 0.5
    assert "boom" in body["object"]["error"] or "exit" in body["object"]["error"]
    assert "Project team-a, owner alice, status failed." in body["text"]
    assert sent["headers"]["Content-Type"].startswith("application/json")
    assert hooks.at("/ok") == []  # a success rule does not fire on a failure
    [slow] = hooks.at("/slow")
    assert slow["body"]["event"] == "job.duration"
    assert "past the limit of 0 s" in slow["body"]["text"]
    assert hooks.at("/never") == [] and hooks.at("/off") == [] and hooks.at("/b") == []
    [logged] = rules.deliveries(alice, "team-a", "fail")
    assert (logged.ok, logged.attempts, logged.status, logged.event) == (True, 1, 200, "job.failed")
    assert logged.object == f"job {job_id}"
    assert rules.deliveries(alice, "team-a", "ok") == []

    # and a job that succeeds fires the success rule only
    (tmp_path / "ok.py").write_text(OK)
    job = ws.training.prepare(
        alice, {"framework": "plain", "script": "ok.py", "project": "team-a"}, cwd=tmp_path
    )
    assert ws.training.run_foreground(job) == "succeeded"
    assert ws.alert_engine.drain(20)
    [ok] = hooks.at("/ok")
    assert ok["body"]["event"] == "job.succeeded" and ok["body"]["object"]["id"] == job.plan.job_id
    assert len(hooks.at("/fail")) == 1


def test_failed_pipeline_run_fires_run_failed(
    ws: Any, alice: Caller, tmp_path: Path, hooks: Hooks, lab: str
) -> None:
    ws.alerts.create(
        alice,
        None,
        {
            "name": "runs",
            "events": ["run.failed"],
            "channel": {"type": "slack", "url": hooks.url + "/slack"},
        },
    )
    nodes = [node("bad", filename=script(tmp_path, "bad.py", "raise SystemExit(1)\n"))]
    path = write_pipeline(tmp_path, nodes, name="nightly")
    runner, recorder = ws.pipelines.prepare(alice, path, tmp_path)
    assert ws.pipelines.run_foreground(runner, recorder) == "failed"
    assert ws.alert_engine.drain(20)
    [sent] = hooks.at("/slack")
    text = sent["body"]["text"]
    assert text.startswith("*Pipeline run nightly failed*")
    assert f"cube-open=run&id={runner.plan.run_id}" in text and "path=" in text


def test_a_pipeline_names_the_rules_its_failures_go_to(
    ws: Any, alice: Caller, tmp_path: Path, hooks: Hooks
) -> None:
    # "pager" hears only job successes, but the pipeline names it: its failed runs reach it
    ws.alerts.create(
        alice,
        None,
        {"name": "pager", "events": ["job.succeeded"], "channel": _webhook(hooks.url + "/pager")},
    )
    ws.alerts.create(
        alice,
        None,
        {"name": "other", "events": ["job.succeeded"], "channel": _webhook(hooks.url + "/other")},
    )
    bad = [node("bad", filename=script(tmp_path, "bad.py", "raise SystemExit(1)\n"))]
    good = [node("good", filename=script(tmp_path, "good.py", "print('fine')\n"))]
    cube = {"alert_rules": ["pager", "no-such-rule"]}
    failing = write_pipeline(tmp_path, bad, name="etl", cube=cube, filename="etl.pipeline")
    passing = write_pipeline(tmp_path, good, name="etl-ok", cube=cube, filename="ok.pipeline")
    for path, status in ((failing, "failed"), (passing, "succeeded")):
        runner, recorder = ws.pipelines.prepare(alice, path, tmp_path)
        assert ws.pipelines.run_foreground(runner, recorder) == status
    assert ws.alert_engine.drain(20)
    [sent] = hooks.at("/pager")  # the failure only: a success is not a failure alert
    assert sent["body"]["event"] == "run.failed"
    assert sent["body"]["object"]["alert_rules"] == ["pager", "no-such-rule"]
    assert hooks.at("/other") == []
    # a wrong shape is a validation problem before anything runs
    broken = write_pipeline(
        tmp_path, good, name="x", cube={"alert_rules": "pager"}, filename="x.pipeline"
    )
    with pytest.raises(PipelineInvalid) as caught:
        ws.pipelines.prepare(alice, broken, tmp_path)
    assert "alert_rules" in json.dumps(caught.value.to_json())


def test_retries_are_logged_and_the_log_is_bounded(ws: Any, alice: Caller, hooks: Hooks) -> None:
    ws.alerts.create(
        alice,
        None,
        {
            "name": "flaky",
            "events": ["experiment.failed"],
            "channel": _webhook(hooks.url + "/flaky"),
        },
    )
    ws.alerts.create(
        alice,
        None,
        {"name": "down", "events": ["experiment.*"], "channel": _webhook(hooks.url + "/down")},
    )
    ws.alert_engine.base_delay_s = 0.01
    hooks.fail["/flaky"] = 2
    hooks.fail["/down"] = 99
    obj = {
        "kind": "experiment",
        "id": "e1",
        "name": "search",
        "status": "failed",
        "owner": "alice",
        "duration_s": 3.0,
        "error": "trials failed",
    }
    events.publish(ws.store, "experiment.failed", "alice", obj, "http://lab/x")
    assert ws.alert_engine.drain(20)
    assert len(hooks.at("/flaky")) == 3 and len(hooks.at("/down")) == 4
    [flaky] = ws.alerts.deliveries(alice, None, "flaky")
    assert (flaky.ok, flaky.attempts, flaky.status) == (True, 3, 200)
    [down] = ws.alerts.deliveries(alice, None, "down")
    assert (down.ok, down.attempts, down.status, down.error) == (False, 4, 500, "HTTP 500")

    rule_id = (
        ws.store.engine.connect()
        .exec_driver_sql("SELECT id FROM alert_rules WHERE name = 'down'")
        .scalar()
    )
    for n in range(engine.KEEP + 5):
        out = channels.Outcome(n % 2 == 0, 1, 200, "")
        engine.record(ws.store, rule_id, "experiment.failed", f"experiment e{n}", out)
    kept = ws.alerts.deliveries(alice, None, "down")
    assert len(kept) == engine.KEEP
    assert kept[0].object == f"experiment e{engine.KEEP + 4}"  # newest first
    assert kept[-1].object == "experiment e5"


def test_a_broken_channel_never_breaks_the_job(ws: Any, alice: Caller, tmp_path: Path) -> None:
    ws.alerts.create(
        alice, None, {"name": "dead", "events": ["job.*"], "channel": _webhook(_dead_url())}
    )
    ws.alert_engine.base_delay_s = 0.01
    (tmp_path / "ok.py").write_text(OK)
    job = ws.training.prepare(alice, {"framework": "plain", "script": "ok.py"}, cwd=tmp_path)
    started = time.monotonic()
    assert ws.training.run_foreground(job) == "succeeded"
    assert time.monotonic() - started < 10
    assert ws.alert_engine.drain(20)
    [logged] = ws.alerts.deliveries(alice, None, "dead")
    assert not logged.ok and logged.attempts == 4 and logged.error == "URLError"


def test_rule_checks(ws: Any, alice: Caller, hooks: Hooks) -> None:
    from cube_lab.errors import Conflict, InvalidInput, NotFound

    good = {"name": "r", "events": ["job.failed"], "channel": _webhook(hooks.url)}
    ws.alerts.create(alice, None, good)
    with pytest.raises(Conflict):
        ws.alerts.create(alice, None, good)
    bad = [
        {**good, "name": "x", "events": ["job.exploded"]},
        {**good, "name": "x", "events": []},
        {**good, "name": "x", "events": ["run.duration"]},  # no duration_s
        {**good, "name": "x", "events": ["run.duration"], "duration_s": -1},
        {**good, "name": "x", "channel": {"type": "pager"}},
        {**good, "name": "x", "channel": {"type": "slack", "url": "ftp://x"}},
        {**good, "name": "x", "channel": {"type": "email", "host": "h"}},
        {**good, "name": "bad name"},
        {**good, "name": "x", "color": "red"},
        {**good, "name": "x", "enabled": "yes"},
        {**good, "name": "x", "channel": {**_webhook(hooks.url), "colour": "red"}},
        {**good, "name": "x", "channel": {**_webhook(hooks.url), "secret": 5}},
        {
            **good,
            "name": "x",
            "channel": {"type": "email", "host": "h", "sender": "s", "to": ["a@b"], "port": "25"},
        },
        {
            **good,
            "name": "x",
            "channel": {"type": "email", "host": "h", "sender": "s", "to": ["a@b"], "port": 70000},
        },
    ]
    for data in bad:
        with pytest.raises(InvalidInput):
            ws.alerts.create(alice, None, data)
    mail = {
        "type": "email",
        "host": "smtp.example.com",
        "port": 587,
        "starttls": True,
        "sender": "lab@example.com",
        "to": ["ml@example.com"],
        "password": "PW",
    }
    made = ws.alerts.create(alice, None, {**good, "name": "mail", "channel": mail})
    assert made.channel["password"] == "••••••" and made.channel["host"] == "smtp.example.com"
    with pytest.raises(NotFound):
        ws.alerts.get(alice, None, "missing")
    assert cli_alerts.CHANNEL_TYPES == channels.TYPES


async def test_rest_tenancy_and_masked_secrets(api: Any, hooks: Hooks) -> None:
    assert (await api("alice", "POST", "projects", {"name": "team-a"}))[0] == 201
    assert (await api("bob", "POST", "projects", {"name": "team-b"}))[0] == 201
    base = "projects/team-a/alert-rules"
    url = hooks.url + "/ding?access_token=TOKEN-123"
    rule = {
        "name": "ding",
        "events": ["job.failed", "run.failed"],
        "channel": {"type": "dingtalk", "url": url, "secret": "SEC-456"},
    }
    status, made = await api("alice", "POST", base, rule)
    assert status == 201, made
    assert made["channel"]["secret"] == "••••••"
    assert made["channel"]["url"] == "http://127.0.0.1/…"
    for method, route in [("GET", base), ("GET", f"{base}/ding")]:
        status, got = await api("alice", method, route)
        assert status == 200
        assert "TOKEN-123" not in json.dumps(got) and "SEC-456" not in json.dumps(got)
    status, listed = await api("alice", "GET", base)
    assert [r["name"] for r in listed["rules"]] == ["ding"]

    # bob, a member of team-b only, sees and changes nothing of team-a's
    for method, route, body in [
        ("GET", base, None),
        ("POST", base, {**rule, "name": "mine"}),
        ("GET", f"{base}/ding", None),
        ("PATCH", f"{base}/ding", {"enabled": False}),
        ("DELETE", f"{base}/ding", None),
        ("POST", f"{base}/ding/test", None),
        ("GET", f"{base}/ding/deliveries", None),
    ]:
        status, err = await api("bob", method, route, body)
        assert status == 404 and "not found" in err["error"], (method, route)
    assert (await api("bob", "GET", "projects/team-b/alert-rules"))[1] == {"rules": []}

    status, sent = await api("alice", "POST", f"{base}/ding/test")
    assert status == 200 and sent["ok"] and sent["attempts"] == 1 and sent["event"] == "rule.test"
    [got] = hooks.at("/ding")
    assert got["query"]["access_token"] == ["TOKEN-123"] and "sign" in got["query"]
    assert got["body"]["msgtype"] == "markdown"
    assert "Test message of alert rule ding" in got["body"]["markdown"]["title"]

    # sending back what GET showed keeps the stored secrets
    status, changed = await api(
        "alice", "PATCH", f"{base}/ding", {"channel": made["channel"], "enabled": False}
    )
    assert status == 200 and changed["enabled"] is False
    assert (await api("alice", "POST", f"{base}/ding/test"))[1]["ok"]
    assert hooks.at("/ding")[-1]["query"]["access_token"] == ["TOKEN-123"]
    status, log = await api("alice", "GET", f"{base}/ding/deliveries")
    assert status == 200 and [d["ok"] for d in log["deliveries"]] == [True, True]

    status, err = await api("alice", "POST", base, {**rule, "events": ["job.boom"]})
    assert status == 400 and "matches no known event" in err["error"]
    status, err = await api("alice", "POST", base, rule)
    assert status == 409
    status, err = await api("alice", "PATCH", f"{base}/ding", {"name": "other"})
    assert status == 400
    assert (await api("alice", "DELETE", f"{base}/ding"))[0] == 204
    assert (await api("alice", "GET", f"{base}/ding"))[0] == 404


def test_cli_add_list_test_deliveries_remove(
    hooks: Hooks, capsys: pytest.CaptureFixture[str]
) -> None:
    url = hooks.url + "/cli?token=CLI-SECRET"
    assert (
        main(
            [
                "alerts",
                "add",
                "hook",
                "--on",
                "job.failed",
                "--on",
                "*.duration",
                "--duration-s",
                "60",
                "--channel",
                "webhook",
                "--url",
                url,
            ]
        )
        == 0
    )
    assert "alert rule hook" in capsys.readouterr().out
    assert main(["alerts", "list", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["events"] == ["job.failed", "*.duration"] and listed["duration_s"] == 60
    assert main(["alerts", "list"]) == 0
    out = capsys.readouterr().out
    assert "hook" in out and "CLI-SECRET" not in out
    assert main(["alerts", "test", "hook"]) == 0
    assert "sent: status 200" in capsys.readouterr().out
    [got] = hooks.at("/cli")
    assert got["body"]["event"] == "rule.test"
    assert main(["alerts", "deliveries", "hook", "--json"]) == 0
    [logged] = json.loads(capsys.readouterr().out)
    assert logged["ok"] and logged["event"] == "rule.test"

    assert (
        main(
            [
                "alerts",
                "add",
                "dead",
                "--on",
                "run.failed",
                "--channel",
                "slack",
                "--url",
                _dead_url(),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["alerts", "test", "dead"]) == 1
    assert "not sent: URLError" in capsys.readouterr().out
    assert (
        main(["alerts", "add", "x", "--on", "job.nope", "--channel", "webhook", "--url", url]) == 2
    )
    assert "matches no known event" in capsys.readouterr().err
    assert main(["alerts", "add", "x", "--on", "job.failed"]) == 2
    assert "--channel" in capsys.readouterr().err
    assert main(["alerts", "remove", "hook"]) == 0
    assert main(["alerts", "remove", "hook"]) == 1
    assert "not found" in capsys.readouterr().err


async def test_the_hub_form_of_cube_lab_alerts_goes_to_the_service(
    api: Any,
    jp_root_dir: Path,
    jp_http_port: int,
    jp_base_url: str,
    hooks: Hooks,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Under the hub `cube-lab alerts` has no store: every subcommand goes to the service
    (a real jupyter server with cube-lab), as alice, into her personal project."""
    import asyncio

    await api("alice", "GET", "whoami")  # the server is up
    monkeypatch.setenv("CUBE_LAB_SERVICE_URL", f"http://localhost:{jp_http_port}{jp_base_url}")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "alice-secret")
    monkeypatch.setenv("CUBE_LAB_ROOT_DIR", str(jp_root_dir))
    monkeypatch.delenv("CUBE_LAB_DATA_DIR", raising=False)

    async def cli(*argv: str) -> tuple[int, str]:
        code = await asyncio.to_thread(main, list(argv))
        return code, capsys.readouterr().out

    url = hooks.url + "/hub?token=HUB-SECRET"
    code, out = await cli("alerts", "add", "hook", "--on", "job.failed", "--channel", "webhook",
                          "--url", url)  # fmt: skip
    assert code == 0 and "alert rule hook in project alice" in out, out
    code, out = await cli("alerts", "list", "--json")
    [listed] = json.loads(out)
    assert listed["events"] == ["job.failed"] and "HUB-SECRET" not in out
    code, out = await cli("alerts", "test", "hook")
    assert code == 0 and "sent: status 200" in out
    assert hooks.at("/hub")[0]["body"]["event"] == "rule.test"
    code, out = await cli("alerts", "deliveries", "hook", "--json")
    assert json.loads(out)[0]["ok"]
    code, out = await cli("alerts", "remove", "hook")
    assert code == 0 and "removed alert rule hook" in out
    status, body = await api("alice", "GET", "projects/alice/alert-rules")
    assert status == 200 and body["rules"] == []
