"""Every alert channel against a real local HTTP server (and a local SMTP receiver) that records
what arrives; signatures are recomputed here from the vendors' documented algorithms."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socketserver
import threading
import urllib.parse
from collections.abc import Iterator
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from cube_lab.alerts import channels
from cube_lab.alerts.channels import Message

MSG = Message(
    event="run.failed",
    title="Run r1 failed",
    text="node train exited 1",
    link="http://lab.example/lab?cube-run=r1",
    project="vision",
    object={"kind": "run", "id": "r1", "status": "failed"},
)


class Recorder:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_first = 0
        self.answer: dict[str, Any] = {"errcode": 0}


@pytest.fixture
def http() -> Iterator[tuple[str, Recorder]]:
    rec = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            rec.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
            code = 503 if len(rec.requests) <= rec.fail_first else 200
            out = json.dumps(rec.answer).encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", rec
    server.shutdown()
    server.server_close()


def _only(rec: Recorder) -> tuple[urllib.parse.SplitResult, dict[str, Any]]:
    assert len(rec.requests) == 1
    req = rec.requests[0]
    assert req["headers"]["Content-Type"].startswith("application/json")
    return urllib.parse.urlsplit(req["path"]), json.loads(req["body"])


def test_generic_webhook_body(http: tuple[str, Recorder]) -> None:
    base, rec = http
    out = channels.deliver({"type": "webhook", "url": base + "/hook"}, MSG)
    assert out.ok and out.attempts == 1
    path, body = _only(rec)
    assert path.path == "/hook"
    assert body == {
        "event": "run.failed",
        "title": "Run r1 failed",
        "text": "node train exited 1",
        "link": MSG.link,
        "project": "vision",
        "object": {"kind": "run", "id": "r1", "status": "failed"},
    }


def test_wecom_markdown(http: tuple[str, Recorder]) -> None:
    base, rec = http
    assert channels.deliver({"type": "wecom", "url": base + "/cgi-bin/webhook/send?key=K1"}, MSG).ok
    path, body = _only(rec)
    assert urllib.parse.parse_qs(path.query) == {"key": ["K1"]}
    assert body["msgtype"] == "markdown"
    assert "Run r1 failed" in body["markdown"]["content"]
    assert MSG.link in body["markdown"]["content"]


def test_dingtalk_signed_query(http: tuple[str, Recorder]) -> None:
    base, rec = http
    secret = "SEC0123456789abcdef"
    ch = {"type": "dingtalk", "url": base + "/robot/send?access_token=T1", "secret": secret}
    assert channels.deliver(ch, MSG).ok
    path, body = _only(rec)
    query = urllib.parse.parse_qs(path.query)
    assert query["access_token"] == ["T1"]
    ts = query["timestamp"][0]
    assert len(ts) == 13  # milliseconds
    # DingTalk: HMAC-SHA256 keyed by the secret over "timestamp\nsecret", base64 (then urlencoded)
    want = base64.b64encode(
        hmac.new(secret.encode(), f"{ts}\n{secret}".encode(), hashlib.sha256).digest()
    ).decode()
    assert query["sign"] == [want]
    assert body["msgtype"] == "markdown"
    assert body["markdown"]["title"] == "Run r1 failed"
    assert MSG.link in body["markdown"]["text"]


def test_feishu_signed_body(http: tuple[str, Recorder]) -> None:
    base, rec = http
    rec.answer = {"code": 0, "msg": "success"}
    secret = "fs-secret"
    ch = {"type": "feishu", "url": base + "/open-apis/bot/v2/hook/abc", "secret": secret}
    assert channels.deliver(ch, MSG).ok
    _, body = _only(rec)
    ts = body["timestamp"]
    assert len(ts) == 10  # seconds
    # Feishu: HMAC-SHA256 keyed by "timestamp\nsecret" over an empty message, base64
    want = base64.b64encode(
        hmac.new(f"{ts}\n{secret}".encode(), b"", hashlib.sha256).digest()
    ).decode()
    assert body["sign"] == want
    assert body["msg_type"] == "text"
    assert "Run r1 failed" in body["content"]["text"] and MSG.link in body["content"]["text"]


def test_slack_text(http: tuple[str, Recorder]) -> None:
    base, rec = http
    assert channels.deliver({"type": "slack", "url": base + "/services/T/B/X"}, MSG).ok
    _, body = _only(rec)
    assert body == {"text": f"*Run r1 failed*\nnode train exited 1\n<{MSG.link}|{MSG.link}>"}


def test_vendor_error_code_is_a_failure(http: tuple[str, Recorder]) -> None:
    base, rec = http
    rec.answer = {"errcode": 310000, "errmsg": "sign not match"}
    out = channels.deliver(
        {"type": "dingtalk", "url": base + "/robot/send?access_token=T", "secret": "s"},
        MSG,
        attempts=2,
        sleep=lambda s: None,
    )
    assert not out.ok and "310000" in out.error and out.attempts == 2


def test_retries_with_backoff(http: tuple[str, Recorder]) -> None:
    base, rec = http
    rec.fail_first = 2
    waits: list[float] = []
    out = channels.deliver(
        {"type": "webhook", "url": base + "/h"},
        MSG,
        attempts=4,
        base_delay_s=0.5,
        sleep=waits.append,
    )
    assert out.ok and out.attempts == 3 and len(rec.requests) == 3
    assert waits == [0.5, 1.0]


def test_retries_are_bounded(http: tuple[str, Recorder]) -> None:
    base, rec = http
    rec.fail_first = 100
    waits: list[float] = []
    out = channels.deliver(
        {"type": "webhook", "url": base + "/h"}, MSG, attempts=3, sleep=waits.append
    )
    assert not out.ok and out.status == 503 and len(rec.requests) == 3 and waits == [1.0, 2.0]


def test_unreachable_error_keeps_the_token_out() -> None:
    out = channels.deliver(
        {"type": "slack", "url": "http://127.0.0.1:9/services/T/B/SECRETTOKEN"},
        MSG,
        attempts=1,
    )
    assert not out.ok and "SECRETTOKEN" not in out.error


def test_masked_hides_secrets() -> None:
    ch = {
        "type": "dingtalk",
        "url": "https://oapi.dingtalk.com/robot/send?access_token=TOK",
        "secret": "SEC1",
    }
    shown = channels.masked(ch)
    assert "TOK" not in json.dumps(shown) and "SEC1" not in json.dumps(shown)
    assert shown["url"].startswith("https://oapi.dingtalk.com/")
    mail = channels.masked({"type": "email", "host": "h", "password": "pw"})
    assert mail["password"] != "pw"


def test_bad_channel_is_invalid_input() -> None:
    from cube_lab.errors import InvalidInput

    with pytest.raises(InvalidInput):
        channels.build_request({"type": "telegram", "url": "http://x"}, MSG)
    with pytest.raises(InvalidInput):
        channels.build_request({"type": "slack", "url": "file:///etc/passwd"}, MSG)


class _Smtp(socketserver.StreamRequestHandler):
    """A minimal SMTP receiver (RFC 5321 subset: EHLO/HELO, MAIL, RCPT, DATA, QUIT)."""

    received: list[dict[str, Any]] = []

    def _say(self, line: str) -> None:
        self.wfile.write(line.encode() + b"\r\n")

    def handle(self) -> None:
        self._say("220 test ESMTP")
        mail: dict[str, Any] = {"rcpt": []}
        while line := self.rfile.readline():
            cmd = line.decode().strip()
            verb = cmd.split(" ")[0].upper()
            if verb in ("EHLO", "HELO"):
                self._say("250 test")
            elif verb == "MAIL":
                mail["from"] = cmd
                self._say("250 OK")
            elif verb == "RCPT":
                mail["rcpt"].append(cmd)
                self._say("250 OK")
            elif verb == "DATA":
                self._say("354 go on")
                data = b""
                while (chunk := self.rfile.readline()) not in (b".\r\n", b""):
                    data += chunk
                mail["data"] = data
                _Smtp.received.append(mail)
                mail = {"rcpt": []}
                self._say("250 queued")
            elif verb == "QUIT":
                self._say("221 bye")
                return
            else:
                self._say("250 OK")


def test_email_over_smtp() -> None:
    _Smtp.received = []
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Smtp)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        ch = {
            "type": "email",
            "host": "127.0.0.1",
            "port": server.server_address[1],
            "sender": "cube@lab.example",
            "to": ["a@x.example", "b@x.example"],
        }
        out = channels.deliver(ch, MSG, attempts=1)
        assert out.ok, out
    finally:
        server.shutdown()
        server.server_close()
    assert len(_Smtp.received) == 1
    got = _Smtp.received[0]
    assert "cube@lab.example" in got["from"]
    assert len(got["rcpt"]) == 2
    mail = message_from_bytes(got["data"])
    assert mail["Subject"] == "Run r1 failed"
    assert MSG.link in mail.get_payload(decode=True).decode()
