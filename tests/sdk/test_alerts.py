"""``cl.alerts``: make a rule, list it (secret masked), change it, test it against a local
webhook receiver, read its log, remove it; in this process and through ``cl.connect``
against a real second server, with the same answers in both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alert_util import Hooks, webhook

import cube_lab as cl
from cube_lab import sdk
from cube_lab.errors import CubeError, NotFound
from tests.sdk.test_sdk import _connect, _same_everywhere, local, server  # noqa: F401  (fixtures)


def _alerts(hooks: Hooks, path: str) -> dict[str, Any]:
    channel = {"type": "dingtalk", "url": hooks.url + path + "?access_token=t0k3n"}
    made = cl.alerts.add("errors", ["deployment.error_rate"], channel, threshold=0.05)
    assert (made["name"], made["threshold"], made["project"]) == ("errors", 0.05, "alice")
    assert "t0k3n" not in str(made)  # the token is a secret: masked
    changed = cl.alerts.update("errors", threshold=0.2, enabled=False)
    assert (changed["threshold"], changed["enabled"]) == (0.2, False)
    cl.alerts.add("fail", ["*.failed"], webhook(hooks.url + path))
    listed = cl.alerts.list()
    sent = cl.alerts.test("fail")
    log = cl.alerts.deliveries("fail")
    assert sent["ok"] and [d["event"] for d in log] == ["rule.test"]
    assert hooks.at(path)[-1]["body"]["event"] == "rule.test"

    with pytest.raises(CubeError) as no_threshold:
        cl.alerts.add("p99", ["deployment.p99"], webhook(hooks.url))
    with pytest.raises(NotFound) as missing:
        cl.alerts.test("nope")
    cl.alerts.remove("errors")
    cl.alerts.remove("fail")
    assert cl.alerts.list() == []

    def plain(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        drop = ("created_at", "updated_at", "at", "channel")
        return [{k: v for k, v in r.items() if k not in drop} for r in rows]

    return {
        "made": plain([made, changed]),
        "listed": plain(listed),
        "log": plain(log),
        "errors": [e.value.to_json() for e in (no_threshold, missing)],
    }


def test_alerts_here_and_over_rest_answer_the_same(
    local: Path,  # noqa: F811  (the fixture of test_sdk)
    server: tuple[str, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hooks = Hooks()
    try:
        here = _alerts(hooks, "/here")
        assert sdk.current().kind == "local"
        assert "needs a threshold" in here["errors"][0]["error"]
        assert here["errors"][1]["error"] == "alert rule 'nope' not found in project 'alice'"
        _connect(server, monkeypatch)
        _same_everywhere(here, _alerts(hooks, "/here"))
    finally:
        hooks.close()


def test_cl_alerts_is_the_package_with_the_sdk_calls() -> None:
    import cube_lab.alerts
    import cube_lab.alerts.engine
    import cube_lab.alerts.rules  # its submodules must not hide the calls

    assert cl.alerts is cube_lab.alerts
    for name in ("list", "add", "update", "remove", "test", "deliveries"):
        assert callable(getattr(cl.alerts, name))
