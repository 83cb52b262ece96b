"""`cube-lab alerts list|add|remove|test|deliveries`: a project's alert rules
(cube_lab/alerts/rules.py), as ``/projects/{project}/alert-rules`` has them over REST.

``add NAME --on job.failed [--on run.* ...] --channel TYPE --url URL [--secret S]`` makes a
rule; ``--channel-json '{...}'`` gives the whole channel instead (an e-mail one, say).
Channel secrets are never printed. ``test`` sends a test message now and exits 1 when it did
not arrive. Under the hub the same commands go to the cube-lab service (``REMOTE``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..identity import Caller
from ..locale.messages import _t
from ..serialize import to_jsonable
from .args import print_json, print_table

if TYPE_CHECKING:
    from ..rest_client import ServiceClient
    from ..workspace import Workspace

# CHANNEL_TYPES, written out: importing the channels (smtplib, email) costs every CLI call
# 60 ms; tests/alerts/test_rules.py checks the two agree
CHANNEL_TYPES = ("webhook", "wecom", "dingtalk", "feishu", "slack", "email")


def _channel(a: argparse.Namespace) -> dict[str, Any]:
    if a.channel_json:
        try:
            channel = json.loads(a.channel_json)
        except ValueError as exc:
            raise InvalidInput(
                _t("--channel-json is not JSON: {exc}", exc=exc),
                _t("e.g. {example}", example='\'{"type": "slack", "url": "https://..."}\''),
            ) from None
        if not isinstance(channel, dict):
            raise InvalidInput(_t("--channel-json must be a JSON object"))
        return channel
    if not a.channel:
        raise InvalidInput(
            _t("give --channel TYPE with --url, or --channel-json"),
            _t("Types: {types}", types=", ".join(CHANNEL_TYPES)),
        )
    channel: dict[str, Any] = {"type": a.channel}
    if a.url:
        channel["url"] = a.url
    if a.secret:
        channel["secret"] = a.secret
    return channel


def _rule_body(a: argparse.Namespace) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": a.name,
        "events": a.on or [],
        "channel": _channel(a),
        "enabled": not a.disabled,
    }
    if a.duration_s is not None:
        data["duration_s"] = a.duration_s
    if a.threshold is not None:
        data["threshold"] = a.threshold
    if a.resource is not None:
        data["resource"] = a.resource
    return data


# -- what the commands print, here and under the hub alike ---------------------------------


def _show_rules(a: argparse.Namespace, rules: list[dict[str, Any]]) -> None:
    if a.json:
        print_json(rules)
        return
    print_table(
        [
            [
                r["name"],
                ", ".join(r["events"]),
                "" if r["duration_s"] is None else f"{r['duration_s']:g}",
                "" if r.get("threshold") is None else f"{r['threshold']:g}",
                r["channel"].get("type", ""),
                str(r["channel"].get("url") or ", ".join(r["channel"].get("to") or [])),
                "yes" if r["enabled"] else "no",
            ]
            for r in rules
        ],
        ["NAME", "EVENTS", "DURATION_S", "THRESHOLD", "CHANNEL", "TO", "ENABLED"],
    )


def _show_added(a: argparse.Namespace, rule: dict[str, Any]) -> None:
    if a.json:
        print_json(rule)
    else:
        print(
            f"alert rule {rule['name']} in project {rule['project']}: {', '.join(rule['events'])}"
        )


def _show_removed(a: argparse.Namespace) -> None:
    if a.json:
        print_json({"removed": a.name})
    else:
        print(f"removed alert rule {a.name}")


def _show_test(a: argparse.Namespace, found: dict[str, Any]) -> None:
    if a.json:
        print_json(found)
    elif found["ok"]:
        print(f"sent: status {found['status']}, {found['attempts']} attempt(s)")
    else:
        print(f"not sent: {found['error']} (status {found['status']})")
    if not found["ok"]:
        raise SystemExit(1)


def _show_deliveries(a: argparse.Namespace, found: list[dict[str, Any]]) -> None:
    if a.json:
        print_json(found)
        return
    print_table(
        [
            [
                d["at"][:19].replace("T", " "),
                d["event"],
                d["object"],
                "ok" if d["ok"] else "failed",
                str(d["attempts"]),
                "" if d["status"] is None else str(d["status"]),
                d["error"],
            ]
            for d in found
        ],
        ["AT", "EVENT", "OBJECT", "RESULT", "ATTEMPTS", "STATUS", "ERROR"],
    )


# -- here: the workspace's alert rules ----------------------------------------------------


def alerts_list(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    _show_rules(a, to_jsonable(ws.alerts.list(caller, a.project)))


def alerts_add(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    _show_added(a, to_jsonable(ws.alerts.create(caller, a.project, _rule_body(a))))


def alerts_remove(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    ws.alerts.delete(caller, a.project, a.name)
    _show_removed(a)


def alerts_test(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    _show_test(a, to_jsonable(ws.alerts.test(caller, a.project, a.name)))


def alerts_deliveries(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    _show_deliveries(a, to_jsonable(ws.alerts.deliveries(caller, a.project, a.name, a.limit)))


# -- under the hub: the cube-lab service's, over REST ---------------------------------------


def _where(client: ServiceClient, a: argparse.Namespace, name: str | None = None) -> str:
    from ..rest_client import segment
    from .remote.common import project_of

    base = f"projects/{segment(project_of(client, a))}/alert-rules"
    return f"{base}/{segment(name)}" if name else base


def remote_list(client: ServiceClient, a: argparse.Namespace) -> None:
    _show_rules(a, client.get(_where(client, a))["rules"])


def remote_add(client: ServiceClient, a: argparse.Namespace) -> None:
    _show_added(a, client.post(_where(client, a), _rule_body(a)))


def remote_remove(client: ServiceClient, a: argparse.Namespace) -> None:
    client.delete(_where(client, a, a.name))
    _show_removed(a)


def remote_test(client: ServiceClient, a: argparse.Namespace) -> None:
    _show_test(a, client.post(f"{_where(client, a, a.name)}/test"))


def remote_deliveries(client: ServiceClient, a: argparse.Namespace) -> None:
    found = client.get(f"{_where(client, a, a.name)}/deliveries", limit=a.limit)
    _show_deliveries(a, found["deliveries"])


REMOTE: dict[str, Callable[[Any, argparse.Namespace], None]] = {
    "alerts_list": remote_list,
    "alerts_add": remote_add,
    "alerts_remove": remote_remove,
    "alerts_test": remote_test,
    "alerts_deliveries": remote_deliveries,
}


def add_commands(groups: Any, command: Callable[..., Any]) -> None:
    alerts = groups.add_parser("alerts", help="alert rules of a project").add_subparsers(
        dest="command", required=True
    )
    command(alerts, "list", alerts_list, "list the project's alert rules (secrets masked)")
    p = command(alerts, "add", alerts_add, "make an alert rule")
    p.add_argument("name")
    p.add_argument(
        "--on",
        action="append",
        metavar="EVENT",
        help="an event or pattern: job|run|experiment.succeeded|failed|stopped|duration, "
        "deployment.unhealthy|error_rate|p99, quota.usage (alone) "
        "(repeat it; e.g. --on job.failed --on '*.duration')",
    )
    p.add_argument("--duration-s", type=float, help="a duration event fires past this (seconds)")
    p.add_argument(
        "--threshold",
        type=float,
        help="deployment.error_rate fires past this share of requests (0.05 = 5 %%), "
        "deployment.p99 past this many milliseconds, quota.usage at this percent of the quota",
    )
    p.add_argument(
        "--resource",
        help="quota.usage: the quota watched: any (default), gpus, gpu_hours, cpu, memory, "
        "servers, jobs or an accelerator resource name",
    )
    p.add_argument("--channel", choices=CHANNEL_TYPES, help="the channel's type")
    p.add_argument("--url", help="the webhook's url")
    p.add_argument("--secret", help="the signing secret (dingtalk, feishu)")
    p.add_argument("--channel-json", help="the whole channel as a JSON object (e.g. e-mail)")
    p.add_argument("--disabled", action="store_true", help="make it switched off")
    for name, fn, help_ in [
        ("remove", alerts_remove, "delete an alert rule and its delivery log"),
        ("test", alerts_test, "send a test message by the rule's channel now"),
    ]:
        p = command(alerts, name, fn, help_)
        p.add_argument("name")
    p = command(alerts, "deliveries", alerts_deliveries, "a rule's delivery log, newest first")
    p.add_argument("name")
    p.add_argument("--limit", type=int, default=100)
