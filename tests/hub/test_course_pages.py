"""A class on a real hub (issue 24), its pages: the admin page lists the courses (links to
their pages) and makes one from its form's fields; the course page reads each member's
resources in words; a student's course page lists only their own hand-outs and submissions,
with a Submit button; the hub's home page links a member's courses. Run with ``pytest -m hub``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cube_lab.hub import devhub
from cube_lab.hub.admin import page_texts
from cube_lab.locale import negotiate
from tests.hub_util import bare_hub, login

pytestmark = pytest.mark.hub

ROSTER = """user name,display name,e-mail,role
teach9,林老师,,teacher
stu8,张三,,student
stu9,李四,,student
"""


# the people here keep their initial passwords (test_hub_course checks they are one-time)
KEEP_PASSWORDS = {"sign_up": {"roster_passwords_one_time": False}}


@pytest.fixture(scope="module")
def hub() -> Iterator[devhub.DevHub]:
    with bare_hub("cube-hub-class-pages-", KEEP_PASSWORDS) as running:
        yield running


@pytest.fixture(scope="module")
def course(hub: devhub.DevHub) -> dict[str, Any]:
    # the admin page's New course form sends name, profiles and a quota of strings
    body = {"name": "cv201", "profiles": ["cpu"], "quota": {"servers": "5", "memory": "8G"}}
    status, made = hub.admin("POST", "courses", body)
    assert status == 201, made
    assert made["quota"]["servers"] == 5
    resp = httpx.post(
        f"{hub.url}/services/cube-admin/api/groups/cv201/roster",
        content=ROSTER.encode(),
        headers={"Authorization": f"token {hub.token}", "Content-Type": "text/csv"},
        timeout=180,
    )
    assert resp.status_code == 200, resp.text
    passwords = {r["name"]: r.get("password") for r in resp.json()["rows"]}
    starter = home(hub, "teach9") / "lab1-starter"
    starter.mkdir(parents=True)
    notebook = {"cells": [], "nbformat": 4, "nbformat_minor": 5, "metadata": {}}
    (starter / "lab1.ipynb").write_text(json.dumps(notebook))
    token = hub.user_token("teach9")
    status, out = hub.request("POST", "/services/cube-admin/api/courses/cv201/handouts",
                              {"name": "lab1", "source": "lab1-starter",
                               "deadline": 4102444800}, token=token)  # fmt: skip
    assert status == 201, out
    return {"passwords": passwords, "tokens": {n: hub.user_token(n) for n in passwords}}


def home(hub: devhub.DevHub, user: str) -> Path:
    return hub.data_dir / "users" / user


def page(hub: devhub.DevHub, user: str, password: str | None, path: str, lang: str = "en") -> Any:
    with httpx.Client(base_url=hub.url, follow_redirects=False,
                      headers={"Accept-Language": lang}) as client:  # fmt: skip
        assert login(client, user, password).status_code == 302
        return client.get(path, follow_redirects=True)


def test_resources_read_in_words() -> None:
    en, zh = page_texts("en"), page_texts(negotiate("zh-CN"))
    usage = {"servers": 1, "cpu": 2, "memory": 1024**3, "nvidia.com/gpu": 1}
    assert en["usage_text"](usage) == (
        "1 server, 2 CPU cores, 1 GiB memory, 1 GPU (nvidia.com/gpu)"
    )
    assert en["usage_text"]({"servers": 2, "memory": 1.5 * 1024**3}) == "2 servers, 1.5 GiB memory"
    words = zh["usage_text"](usage)
    assert "1 GiB 内存" in words and "GiB memory" not in words and "CPU" in words, words
    assert en["units_for"](["cpu"]) == {"cpu": ("%1 CPU core", "%1 CPU cores")}


def test_the_admin_page_lists_the_courses(hub: devhub.DevHub, course: dict[str, Any]) -> None:
    for lang, words in (("en", "New course"), ("zh-CN", "新建课程")):
        found = page(hub, "admin", hub.admin_password(), "/services/cube-admin/", lang)
        assert found.status_code == 200, found.text[:300]
        assert words in found.text
        assert 'href="/services/cube-admin/courses/cv201"' in found.text
        assert re.search(r'data-course="cv201"><td>.*</td>\s*<td>teach9</td><td>2</td>', found.text)
        assert 'id="create-course"' in found.text


def test_a_student_sees_only_their_own(hub: devhub.DevHub, course: dict[str, Any]) -> None:
    passwords, tokens = course["passwords"], course["tokens"]
    path = "/services/cube-admin/courses/cv201"
    mine = page(hub, "stu8", passwords["stu8"], path)
    assert mine.status_code == 200, mine.text[:300]
    assert 'data-handout="lab1"' in mine.text and 'data-action="submit"' in mine.text
    assert "course/cv201/lab1" in mine.text and 'data-deadline="4102444800' in mine.text
    assert "stu9" not in mine.text and "李四" not in mine.text  # nobody else's
    assert 'data-action="stop"' not in mine.text and "teach9" not in mine.text
    assert re.search(r'data-field="submission" data-at=""', mine.text)
    # the Submit button's call, as stu8: their row shows it; stu9's page does not
    status, sub = hub.request("POST", f"{path.replace('/courses/', '/api/courses/')}"
                              "/handouts/lab1/submit", token=tokens["stu8"])  # fmt: skip
    assert status == 201 and sub["late"] is False, sub
    mine = page(hub, "stu8", passwords["stu8"], path, "zh-CN")
    assert re.search(rf'data-at="{re.escape(str(sub["at"]))}" data-late="" data-how="submit"',
                     mine.text), mine.text  # fmt: skip
    assert "提交" in mine.text
    theirs = page(hub, "stu9", passwords["stu9"], path)
    assert re.search(r'data-field="submission" data-at=""', theirs.text)
    assert str(sub["at"]) not in theirs.text
    # the staff page is still the teacher's: with the submission and everyone's resources
    staff = page(hub, "teach9", passwords["teach9"], path)
    assert 'data-member="stu9"' in staff.text and 'id="hand-out"' in staff.text
    # the home page links a member's courses
    home_page = page(hub, "stu9", passwords["stu9"], "/hub/home")
    assert 'href="/services/cube-admin/courses/cv201"' in home_page.text
    # someone outside the course: 404 over REST, no page
    hub.hub("POST", "/users/nobody9")
    assert hub.request("GET", "/services/cube-admin/api/courses/cv201",
                       token=hub.user_token("nobody9"))[0] == 404  # fmt: skip
