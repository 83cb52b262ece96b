"""``quota.usage`` alert rules: a project's quota use past a percentage, read by the watcher
from the hub's admission service (its groups' quota and usage, GPU-hours this month from the
sampled series where the hub has none), sent to a local webhook receiver once per upward
crossing, re-armed when the use falls below; bad rules are 400 with what was wrong."""

from __future__ import annotations

from typing import Any

import pytest
from alert_util import Hooks, webhook

from cube_lab import lab_links
from cube_lab.alerts.watch import Watcher
from cube_lab.errors import InvalidInput
from cube_lab.identity import Caller
from cube_lab.monitoring import quota as quota_mod

ALICE, BOB = Caller("alice"), Caller("bob")


class Hub:
    """What the hub's admission service answers for the project groups (``hub_groups``)."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[str, Any]] = {}

    def __call__(self, names: Any = None) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.groups.items() if names is None or k in set(names)}

    def use(self, project: str, gpus: float, cpu: float, hours_used: float | None = None) -> None:
        usage: dict[str, float] = {"nvidia.com/gpu": gpus, "cpu": cpu}
        if hours_used is not None:
            usage["gpu_hours"] = hours_used
        self.groups[project] = {
            "name": project,
            "quota": {"cpu": 16, "accelerators": {"nvidia.com/gpu": 4}, "gpu_hours_month": 100},
            "usage": usage,
        }


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Hub:
    h = Hub()
    monkeypatch.setattr(quota_mod, "hub_groups", h)
    monkeypatch.setenv(lab_links.ENV_LAB_URL, "http://lab.example:8888/lab")
    return h


def test_quota_rules_are_checked_when_made(ws: Any, hooks: Hooks) -> None:
    ws.projects.create(ALICE, "team-a")
    rules = ws.alerts

    def refused(data: dict[str, Any]) -> str:
        with pytest.raises(InvalidInput) as caught:
            rules.create(ALICE, "team-a", {"name": "q", "channel": webhook(hooks.url), **data})
        return f"{caught.value.error} {caught.value.detail}"

    assert "needs a threshold" in refused({"events": ["quota.usage"]})
    assert "out of range" in refused({"events": ["quota.usage"], "threshold_pct": 0})
    assert "out of range" in refused({"events": ["quota.usage"], "threshold_pct": 5000})
    assert "must be a number" in refused({"events": ["quota.usage"], "threshold_pct": "most"})
    assert "not a quota dimension" in refused(
        {"events": ["quota.usage"], "threshold_pct": 80, "resource": "../gpus"}
    )
    assert "no other events" in refused(
        {"events": ["quota.usage", "job.failed"], "threshold_pct": 80}
    )
    assert "belong to quota.usage" in refused({"events": ["job.failed"], "threshold_pct": 80})
    view = rules.create(
        ALICE, "team-a",
        {"name": "q", "events": ["quota.usage"], "threshold_pct": 80,
         "channel": webhook(hooks.url)},
    )  # fmt: skip
    assert (view.threshold, view.resource) == (80.0, "any")
    view = rules.update(ALICE, "team-a", "q", {"resource": "gpus", "threshold_pct": 90})
    assert (view.threshold, view.resource) == (90.0, "gpus")
    # a broad pattern hears no quota.usage (that needs its threshold) and takes no resource
    broad = rules.create(
        ALICE, "team-a", {"name": "all", "events": ["*"], "channel": webhook(hooks.url)}
    )
    assert broad.resource is None


async def test_a_bad_quota_rule_is_a_400_over_rest(api: Any) -> None:
    for body, words in [
        ({"events": ["quota.usage"]}, "needs a threshold"),
        ({"events": ["quota.usage"], "threshold_pct": -3}, "out of range"),
        ({"events": ["quota.usage"], "threshold_pct": 80, "resource": 7}, "not a quota dimension"),
    ]:
        status, answer = await api(
            "alice", "POST", "projects/alice/alert-rules",
            {"name": "q", "channel": {"type": "webhook", "url": "http://127.0.0.1:9/x"}, **body},
        )  # fmt: skip
        assert status == 400, answer
        assert words in answer["error"] and "detail" in answer
    status, answer = await api(
        "alice", "POST", "projects/alice/alert-rules",
        {"name": "q", "events": ["quota.usage"], "threshold_pct": 80, "resource": "gpu_hours",
         "channel": {"type": "webhook", "url": "http://127.0.0.1:9/x"}},
    )  # fmt: skip
    assert status == 201, answer
    assert answer["threshold"] == 80 and answer["resource"] == "gpu_hours"


def test_a_crossing_fires_once_and_rearms_after_dropping(ws: Any, hooks: Hooks, hub: Hub) -> None:
    ws.projects.create(ALICE, "team-a")
    ws.projects.create(BOB, "team-b")
    ws.alerts.create(
        ALICE, "team-a",
        {"name": "gpus", "events": ["quota.usage"], "threshold_pct": 75, "resource": "gpus",
         "channel": webhook(hooks.url + "/gpus")},
    )  # fmt: skip
    ws.alerts.create(
        ALICE, "team-a",
        {"name": "hours", "events": ["quota.usage"], "threshold_pct": 80,
         "resource": "gpu_hours", "channel": webhook(hooks.url + "/hours")},
    )  # fmt: skip
    ws.alerts.create(
        BOB, "team-b",
        {"name": "b", "events": ["quota.usage"], "threshold_pct": 10,
         "channel": webhook(hooks.url + "/b")},
    )  # fmt: skip
    sampled_hours = {"team-a": 50.0}
    watcher = Watcher(
        ws.store, ws.alert_engine, None, interval_s=3600, gpu_hours=lambda: dict(sampled_hours)
    )

    def check() -> None:
        watcher.check()
        assert ws.alert_engine.drain(30)

    hub.use("team-a", gpus=2, cpu=4)  # 50 % of the GPUs, 50 GPU-hours of 100
    check()
    assert hooks.at("/gpus") == [] and hooks.at("/hours") == []

    hub.use("team-a", gpus=3, cpu=4)  # 75 %: at the threshold
    check()
    sent = hooks.at("/gpus")
    assert len(sent) == 1, sent
    body = sent[0]["body"]
    assert body["event"] == "quota.usage" and body["project"] == "team-a"
    assert body["object"]["resource"] == "nvidia.com/gpu"
    assert body["object"]["used"] == 3 and body["object"]["limit"] == 4
    assert body["object"]["percent"] == 75.0 and body["object"]["threshold_pct"] == 75.0
    assert "uses 3 of its 4 nvidia.com/gpu quota (75 %)" in body["text"]
    assert body["link"] == "http://lab.example:8888/lab?cube-open=resources&project=team-a"

    hub.use("team-a", gpus=4, cpu=16)  # still past it (and cpu at 100 %, not watched here)
    check()
    assert len(hooks.at("/gpus")) == 1

    hub.use("team-a", gpus=1, cpu=4)  # dropped below: re-armed, nothing sent
    check()
    assert len(hooks.at("/gpus")) == 1
    hub.use("team-a", gpus=4, cpu=4)  # a second crossing: told again
    check()
    assert len(hooks.at("/gpus")) == 2

    # GPU-hours from the sampled series (the hub reports none), then the hub's own figure
    assert hooks.at("/hours") == []
    sampled_hours["team-a"] = 85.0
    check()
    hours = hooks.at("/hours")
    assert len(hours) == 1 and hours[0]["body"]["object"]["resource"] == "gpu_hours"
    assert hours[0]["body"]["object"]["used"] == 85.0
    hub.use("team-a", gpus=4, cpu=4, hours_used=90)
    check()
    assert len(hooks.at("/hours")) == 1  # still past 80 %

    # team-b has no hub group: nothing known, nothing sent; another project's use is not its
    assert hooks.at("/b") == []
    log = ws.alerts.deliveries(ALICE, "team-a", "gpus")
    assert [d.event for d in log] == ["quota.usage", "quota.usage"] and all(d.ok for d in log)
