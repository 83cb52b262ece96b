"""Notification channels: how one message reaches a webhook, a chat bot or a mailbox.

A channel is a dict ``{"type": ..., ...}``; ``build_request`` turns a message into the exact
HTTP request the vendor documents (URL, JSON body, signing) and ``deliver`` sends it (or the
e-mail) with bounded exponential backoff. Both are plain, blocking Python: callers run
``deliver`` in a thread (``asyncio.to_thread``), never on the event loop.

Formats (each vendor's public robot/webhook documentation):

- ``webhook``: POST ``url`` with the generic body ``{"event", "title", "text", "link",
  "project", "object": {...}}`` (``message`` as given).
- ``wecom`` (企业微信 group bot): POST ``url`` (``.../cgi-bin/webhook/send?key=...``) with
  ``{"msgtype": "markdown", "markdown": {"content": ...}}``; no signing (the key is the secret).
- ``dingtalk`` (钉钉 robot): POST ``url`` (``.../robot/send?access_token=...``) with
  ``{"msgtype": "markdown", "markdown": {"title", "text"}}``; with a ``secret``, the query gets
  ``timestamp`` (ms) and ``sign`` = urlencode(base64(HMAC-SHA256(key=secret,
  msg=timestamp + "\\n" + secret))).
- ``feishu`` (飞书 bot): POST ``url`` with ``{"msg_type": "text", "content": {"text"}}``; with a
  ``secret`` the body also carries ``timestamp`` (s) and ``sign`` = base64(HMAC-SHA256(
  key=timestamp + "\\n" + secret, msg=b"")).
- ``slack`` (incoming webhook): POST ``url`` with ``{"text": ...}`` (mrkdwn link ``<url|text>``).
- ``email``: SMTP to ``host``:``port`` from ``sender`` to ``to`` (list), ``starttls`` optional,
  ``username``/``password`` optional.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import smtplib
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

from .. import outbound
from ..errors import Forbidden, InvalidInput
from ..locale.messages import _t

TYPES = ("webhook", "wecom", "dingtalk", "feishu", "slack", "email")
SECRET_FIELDS = ("url", "secret", "password")  # never returned, never logged
TIMEOUT_S = 10.0
# a delivery the outbound policy stopped (under the hub: an internal address): no status, no
# reason from the target, never retried (``cube_lab.outbound``)
REFUSED = "refused: this address is not called for a user"


@dataclass(frozen=True)
class Message:
    event: str  # e.g. "run.failed"
    title: str
    text: str
    link: str  # the object's view
    project: str
    object: dict[str, Any]


@dataclass(frozen=True)
class Request:
    url: str
    body: bytes
    headers: dict[str, str]


@dataclass(frozen=True)
class Outcome:
    ok: bool
    attempts: int
    status: int | None
    error: str


def dingtalk_sign(secret: str, timestamp_ms: int) -> str:
    """DingTalk's ``sign`` query value (already URL-encoded)."""
    to_sign = f"{timestamp_ms}\n{secret}".encode()
    digest = hmac.new(secret.encode(), to_sign, hashlib.sha256).digest()
    return urllib.parse.quote_plus(base64.b64encode(digest))


def feishu_sign(secret: str, timestamp_s: int) -> str:
    """Feishu's body ``sign``: the HMAC key is timestamp + newline + secret, the message empty."""
    key = f"{timestamp_s}\n{secret}".encode()
    return base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()


def _with_query(url: str, extra: str) -> str:
    return url + ("&" if urllib.parse.urlsplit(url).query else "?") + extra


def _markdown(msg: Message) -> str:
    return f"**{msg.title}**\n\n{msg.text}\n\n[{msg.link}]({msg.link})"


def _require_url(channel: dict[str, Any]) -> str:
    url = channel.get("url")
    if not isinstance(url, str) or urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise InvalidInput(
            _t("A channel needs an http(s) url"), _t("type {kind!r}", kind=channel.get("type"))
        )
    return url


def build_request(
    channel: dict[str, Any], msg: Message, now: Callable[[], float] = time.time
) -> Request:
    """The HTTP request a webhook-type channel sends for ``msg``."""
    kind = channel.get("type")
    url = _require_url(channel)
    secret = channel.get("secret") or ""
    body: dict[str, Any]
    if kind == "webhook":
        body = {
            "event": msg.event,
            "title": msg.title,
            "text": msg.text,
            "link": msg.link,
            "project": msg.project,
            "object": msg.object,
        }
    elif kind == "wecom":
        body = {"msgtype": "markdown", "markdown": {"content": _markdown(msg)}}
    elif kind == "dingtalk":
        body = {"msgtype": "markdown", "markdown": {"title": msg.title, "text": _markdown(msg)}}
        if secret:
            ts = int(now() * 1000)
            url = _with_query(url, f"timestamp={ts}&sign={dingtalk_sign(secret, ts)}")
    elif kind == "feishu":
        body = {"msg_type": "text", "content": {"text": f"{msg.title}\n{msg.text}\n{msg.link}"}}
        if secret:
            ts = int(now())
            body = {"timestamp": str(ts), "sign": feishu_sign(secret, ts), **body}
    elif kind == "slack":
        body = {"text": f"*{msg.title}*\n{msg.text}\n<{msg.link}|{msg.link}>"}
    else:
        raise InvalidInput(
            _t("Unknown channel type"),
            _t("{kind!r}; one of {types}", kind=kind, types=", ".join(TYPES)),
        )
    data = json.dumps(body, ensure_ascii=False).encode()
    return Request(url, data, {"Content-Type": "application/json; charset=utf-8"})


def _vendor_error(kind: str, payload: bytes) -> str:
    """Chat bots answer 200 with an error code in the body; '' when it reports success."""
    if kind not in ("wecom", "dingtalk", "feishu"):
        return ""
    try:
        answer = json.loads(payload or b"{}")
    except ValueError:
        return ""
    code = answer.get("errcode", answer.get("code", answer.get("StatusCode", 0)))
    if code in (0, None):
        return ""
    return f"code {code}: {answer.get('errmsg') or answer.get('msg') or ''}".strip()


def _post(channel: dict[str, Any], msg: Message) -> tuple[int | None, str]:
    req = build_request(channel, msg)
    http = urllib.request.Request(req.url, data=req.body, headers=req.headers, method="POST")
    try:
        outbound.check_url(req.url)
        with outbound.urlopen(http, timeout=TIMEOUT_S) as resp:  # no redirect followed
            return resp.status, _vendor_error(str(channel.get("type")), resp.read())
    except Forbidden:
        return None, REFUSED
    except urllib.error.HTTPError as exc:
        return exc.code, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        if isinstance(getattr(exc, "reason", exc), outbound.Refused):  # urllib wraps it
            return None, REFUSED
        return None, type(exc).__name__  # the reason may quote the URL: keep the token out


def _send_email(channel: dict[str, Any], msg: Message) -> tuple[int | None, str]:
    to = channel.get("to") or []
    if not channel.get("host") or not channel.get("sender") or not to:
        raise InvalidInput(_t("An email channel needs host, sender and to"))
    mail = EmailMessage()
    mail["Subject"] = msg.title
    mail["From"] = str(channel["sender"])
    mail["To"] = ", ".join(str(t) for t in to)
    mail.set_content(f"{msg.text}\n\n{msg.link}\n")
    try:
        outbound.check_host(str(channel["host"]))
        with outbound.SMTP(
            str(channel["host"]), int(channel.get("port") or 25), timeout=TIMEOUT_S
        ) as s:
            if channel.get("starttls"):
                s.starttls()
            if channel.get("username"):
                s.login(str(channel["username"]), str(channel.get("password") or ""))
            s.send_message(mail)
        return 250, ""
    except (Forbidden, outbound.Refused):
        return None, REFUSED
    except smtplib.SMTPResponseException as exc:
        return exc.smtp_code, f"SMTP {exc.smtp_code}"
    except (smtplib.SMTPException, OSError) as exc:
        return None, type(exc).__name__


def deliver(
    channel: dict[str, Any],
    msg: Message,
    attempts: int = 4,
    base_delay_s: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> Outcome:
    """Send ``msg``; on failure retry after base, 2*base, 4*base... (at most ``attempts``)."""
    attempts = max(1, min(attempts, 8))
    send = _send_email if channel.get("type") == "email" else _post
    status: int | None = None
    error = ""
    for n in range(1, attempts + 1):
        status, error = send(channel, msg)
        if not error and status is not None and 200 <= status < 300:
            return Outcome(True, n, status, "")
        if status is not None and 400 <= status < 500 and status not in (408, 429):
            break  # the receiver refuses this request; asking again will not help
        if error == REFUSED:
            break  # so does the policy
        if n < attempts:
            sleep(base_delay_s * 2 ** (n - 1))
    return Outcome(False, n, status, error or f"status {status}")


def masked(channel: dict[str, Any]) -> dict[str, Any]:
    """The channel as GET answers it: secret fields replaced by a mask."""
    out = dict(channel)
    for key in SECRET_FIELDS:
        if out.get(key):
            value = str(out[key])
            parts = urllib.parse.urlsplit(value)
            out[key] = f"{parts.scheme}://{parts.hostname}/…" if key == "url" else "••••••"
    return out
