"""Alert channels follow the outbound policy (cube_lab/outbound.py). Under the hub the cube-lab
service refuses, for a user, a webhook or a mail server on its own machine or a private
network, in every spelling, when the rule is made; a delivery checks the address its
connection reached before a byte is sent (a name that resolves elsewhere later gains nothing)
and is recorded as refused, with no status of the target; no redirect is followed anywhere.
The receivers are real local servers that record what reaches them."""

from __future__ import annotations

import contextlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from alert_util import Hooks

from cube_lab import job_credentials, outbound
from cube_lab.alerts import channels
from cube_lab.alerts.channels import REFUSED, Message
from cube_lab.errors import Forbidden
from cube_lab.identity import Caller

MSG = Message("run.failed", "Run r1 failed", "node exited 1", "http://lab/x", "p", {})


@pytest.fixture
def rebinding(monkeypatch: pytest.MonkeyPatch) -> None:
    """The name passed when it was checked (it resolved to a public address then)."""
    monkeypatch.setattr(outbound, "check_host", lambda host, what=None: None)


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "localhost", "2130706433", "0x7f.0.0.1", "[::1]", "[::ffff:127.0.0.1]"]
)
async def test_a_webhook_on_the_services_machine_is_refused_when_the_rule_is_made(
    api: Any, under_the_hub: None, hooks: Hooks, host: str
) -> None:
    url = f"http://{host}:{_port(hooks.url)}/hook"
    rule = {"name": "probe", "events": ["run.failed"], "channel": {"type": "webhook", "url": url}}
    code, err = await api("alice", "POST", "projects/alice/alert-rules", rule)
    assert code == 403 and "does not call" in err["error"], err
    assert outbound.ENV_ALLOWED in err["detail"]
    _, listed = await api("alice", "GET", "projects/alice/alert-rules")
    assert listed["rules"] == []  # nothing stored
    assert hooks.requests == []


async def test_a_mail_server_on_a_private_network_is_refused(api: Any, under_the_hub: None) -> None:
    for host in ("127.0.0.1", "10.0.0.25", "169.254.169.254"):
        email = {"type": "email", "host": host, "port": 25, "sender": "a@x.org", "to": ["b@x.org"]}
        rule = {"name": "mail", "events": ["run.failed"], "channel": email}
        code, err = await api("alice", "POST", "projects/alice/alert-rules", rule)
        assert code == 403 and host in err["error"], err


def test_a_delivery_checks_the_address_it_reached_and_sends_nothing(
    under_the_hub: None, rebinding: None, hooks: Hooks
) -> None:
    slept: list[float] = []
    got = channels.deliver({"type": "webhook", "url": f"{hooks.url}/hook"}, MSG, sleep=slept.append)
    assert (got.ok, got.status, got.error, got.attempts) == (False, None, REFUSED, 1)
    assert slept == [] and hooks.requests == []  # not retried; nothing reached the receiver


def test_a_refused_mail_server_receives_no_command(under_the_hub: None, rebinding: None) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.sendall(b"220 test ESMTP\r\n")
            conn.settimeout(5)
            with contextlib.suppress(OSError):
                received.append(conn.recv(1024))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    port = listener.getsockname()[1]
    email = {"type": "email", "host": "127.0.0.1", "port": port, "sender": "a@x.org", "to": ["b@x"]}
    got = channels.deliver(email, MSG, attempts=2, sleep=lambda _s: None)
    thread.join(10)
    listener.close()
    assert (got.ok, got.status, got.error, got.attempts) == (False, None, REFUSED, 1)
    assert received in ([], [b""])  # closed before EHLO: no command, no mail


def test_an_admin_allows_a_network_and_then_it_is_called(
    under_the_hub: None, hooks: Hooks, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(outbound.ENV_ALLOWED, "127.0.0.0/8")
    got = channels.deliver({"type": "webhook", "url": f"{hooks.url}/hook"}, MSG)
    assert got.ok and got.status == 200 and len(hooks.at("/hook")) == 1


def test_the_delivery_log_of_an_older_rule_says_refused_and_nothing_of_the_target(
    ws: Any, alice: Caller, hooks: Hooks
) -> None:
    """A rule made before the policy applied (outside the hub, or an older version)."""
    channel = {"type": "webhook", "url": f"{hooks.url}/hook"}
    ws.alerts.create(alice, None, {"name": "old", "events": ["run.failed"], "channel": channel})
    job_credentials.configure(job_credentials.Issuer(b"k" * 32, "http://hub:8020"))
    try:
        logged = ws.alerts.test(alice, None, "old")
        with pytest.raises(Forbidden):  # nor can it be saved again as it is
            ws.alerts.update(alice, None, "old", {"channel": channel})
    finally:
        job_credentials.configure(None)
    assert (logged.ok, logged.status, logged.error) == (False, None, REFUSED)
    assert hooks.requests == []


class _Redirect(BaseHTTPRequestHandler):
    target = ""

    def do_POST(self) -> None:
        self.send_response(302)
        self.send_header("Location", self.target)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.mark.parametrize("hub", [False, True])
def test_no_redirect_is_followed(
    hooks: Hooks, monkeypatch: pytest.MonkeyPatch, hub: bool, request: pytest.FixtureRequest
) -> None:
    if hub:
        request.getfixturevalue("under_the_hub")
        monkeypatch.setenv(outbound.ENV_ALLOWED, "127.0.0.1")  # the first hop only
    handler = type("Redirect", (_Redirect,), {"target": f"http://localhost:{_port(hooks.url)}/in"})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        got = channels.deliver({"type": "webhook", "url": url}, MSG, attempts=1)
    finally:
        server.shutdown()
        server.server_close()
    assert (got.ok, got.status) == (False, 302)
    assert hooks.requests == []  # the redirect's target was never asked
