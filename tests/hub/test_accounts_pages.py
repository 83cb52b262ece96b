"""Accounts that don't hurt a class, on a real hub and its proxy (issue 24): the one-time admin
password must be changed first, a weak sign-up password says the rule, students meet no
cube-admin entry, and a student whose server an admin stopped reads why.

One hub for the module, started as a real one is: its admin's printed password one-time; the
test of that first login has a hub of its own (it needs the password not changed yet).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from cube_lab.hub import devhub
from tests.hub_util import bare_hub, change_password, login, xsrf_of

pytestmark = pytest.mark.hub

NEW_ADMIN_PASSWORD = "violet-harbour-cactus-42"
REASON = "The lab session is over; please save your work before 18:00 next time."


@pytest.fixture(scope="module")
def hub() -> Iterator[devhub.DevHub]:
    with bare_hub("cube-hub-accounts-", one_time_admin_password=True) as running:
        yield running


@pytest.fixture(scope="module")
def student(hub: devhub.DevHub) -> tuple[str, str]:
    """An account made the way a roster makes them: approved, with a generated one-time
    password, which the student changed at first login."""
    body = {"accounts": [{"name": "stud1", "create": True}]}
    status, made = hub.hub("POST", "/cube/accounts", body)
    assert status == 200, made
    [account] = made["accounts"]
    assert account["status"] == "created" and account["must_change"] is True
    mine = "stud1-own-Pass-42"
    with browser(hub) as client:
        assert login(client, "stud1", account["password"]).status_code == 302
        done = change_password(client, account["password"], mine)
        assert "Your password has been changed successfully!" in done.text
    return "stud1", mine


@pytest.fixture(scope="module")
def admin_token(hub: devhub.DevHub) -> str:
    """The admin user's own API token (its requests are "by admin")."""
    return hub.user_token("admin")


@pytest.fixture(scope="module")
def admin_password(hub: devhub.DevHub) -> str:
    """The admin's own password: the printed one-time one, changed at the first login."""
    one_time = hub.admin_password()
    assert one_time
    with browser(hub) as client:
        assert login(client, "admin", one_time).status_code == 302
        done = change_password(client, one_time, NEW_ADMIN_PASSWORD)
        assert "Your password has been changed successfully!" in done.text
    return NEW_ADMIN_PASSWORD


@pytest.fixture
def first_start_hub() -> Iterator[devhub.DevHub]:
    """A hub of its own, as it first starts: nobody has logged in, the admin's printed password
    is still the one-time one."""
    with bare_hub("cube-hub-accounts-first-", one_time_admin_password=True) as running:
        yield running


def browser(hub: devhub.DevHub) -> httpx.Client:
    return httpx.Client(base_url=hub.url, follow_redirects=False, timeout=60)


def test_the_one_time_admin_password_must_be_changed_first(
    first_start_hub: devhub.DevHub,
) -> None:
    hub = first_start_hub
    admin_token = hub.user_token("admin")
    one_time = hub.admin_password()
    assert one_time
    with browser(hub) as client:
        assert login(client, "admin", one_time).status_code == 302
        # every hub page sends the admin to change it, the services' OAuth page too
        for path in ("/hub/home", "/hub/spawn", "/hub/token", "/hub/admin", "/hub/authorize",
                     "/hub/", "/hub/user/admin/lab"):  # fmt: skip
            resp = client.get(path)
            assert resp.status_code == 302, (path, resp.status_code)
            assert resp.headers["Location"] == "/hub/change-password", path
        landed = client.get("/services/cube-admin/", follow_redirects=True)
        assert landed.url.path == "/hub/change-password"
        # a form elsewhere is refused, not carried out
        home_xsrf = xsrf_of(client.get("/hub/change-password"))
        spawn = client.post("/hub/spawn", data={"profile": "cpu", "_xsrf": home_xsrf})
        assert spawn.status_code == 403
        assert hub.hub("GET", "/users/admin")[1]["servers"] == {}
        # the API with tokens is not a page: unaffected
        status, me = hub.request("GET", "/hub/api/user", token=admin_token)
        assert status == 200 and me["name"] == "admin"
        assert hub.admin("GET", "groups", token=admin_token)[0] == 200
        # the page itself says why, and a new password that breaks the rule says the rule
        page = client.get("/hub/change-password")
        assert "one-time password" in page.text
        weak = change_password(client, one_time, "short")
        assert "too short: it has 5 characters and needs at least 10" in weak.text
        common = change_password(client, one_time, "qwertyuiop")
        assert "most common passwords" in common.text
        assert client.get("/hub/home").status_code == 302  # still one-time
        done = change_password(client, one_time, NEW_ADMIN_PASSWORD)
        assert "Your password has been changed successfully!" in done.text
        home = client.get("/hub/home")
        assert home.status_code == 200
        assert 'id="change-password-link"' in home.text
        assert 'id="cube-admin-link"' in home.text  # admins get their own nav link
        assert client.get("/services/cube-admin/", follow_redirects=True).status_code == 200
    with browser(hub) as client:
        assert login(client, "admin", one_time).status_code == 200  # the old one is gone
        assert login(client, "admin", NEW_ADMIN_PASSWORD).status_code == 302
        assert client.get("/hub/home").status_code == 200


def sign_up(client: httpx.Client, name: str, password: str, **headers: str) -> str:
    page = client.get("/hub/signup", headers=headers)
    assert page.status_code == 200
    form = {"username": name, "signup_password": password, "email": "",
            "signup_password_confirmation": password, "_xsrf": xsrf_of(page)}  # fmt: skip
    resp = client.post("/hub/signup", data=form, headers=headers)
    assert resp.status_code == 200
    found = re.search(
        r'<div class="alert [^"]*" role="alert">\s*<p>\s*(.*?)\s*</p>', resp.text, re.S
    )
    assert found, resp.text[:800]
    return found.group(1)


def test_a_weak_sign_up_password_says_the_rule(hub: devhub.DevHub) -> None:
    with browser(hub) as client:
        message = sign_up(client, "newbie", "abc123")
        assert "Something went wrong" not in message
        assert "too short: it has 6 characters and needs at least 10" in message
        message = sign_up(client, "newbie", "1234567890")
        assert "one of the most common passwords" in message
        zh = sign_up(client, "newbie", "abc123", **{"Accept-Language": "zh-CN"})
        assert "密码太短" in zh and "10" in zh
        message = sign_up(client, "new bie", "violet-harbour-cactus-43")
        assert "cannot be used" in message
        assert sign_up(client, "newbie", "violet-harbour-cactus-43").startswith(
            "Your information has been sent to the admin."
        )


def test_students_meet_no_cube_admin_entry_and_a_403_without_admin_links(
    hub: devhub.DevHub, student: tuple[str, str], admin_password: str
) -> None:
    name, password = student
    with browser(hub) as client:
        assert login(client, name, password).status_code == 302
        home = client.get("/hub/home")
        assert home.status_code == 200
        assert "cube-admin" not in home.text  # no Services entry, no admin link
        assert 'id="change-password-link"' in home.text
        zh_home = client.get("/hub/home", headers={"Accept-Language": "zh-CN"})
        assert "修改密码" in zh_home.text
        denied = client.get("/services/cube-admin/", follow_redirects=True)
        assert denied.status_code == 403
        assert "/hub/admin" not in denied.text and "/hub/authorize" not in denied.text
        assert "Projects &amp; quotas" not in denied.text and "Sign-ups" not in denied.text
        assert "Ask an admin" in denied.text and 'href="/hub/home"' in denied.text
    with browser(hub) as admin:
        assert login(admin, "admin", admin_password).status_code == 302
        assert 'id="cube-admin-link"' in admin.get("/hub/home").text


def wait_stopped(hub: devhub.DevHub, name: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not hub.hub("GET", f"/users/{name}")[1].get("servers"):
            return
        time.sleep(0.3)
    raise TimeoutError(f"{name}'s server still there")


def notices(hub: devhub.DevHub, token: str) -> list[dict[str, Any]]:
    status, body = hub.admin("GET", "notices", token=token)
    assert status == 200, body
    return body["notices"]


def test_an_admin_stops_a_server_with_a_reason_and_the_student_reads_it(
    hub: devhub.DevHub, student: tuple[str, str], admin_token: str
) -> None:
    name, password = student
    student_token = hub.user_token(name)
    # bad input is a 4xx with the fix; students may not stop anyone
    status, body = hub.admin("POST", f"servers/{name}/stop", {}, token=admin_token)
    assert status == 400 and body["error"] and body["detail"]
    status, body = hub.admin("POST", f"servers/{name}/stop", {"reason": "x"}, token=admin_token)
    assert status == 409 and "no server running" in body["error"]
    status, body = hub.admin("POST", "servers/ghost/stop", {"reason": "x"}, token=admin_token)
    assert status == 404 and "ghost" in body["error"]
    status, body = hub.admin("POST", f"servers/{name}/stop", {"reason": "x"}, token=student_token)
    assert status == 403

    status, server = hub.spawn(name, {"profile": "cpu"})
    assert status == 201, server
    status, body = hub.admin("POST", f"servers/{name}/stop", {"reason": REASON}, token=admin_token)
    assert status == 200, body
    assert body["stopped"] == [""] and body["notice"]["by"] == "admin"
    wait_stopped(hub, name)
    [notice] = notices(hub, student_token)
    assert (notice["kind"], notice["text"], notice["by"]) == ("stop", REASON, "admin")

    with browser(hub) as client:
        assert login(client, name, password).status_code == 302
        expected = re.compile(
            r"Your server was stopped by admin at \d{4}-\d\d-\d\d \d\d:\d\d UTC: "
        )
        for path in ("/hub/home", f"/user/{name}/lab", "/hub/spawn"):
            page = client.get(path, follow_redirects=True)
            assert page.status_code in (200, 424), (path, page.status_code)
            assert expected.search(page.text), (path, page.text[:1500])
            assert "save your work before 18:00" in page.text
        zh = client.get("/hub/home", headers={"Accept-Language": "zh-CN"})
        assert "你的服务器已被 admin 于" in zh.text and "停止" in zh.text

        # a message, without stopping: on the home page until dismissed
        status, body = hub.admin(
            "POST", f"users/{name}/message", {"message": "Submit lab 2 by Friday."},
            token=admin_token,
        )  # fmt: skip
        assert status == 201, body
        home = client.get("/hub/home")
        assert "Message from admin at" in home.text and "Submit lab 2 by Friday." in home.text
        assert {n["kind"] for n in notices(hub, student_token)} == {"stop", "message"}
        message_id = body["notice"]["id"]
        # nobody else dismisses it
        assert hub.admin("DELETE", f"notices/{message_id}", token=admin_token)[0] == 404
        dismissed = client.post(
            f"/hub/cube/notices/{message_id}/dismiss", data={"_xsrf": xsrf_of(home)}
        )
        assert dismissed.status_code == 302
        assert "Submit lab 2 by Friday." not in client.get("/hub/home").text

        # starting again clears the reason
        status, server = hub.spawn(name, {"profile": "cpu"})
        assert status == 201, server
        assert notices(hub, student_token) == []
        hub.stop_server(name)
        assert "Your server was stopped" not in client.get("/hub/home").text

    status, body = hub.admin("POST", "users/ghost/message", {"message": "hi"}, token=admin_token)
    assert status == 404
    status, body = hub.admin("POST", f"users/{name}/message", {"message": " "}, token=admin_token)
    assert status == 400 and body["detail"]
    status, body = hub.admin("GET", "notices")  # the driver service: no user
    assert status == 400
    assert json.dumps(body)
