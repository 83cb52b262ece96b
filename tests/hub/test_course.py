"""A class on the hub (issue 24), against a real JupyterHub, proxy and cube-admin service: a
60-student roster imported from CSV in one call (accounts made and approved, members added,
display names kept) and again with nothing changed; adding members who never logged in;
several names in one Add member. Run with ``pytest -m hub``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from cube_lab.hub import devhub
from tests.hub_util import bare_hub, change_password, login

pytestmark = pytest.mark.hub

SURNAMES = "王李张刘陈杨赵黄周吴徐孙胡朱高林何郭马罗"
GIVEN = "伟芳娜敏静丽强磊洋艳勇军杰娟涛明超秀霞平"
STRONG = "a-Strong-pass-123"


@pytest.fixture(scope="module")
def hub() -> Iterator[devhub.DevHub]:
    with bare_hub("cube-hub-course-", {"groups": {"ai-course": {"profiles": ["cpu"]}}}) as running:
        yield running


def roster_csv() -> str:
    lines = ["user name,display name,e-mail,role", "teacher1,林老师,lin@example.edu,teacher"]
    for i in range(1, 61):
        name = SURNAMES[i % 20] + GIVEN[(i * 7) % 20] + GIVEN[i % 20]
        lines.append(f"s{i:03d},{name},s{i:03d}@example.edu,student")
    lines.append("Bad Name,坏行,,student")  # not a safe account name: that row only fails
    return "\n".join(lines) + "\n"


def post_roster(hub: devhub.DevHub, text: str, lang: str = "en") -> httpx.Response:
    return httpx.post(
        f"{hub.url}/services/cube-admin/api/groups/ai-course/roster",
        content=text.encode(),
        headers={
            "Authorization": f"token {hub.token}",
            "Content-Type": "text/csv",
            "Accept-Language": lang,
        },
        timeout=180,
    )


def test_a_60_student_roster_in_one_call_then_again_with_nothing_changed(
    hub: devhub.DevHub,
) -> None:
    resp = post_roster(hub, roster_csv())
    assert resp.status_code == 200, resp.text
    report = resp.json()
    assert report["summary"] == {"created": 61, "approved": 0, "existed": 0, "added": 61,
                                 "error": 1}  # fmt: skip
    rows = {r["name"]: r for r in report["rows"]}
    bad = rows["bad name"]
    assert bad["account"] == "error" and "invalid user name" in bad["error"]
    assert bad["line"] == 63 and bad["detail"]
    s001 = rows["s001"]
    assert (s001["account"], s001["member"], s001["role"]) == ("created", "added", "student")
    assert s001["display_name"] == roster_csv().splitlines()[2].split(",")[1]
    assert rows["teacher1"]["role"] == "teacher"
    passwords = {n: r["password"] for n, r in rows.items() if r.get("password")}
    assert len(passwords) == 61 and len(set(passwords.values())) == 61
    # the hub group has every member; the display names are kept beside the account names
    _, group = hub.hub("GET", "/groups/ai-course")
    assert len(group["users"]) == 61 and "s060" in group["users"]
    kept = group["properties"]["cube_lab_roster"]
    assert kept["teacher1"] == {"display_name": "林老师", "email": "lin@example.edu",
                                "role": "teacher"}  # fmt: skip
    assert group["properties"]["cube_lab"]["profiles"] == ["cpu"]  # the quota is untouched
    # the hub users exist before anyone logged in; a student logs in with the given password
    status, user = hub.hub("GET", "/users/s042")
    assert status == 200 and "ai-course" in user["groups"]
    # the initial passwords are one-time: the first login goes to change it, then on
    assert all(r["must_change"] for r in rows.values() if r.get("password"))
    with httpx.Client(base_url=hub.url, follow_redirects=False) as client:
        assert login(client, "s042", passwords["s042"]).status_code == 302
        moved = client.get("/hub/home")
        assert (moved.status_code, moved.headers.get("Location")) == (302, "/hub/change-password")
        page = client.get("/hub/change-password")
        assert 'id="one-time-notice"' in page.text
        done = change_password(client, passwords["s042"], STRONG)
        assert "Your password has been changed successfully!" in done.text
        assert client.get("/hub/home").status_code == 200
    with httpx.Client(base_url=hub.url, follow_redirects=False) as client:
        assert login(client, "s043", passwords["s043"]).status_code == 302
        assert client.get("/hub/home").status_code == 302  # s043's is still one-time
    with httpx.Client(base_url=hub.url, follow_redirects=False) as client:
        assert login(client, "s042", passwords["s042"]).status_code != 302  # changed
        assert login(client, "s042", STRONG).status_code == 302

    # again: nothing is made, nothing added, no password handed out twice
    again = post_roster(hub, roster_csv(), lang="zh-CN")
    assert again.status_code == 200, again.text
    assert again.json()["summary"] == {"created": 0, "approved": 0, "existed": 61, "added": 0,
                                       "error": 1}  # fmt: skip
    assert not [r for r in again.json()["rows"] if r.get("password")]
    bad_zh = next(r for r in again.json()["rows"] if r["account"] == "error")
    assert "invalid user name" not in bad_zh["error"]  # said in Chinese
    _, same = hub.hub("GET", "/groups/ai-course")
    assert sorted(same["users"]) == sorted(group["users"])
    assert same["properties"] == group["properties"]

    # the CLI is the same call: a third import, from a file, changes nothing either
    csv_file = hub.root / "roster.csv"
    csv_file.write_text(roster_csv(), encoding="utf-8")
    admin_url = f"{hub.url}/services/cube-admin/"
    run = subprocess.run(
        [sys.executable, "-m", "cube_lab.cli", "course", "import", "ai-course", str(csv_file),
         "--admin-url", admin_url, "--token", hub.token, "--json"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "LANG": "C"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["summary"]["existed"] == 61
    table = subprocess.run(
        [sys.executable, "-m", "cube_lab.cli", "course", "import", "ai-course", str(csv_file),
         "--admin-url", admin_url, "--token", hub.token],
        capture_output=True, text=True, timeout=300, env={**os.environ, "LANG": "C"},
    )  # fmt: skip
    assert table.returncode == 0, table.stderr
    assert "0 accounts made" in table.stdout and "林老师" in table.stdout
    nope = subprocess.run(
        [sys.executable, "-m", "cube_lab.cli", "course", "import", "nope", str(csv_file),
         "--admin-url", admin_url, "--token", hub.token],
        capture_output=True, text=True, timeout=300, env={**os.environ, "LANG": "C"},
    )  # fmt: skip
    assert nope.returncode == 1 and "No such group: nope" in nope.stderr

    # the admin page shows the display names beside the account names
    with httpx.Client(base_url=hub.url, follow_redirects=False) as client:
        assert login(client, "admin", hub.admin_password()).status_code == 302
        page = client.get("/services/cube-admin/", follow_redirects=True)
        assert page.status_code == 200
        assert re.search(r'data-member="teacher1">teacher1\s*<span[^>]*>林老师', page.text)
        assert 'id="roster-ai-course"' in page.text  # the Import roster control


def test_bad_rosters_are_4xx_with_the_fix(hub: devhub.DevHub) -> None:
    resp = post_roster(hub, "\n\n")
    assert resp.status_code == 400 and resp.json()["detail"]
    resp = post_roster(hub, "x1,X,,professor\n")
    assert resp.status_code == 200
    assert "unknown role" in resp.json()["rows"][0]["error"]
    resp = httpx.post(
        f"{hub.url}/services/cube-admin/api/groups/nope/roster",
        content=b"x1,X,,student\n",
        headers={"Authorization": f"token {hub.token}"},
    )
    assert resp.status_code == 404


def sign_up(client: httpx.Client, name: str) -> None:
    page = client.get("/hub/signup")
    xsrf = re.search(r'name="_xsrf" value="([^"]*)"', page.text).group(1)
    form = {"username": name, "signup_password": STRONG, "signup_password_confirmation": STRONG,
            "email": "", "_xsrf": xsrf}  # fmt: skip
    assert client.post("/hub/signup", data=form).status_code == 200


def test_members_who_never_logged_in_are_added_with_a_result_per_name(
    hub: devhub.DevHub,
) -> None:
    with httpx.Client(base_url=hub.url, follow_redirects=False) as client:
        for name in ("student1", "student2", "late1"):
            sign_up(client, name)
    with httpx.Client(base_url=hub.url, follow_redirects=False) as admin:
        assert login(admin, "admin", hub.admin_password()).status_code == 302
        for name in ("student1", "student2"):  # approved on the hub's page, never logged in
            assert admin.get(f"/hub/authorize/{name}").status_code in (200, 302)
    assert hub.hub("GET", "/users/student1")[0] == 404  # no hub user yet
    hub.admin("POST", "groups", {"name": "lab2", "profiles": ["cpu"]})
    # one member: the hub user is made first (this was 404 "/users/student1 not found")
    status, group = hub.admin("PUT", "groups/lab2/members/student1")
    assert status == 200, group
    assert group["users"] == ["student1"]
    # several, separated by commas, spaces and newlines: one result per name
    status, body = hub.admin(
        "POST", "groups/lab2/members", {"users": "student1, student2\nlate1 ghost,Bad!"}
    )
    assert status == 200, body
    results = {r["name"]: r for r in body["results"]}
    assert [r["name"] for r in body["results"]] == [
        "student1", "student2", "late1", "ghost", "bad!"
    ]  # fmt: skip
    assert results["student1"]["status"] == "existed"
    assert results["student2"]["status"] == "added"
    assert results["late1"]["status"] == "error"
    assert "not approved" in results["late1"]["error"]
    assert "/hub/authorize" in results["late1"]["detail"]
    assert results["ghost"]["status"] == "error" and "/hub/signup" in results["ghost"]["detail"]
    assert results["bad!"]["status"] == "error"
    assert body["group"]["users"] == ["student1", "student2"]
    # a single unknown name is a 400 with the fix, not a 404 about a hub path
    status, err = hub.admin("PUT", "groups/lab2/members/ghost")
    assert status == 400 and "/hub/signup" in err["detail"]
    status, err = hub.admin("POST", "groups/lab2/members", {"users": "  "})
    assert status == 400 and err["detail"]
    hub.admin("DELETE", "groups/lab2")
