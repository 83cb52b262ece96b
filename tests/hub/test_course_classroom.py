"""A class on a real hub (issue 24), through the cube-admin service: a course made, its roster
imported; the teacher hands out a starter folder into every student's space; the students
submit (one late, past a deadline), the rest are collected at the deadline; who may see what
(teachers and assistants their course, students 403, others 404); the course page; the CLI.
One hub and one course (ai101) for the module; each test hands out under its own name, so
they pass in any order. Run with ``pytest -m hub``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from cube_lab.hub import devhub
from tests.hub_util import bare_hub, login
from tests.pipeline_util import node, write_pipeline

pytestmark = pytest.mark.hub

ROSTER = """user name,display name,e-mail,role
teach1,林老师,lin@example.edu,teacher
ta1,王助教,,assistant
stu1,张三,,student
stu2,李四,,student
stu3,王五,,student
"""


# the people here keep their initial passwords (test_hub_course checks they are one-time)
KEEP_PASSWORDS = {"sign_up": {"roster_passwords_one_time": False}}


@pytest.fixture(scope="module")
def hub() -> Iterator[devhub.DevHub]:
    with bare_hub("cube-hub-class-", KEEP_PASSWORDS) as running:
        yield running


@pytest.fixture(scope="module")
def course(hub: devhub.DevHub) -> dict[str, Any]:
    """The course made and its roster imported: the passwords and tokens of its people."""
    status, made = hub.admin("POST", "courses", {"name": "ai101", "profiles": ["cpu"],
                                                  "quota": {"servers": 10}})  # fmt: skip
    assert status == 201, made
    resp = httpx.post(
        f"{hub.url}/services/cube-admin/api/groups/ai101/roster",
        content=ROSTER.encode(),
        headers={"Authorization": f"token {hub.token}", "Content-Type": "text/csv"},
        timeout=180,
    )
    assert resp.status_code == 200, resp.text
    rows = {r["name"]: r for r in resp.json()["rows"]}
    hub.hub("POST", "/users/outsider")
    names = [*rows, "outsider"]
    return {
        "passwords": {n: r.get("password") for n, r in rows.items()},
        "tokens": {n: hub.user_token(n) for n in names},
    }


def call(hub: devhub.DevHub, method: str, path: str, token: str, body: Any = None) -> Any:
    return hub.request(method, f"/services/cube-admin/api/{path}", body, token=token)


def home(hub: devhub.DevHub, user: str) -> Path:
    return hub.data_dir / "users" / user


@pytest.fixture(scope="module")
def lab1(hub: devhub.DevHub, course: dict[str, Any]) -> str:
    """lab1 handed out from teach1's starter folder: copied into every student's space."""
    starter = home(hub, "teach1") / "lab1-starter"
    starter.mkdir(parents=True)
    notebook = {"cells": [], "nbformat": 4, "nbformat_minor": 5, "metadata": {}}
    (starter / "lab1.ipynb").write_text(json.dumps(notebook))
    (starter / "flow.pipeline").write_text('{"doc_type": "pipeline", "version": "3.0"}')
    status, out = call(hub, "POST", "courses/ai101/handouts", course["tokens"]["teach1"],
                       {"name": "lab1", "source": "lab1-starter"})  # fmt: skip
    assert status == 201, out
    assert {r["student"]: r["status"] for r in out["students"]} == {
        "stu1": "copied", "stu2": "copied", "stu3": "copied"}  # fmt: skip
    for s in ("stu1", "stu2", "stu3"):
        assert (home(hub, s) / "course/ai101/lab1/flow.pipeline").is_file()
    return "lab1"


def tree(folder: Path) -> list[str]:
    """Every path below ``folder`` (none when it does not exist)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_who_may_see_a_course(hub: devhub.DevHub, course: dict[str, Any]) -> None:
    tokens = course["tokens"]
    status, listed = hub.admin("GET", "courses")
    assert status == 200 and [c["name"] for c in listed["courses"]] == ["ai101"]
    assert listed["courses"][0]["teachers"] == ["teach1"]
    assert listed["courses"][0]["students"] == 3
    for who in ("teach1", "ta1"):
        status, view = call(hub, "GET", "courses/ai101", tokens[who])
        assert status == 200, view
        people = {m["name"]: m for m in view["members"]}
        assert people["stu1"]["display_name"] == "张三" and people["stu1"]["role"] == "student"
        assert people["ta1"]["role"] == "assistant" and people["teach1"]["role"] == "teacher"
        assert view["quota"]["servers"] == 10 and view["profiles"] == ["cpu"]
        status, mine = call(hub, "GET", "courses", tokens[who])
        assert [c["name"] for c in mine["courses"]] == ["ai101"]
    status, err = call(hub, "GET", "courses/ai101", tokens["stu1"])
    assert status == 403 and err["detail"]
    status, err = call(hub, "GET", "courses/ai101", tokens["outsider"])
    assert status == 404 and err["error"]
    assert call(hub, "GET", "courses", tokens["stu1"])[1] == {"courses": []}
    body = {"name": "x", "source": "y"}
    assert call(hub, "POST", "courses/ai101/handouts", tokens["stu1"], body)[0] == 403
    assert call(hub, "POST", "courses/ai101/handouts", tokens["outsider"], body)[0] == 404
    assert call(hub, "POST", "courses", tokens["teach1"], {"name": "mine"})[0] == 403
    # bad input: 4xx with the fix, and nothing handed out: stu1's course folder is as it was
    # (none at all when this test runs first; the other tests' hand-outs otherwise)
    before = tree(home(hub, "stu1") / "course")
    for bad, code in (
        ({"name": "lab1", "source": "../../hub"}, 400),
        ({"name": "lab1", "source": "no-such-folder"}, 400),
        ({"name": "../up", "source": "x"}, 400),
        ({"name": "lab1", "source": "x", "mode": "move"}, 400),
        ({"name": "lab1", "source": "x", "deadline": "tomorrow"}, 400),
    ):
        status, err = call(hub, "POST", "courses/ai101/handouts", tokens["teach1"], bad)
        assert status == code and err["error"] and err["detail"], (bad, err)
    assert tree(home(hub, "stu1") / "course") == before
    status, err = hub.admin("POST", "courses", {"name": "bad name!"})
    assert status == 400
    # an existing group becomes a course (its quota kept); no group is made twice
    hub.admin("POST", "groups", {"name": "plain", "profiles": ["cpu"], "quota": {"jobs": 3}})
    status, view = hub.admin("POST", "courses", {"name": "plain"})
    assert status == 200 and view["quota"]["jobs"] == 3
    hub.admin("DELETE", "groups/plain")


def test_hand_out_submit_late_and_collected_at_the_deadline(
    hub: devhub.DevHub, course: dict[str, Any], lab1: str
) -> None:
    tokens = course["tokens"]
    # stu1 edits; a second hand-out keeps the edit and says so
    mine = home(hub, "stu1") / "course/ai101/lab1/lab1.ipynb"
    mine.write_text("stu1's answer")
    status, again = call(hub, "POST", "courses/ai101/handouts", tokens["teach1"],
                         {"name": "lab1", "source": "lab1-starter"})  # fmt: skip
    row = next(r for r in again["students"] if r["student"] == "stu1")
    assert row["status"] == "up to date" and "lab1.ipynb" in row["kept"]
    assert mine.read_text() == "stu1's answer"

    # the student submits through the hub, as themself
    status, sub = call(hub, "POST", "courses/ai101/handouts/lab1/submit", tokens["stu1"])
    assert status == 201 and sub["late"] is False, sub
    snap = home(hub, "teach1") / "course/ai101/lab1/submissions/stu1/lab1.ipynb"
    assert snap.read_text() == "stu1's answer"
    assert call(hub, "POST", "courses/ai101/handouts/lab1/submit", tokens["teach1"])[0] == 403
    assert call(hub, "POST", "courses/ai101/handouts/lab1/submit", tokens["outsider"])[0] == 404
    assert call(hub, "POST", "courses/ai101/handouts/nope/submit", tokens["stu2"])[0] == 404

    # a deadline two seconds away: stu2 submits after it (late), stu3 is collected
    deadline = time.time() + 2
    body = {"name": "lab1", "source": "lab1-starter", "deadline": deadline}
    status, out = call(hub, "POST", "courses/ai101/handouts", tokens["teach1"], body)
    assert status == 201 and out["handout"]["deadline"] == deadline
    time.sleep(max(0, deadline - time.time()) + 0.5)
    (home(hub, "stu2") / "course/ai101/lab1/answer.py").write_text("print('late')\n")
    status, late = call(hub, "POST", "courses/ai101/handouts/lab1/submit", tokens["stu2"])
    assert status == 201 and late["late"] is True
    # reading the submissions collects what the deadline left (the timer would, within 30 s)
    status, table = call(hub, "GET", "courses/ai101/handouts/lab1/submissions", tokens["ta1"])
    assert status == 200, table
    rows = {r["student"]: r for r in table["submissions"]}
    assert (rows["stu1"]["status"], rows["stu1"]["how"]) == ("on time", "submit")
    assert (rows["stu2"]["status"], rows["stu2"]["display_name"]) == ("late", "李四")
    assert (rows["stu3"]["status"], rows["stu3"]["how"]) == ("on time", "collect")
    assert table["handout"]["collected"] is not None and table["handout"]["late"] == 1
    manifest = json.loads(
        (home(hub, "teach1") / "course/ai101/lab1/submissions/manifest.json").read_text()
    )
    answer = next(f for f in manifest["submissions"]["stu2"]["files"] if f["path"] == "answer.py")
    assert len(answer["sha256"]) == 64 and answer["size"] == len("print('late')\n")
    assert call(hub, "GET", "courses/ai101/handouts/lab1/submissions", tokens["stu3"])[0] == 403
    # the teacher's collect again keeps the students' own submissions
    status, again = call(hub, "POST", "courses/ai101/handouts/lab1/collect", tokens["teach1"])
    assert status == 200
    assert {r["student"]: r["status"] for r in again["students"]} == {
        "stu1": "submitted", "stu2": "submitted", "stu3": "collected"}  # fmt: skip


def cli(hub: devhub.DevHub, *args: str, token: str | None = None) -> subprocess.CompletedProcess:
    admin_url = f"{hub.url}/services/cube-admin/"
    return subprocess.run(
        [sys.executable, "-m", "cube_lab.cli", "course", *args,
         "--admin-url", admin_url, "--token", token or hub.token],
        capture_output=True, text=True, timeout=300, env={**os.environ, "LANG": "C"},
    )  # fmt: skip


def test_the_cli_scripts_a_course(hub: devhub.DevHub, course: dict[str, Any], lab1: str) -> None:
    teacher = course["tokens"]["teach1"]
    made = cli(hub, "create", "ai102", "--profile", "cpu", "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["name"] == "ai102"
    try:
        listed = cli(hub, "list")
        assert listed.returncode == 0 and "ai101" in listed.stdout and "ai102" in listed.stdout
        shown = cli(hub, "show", "ai101", token=teacher)
        assert shown.returncode == 0, shown.stderr
        assert "张三" in shown.stdout and "stu1" in shown.stdout and "lab1" in shown.stdout
        (home(hub, "teach1") / "lab2").mkdir(exist_ok=True)
        (home(hub, "teach1") / "lab2" / "task.md").write_text("do it")
        out = cli(hub, "handout", "ai101", "lab2", "--name", "lab2", "--deadline",
                  "2099-01-01T00:00:00+08:00", token=teacher)  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert "stu3" in out.stdout and "copied" in out.stdout
        assert (home(hub, "stu3") / "course/ai101/lab2/task.md").read_text() == "do it"
        submitted = cli(hub, "submit", "ai101", "lab2", "--json", token=course["tokens"]["stu1"])
        assert submitted.returncode == 0, submitted.stderr
        assert json.loads(submitted.stdout)["late"] is False
        collected = cli(hub, "collect", "ai101", "lab2", "--json", token=teacher)
        assert collected.returncode == 0, collected.stderr
        statuses = {r["student"]: r["status"] for r in json.loads(collected.stdout)["students"]}
        assert statuses == {"stu1": "submitted", "stu2": "collected", "stu3": "collected"}
        subs = cli(hub, "submissions", "ai101", "lab2", token=teacher)
        assert subs.returncode == 0 and "王五" in subs.stdout and "on time" in subs.stdout
        refused = cli(hub, "show", "ai101", token=course["tokens"]["stu1"])
        assert refused.returncode == 1 and "only the teachers" in refused.stderr
    finally:  # the course list is ai101 alone for the other tests
        hub.admin("DELETE", "groups/ai102")


def test_the_course_page(hub: devhub.DevHub, course: dict[str, Any], lab1: str) -> None:
    status, server = hub.spawn("stu1", {"profile": "cpu", "project": "ai101"})
    assert status == 201, server
    try:
        status, view = call(hub, "GET", "courses/ai101", course["tokens"]["teach1"])
        people = {m["name"]: m for m in view["members"]}
        assert people["stu1"]["servers"][0]["profile"] == "cpu"
        assert people["stu1"]["usage"].get("servers") == 1
        assert view["running"] == 1 and people["stu2"]["servers"] == []
        assert people["stu1"]["gpu_hours"] == 0.0  # the ledger's GPU-hours: a cpu profile
        for lang, words in (("en", "Hand-outs"), ("zh-CN", "分发")):
            with httpx.Client(base_url=hub.url, follow_redirects=False,
                              headers={"Accept-Language": lang}) as client:  # fmt: skip
                assert login(client, "teach1", course["passwords"]["teach1"]).status_code == 302
                page = client.get("/services/cube-admin/courses/ai101", follow_redirects=True)
                assert page.status_code == 200, page.text[:500]
                assert words in page.text
                assert re.search(
                    r'data-member="stu1"[^>]*>\s*<td>stu1\s*<span[^>]*>张三', page.text
                )
                assert 'data-action="stop"' in page.text and 'data-action="message"' in page.text
                assert "lab1" in page.text
        with httpx.Client(base_url=hub.url, follow_redirects=False) as client:
            assert login(client, "stu2", course["passwords"]["stu2"]).status_code == 302
            page = client.get("/services/cube-admin/courses/ai101", follow_redirects=True)
            # a student's own page: their hand-outs with Submit, not the members' figures
            assert page.status_code == 200 and 'id="my-handouts"' in page.text
            assert 'data-member="stu1"' not in page.text and "张三" not in page.text
        # Stop and Message: the course's teacher may, for a student of theirs; a student not
        tokens = course["tokens"]
        body = {"message": "save your work"}
        assert call(hub, "POST", "users/stu1/message", tokens["stu2"], body)[0] == 403
        status, sent = call(hub, "POST", "users/stu1/message", tokens["teach1"], body)
        assert status == 201, sent
        assert call(hub, "POST", "users/teach1/message", tokens["ta1"], body)[0] == 403
        status, stopped = call(hub, "POST", "servers/stu1/stop", tokens["teach1"],
                               {"reason": "lab is over"})  # fmt: skip
        assert status == 200 and stopped["stopped"] == [""], stopped
    finally:
        hub.stop_server("stu1")


def lab(hub: devhub.DevHub, method: str, path: str, token: str, body: Any = None) -> Any:
    """A cube-lab API request to the cube-lab service, as the JupyterLab panels make them."""
    return hub.request(method, f"/services/cube-lab/cube/api/v1/{path}", body, token=token)


def test_the_lab_course_panel_lists_and_submits(hub: devhub.DevHub, course: dict[str, Any]) -> None:
    """What the JupyterLab Course panel calls: the cube-lab service asks cube-admin, with its
    own token, for the user a request came from; nobody acts for anybody else."""
    tokens = course["tokens"]
    # lab5 handed out (due 2099) and collected before anybody submitted
    (home(hub, "teach1") / "lab5").mkdir()
    (home(hub, "teach1") / "lab5" / "task.md").write_text("do it")
    status, out = call(hub, "POST", "courses/ai101/handouts", tokens["teach1"],
                       {"name": "lab5", "source": "lab5", "deadline": 4070880000})  # fmt: skip
    assert status == 201, out
    status, out = call(hub, "POST", "courses/ai101/handouts/lab5/collect", tokens["teach1"])
    assert status == 200, out
    status, mine = lab(hub, "GET", "courses/mine", tokens["stu3"])
    assert status == 200 and mine["hub"] is True and mine["user"] == "stu3", mine
    [ai101] = mine["courses"]
    assert (ai101["name"], ai101["role"]) == ("ai101", "student")
    assert ai101["page"] == "/services/cube-admin/courses/ai101"
    lab5 = {h["name"]: h for h in ai101["handouts"]}["lab5"]
    assert lab5["folder"] == "course/ai101/lab5" and lab5["handed_out"] is True
    assert lab5["submission"]["how"] == "collect"
    status, staff = lab(hub, "GET", "courses/mine", tokens["teach1"])
    assert [(c["role"], c["handouts"]) for c in staff["courses"]] == [("teacher", [])]
    assert lab(hub, "GET", "courses/mine", tokens["outsider"])[1]["courses"] == []

    (home(hub, "stu3") / "course/ai101/lab5/answer.py").write_text("print(42)")
    status, sub = lab(hub, "POST", "courses/ai101/handouts/lab5/submit", tokens["stu3"],
                      {"user": "stu2"})  # fmt: skip
    assert status == 201, sub
    assert (sub["student"], sub["how"], sub["late"]) == ("stu3", "submit", False)
    assert "answer.py" in [f["path"] for f in sub["files"]]
    status, after = lab(hub, "GET", "courses/mine", tokens["stu3"])
    lab5 = {h["name"]: h for h in after["courses"][0]["handouts"]}["lab5"]
    assert lab5["submission"]["how"] == "submit" and lab5["submission"]["files"] == len(
        sub["files"]
    )
    # refusals keep cube-admin's words
    status, err = lab(hub, "POST", "courses/ai101/handouts/lab5/submit", tokens["teach1"])
    assert status == 403 and err["detail"]
    status, err = lab(hub, "POST", "courses/nope/handouts/lab5/submit", tokens["stu3"])
    assert status == 404 and err["error"]
    # cube-admin itself: only an admin names another user
    assert call(hub, "GET", "my/courses?user=stu2", tokens["stu3"])[0] == 403
    assert call(hub, "POST", "courses/ai101/handouts/lab5/submit", tokens["stu3"],
                {"user": "stu2"})[0] == 403  # fmt: skip
    status, own = call(hub, "GET", "my/courses", tokens["stu3"])
    assert status == 200 and own["user"] == "stu3"


def test_models_and_runs_travel_through_both_services(
    hub: devhub.DevHub, course: dict[str, Any]
) -> None:
    """A model handed out lands read-only in the course's project (cube-admin asks the cube-lab
    service with its own token); a student's submission carries the model registered from
    the assignment's notebook and the pipeline run of the assignment's .pipeline file."""
    tokens = course["tokens"]
    teacher = home(hub, "teach1")
    (teacher / "lab3").mkdir(parents=True)
    (teacher / "base.bin").write_bytes(b"weights" * 100)
    status, base = lab(hub, "POST", "models", tokens["teach1"],
                       {"name": "base", "path": "base.bin", "metrics": {"acc": 0.6}})  # fmt: skip
    assert status == 201, base
    (teacher / "lab3" / "task.md").write_text("Fine-tune base; register your model.")
    status, out = call(hub, "POST", "courses/ai101/handouts", tokens["teach1"],
                       {"name": "lab3", "source": "lab3", "models": ["base"]})  # fmt: skip
    assert status == 201, out
    assert [(m["status"], m["to"]) for m in out["models"]] == [
        ("copied", {"project": "ai101", "name": "base", "version": 1})]  # fmt: skip
    # a student reads it and may not delete it; the reason says what to do instead
    status, seen = lab(hub, "GET", "projects/ai101/models/base", tokens["stu1"])
    assert status == 200 and seen["read_only"] is True and seen["owner"] == "teach1", seen
    status, err = lab(hub, "DELETE", "projects/ai101/models/base", tokens["stu1"])
    assert status == 403 and "course material" in err["error"] and err["detail"], err
    # a reference nobody has, a model of someone else's: 4xx from the store, nothing handed out
    for bad in (["nope"], ["stu1/base"], "../x"):
        status, err = call(hub, "POST", "courses/ai101/handouts", tokens["teach1"],
                           {"name": "lab4", "models": bad})  # fmt: skip
        assert status in (400, 404) and err["detail"], (bad, err)
    assert "lab4" not in {h["name"] for h in call(hub, "GET", "courses/ai101/handouts",
                                                   tokens["teach1"])[1]["handouts"]}  # fmt: skip
    # a dataset handed out from the CLI, on its own (no folder: read-only material)
    (teacher / "reviews.csv").write_text("text,label\n好看,pos\n难看,neg\n", encoding="utf-8")
    status, made = lab(hub, "POST", "datasets", tokens["teach1"],
                       {"name": "reviews", "path": "reviews.csv"})  # fmt: skip
    assert status == 201, made
    shown = cli(hub, "handout", "ai101", "--name", "data1", "--dataset", "reviews",
                token=tokens["teach1"])  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "ai101/reviews" in shown.stdout and "copied" in shown.stdout
    status, found = lab(hub, "GET", "projects/ai101/datasets/reviews", tokens["stu2"])
    assert status == 200 and found["read_only"] is True and found["item_count"] == 2, found
    missing = cli(hub, "handout", "ai101", "--name", "data2", "--dataset", "nope",
                  token=tokens["teach1"])  # fmt: skip
    assert missing.returncode != 0 and "nope" in missing.stderr
    # only cube-admin may call the store's course routes
    body = {"teacher": "teach1", "course": "ai101", "handout": "x", "models": ["base"]}
    for token in (tokens["teach1"], hub.token):
        status, err = hub.request("POST", "/services/cube-lab/course-material/handout", body,
                                  token=token)  # fmt: skip
        assert status == 403, err
    anonymous = httpx.post(f"{hub.url}/services/cube-lab/course-material/collect", json=body)
    assert anonymous.status_code == 403, anonymous.text

    # the student works in the folder: a pipeline run, a model from the notebook
    work = home(hub, "stu1") / "course/ai101/lab3"
    (work / "step.py").write_text("print('epoch 1 loss 0.25')\n")
    write_pipeline(work, [node("train", filename="step.py")], name="lab3")
    status, run = lab(hub, "POST", "pipelines/runs", tokens["stu1"],
                      {"path": "course/ai101/lab3/p.pipeline"})  # fmt: skip
    assert status in (200, 201, 202), run
    deadline = time.monotonic() + 120
    while run["status"] in ("queued", "pending", "running") and time.monotonic() < deadline:
        time.sleep(0.5)
        run = lab(hub, "GET", f"pipelines/runs/{run['id']}", tokens["stu1"])[1]
    assert run["status"] == "succeeded", run
    (work / "tuned.bin").write_bytes(b"tuned" * 100)
    body = {"name": "tuned", "path": "course/ai101/lab3/tuned.bin", "metrics": {"acc": 0.9},
            "source": "course/ai101/lab3/train.ipynb"}  # fmt: skip
    status, mine = lab(hub, "POST", "models", tokens["stu1"], body)
    assert status == 201, mine

    status, sub = call(hub, "POST", "courses/ai101/handouts/lab3/submit", tokens["stu1"])
    assert status == 201, sub
    assert [(r["kind"], r["id"], r["status"]) for r in sub["runs"]] == [
        ("pipeline", run["id"], "succeeded")]  # fmt: skip
    [copied] = sub["models"]
    assert copied["to"] == {"project": "teach1", "name": "ai101.lab3.tuned", "version": 1}
    status, version = lab(hub, "GET", "projects/teach1/models/ai101.lab3.tuned/versions/1",
                          tokens["teach1"])  # fmt: skip
    assert status == 200 and version["tags"]["cube_lab.student"] == "stu1", version
    assert version["metrics"] == {"acc": 0.9}
    assert lab(hub, "GET", "projects/teach1/models/ai101.lab3.tuned", tokens["stu1"])[0] == 404
    runs = teacher / "course/ai101/lab3/submissions/stu1/cube-lab-runs"
    assert json.loads((runs / "runs.json").read_text())[0]["id"] == run["id"]
    assert "epoch 1 loss 0.25" in (runs / f"pipeline-{run['id']}" / "train.log").read_text()
    status, table = call(hub, "GET", "courses/ai101/handouts/lab3/submissions", tokens["teach1"])
    row = next(r for r in table["submissions"] if r["student"] == "stu1")
    assert len(row["models"]) == 1 and len(row["runs"]) == 1


def active_now(hub: devhub.DevHub, user: str) -> None:
    """``user``'s server was active just now, as its lab reports to the hub."""
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    body = {"last_activity": now, "servers": {"": {"last_activity": now}}}
    status, answer = hub.hub("POST", f"/users/{user}/activity", body)
    assert status == 200, answer


def swept_already(hub: devhub.DevHub, user: str) -> bool:
    """``user``'s server is stopping or gone though no test stopped it: cube-admin's own
    periodic sweep (every 30 s, the same ``stop_idle``) found it idle first."""
    server = (hub.hub("GET", f"/users/{user}")[1].get("servers") or {}).get("")
    return not server or server.get("pending") == "stop"


def test_each_students_share_and_idle_servers(hub: devhub.DevHub, course: dict[str, Any]) -> None:
    """A course whose students may each hold 1 CPU core, and whose servers are stopped after
    2 idle seconds (an idle_timeout in seconds; the page takes minutes)."""
    tokens = course["tokens"]
    made = cli(hub, "create", "ai103", "--profile", "cpu", "--servers", "10",
               "--student-cpu", "1", "--student-servers", "1", "--json")  # fmt: skip
    assert made.returncode == 0, made.stderr
    try:
        view = json.loads(made.stdout)
        assert view["quota"]["per_member"] == {"servers": 1, "cpu": 1}
        assert view["per_member"] == {"servers": 1, "cpu": 1}
        status, _ = hub.admin("POST", "groups/ai103/members", {"users": "stu1 stu2"})
        assert status == 200
        status, changed = hub.admin("PATCH", "groups/ai103", {"idle_timeout": 2})
        assert status == 200 and changed["idle_timeout"] == 2, changed
        assert hub.admin("PATCH", "groups/ai103", {"idle_timeout": "soon"})[0] == 400

        # cube-admin also sweeps on its own every 30 s: when that sweep stops the idle server
        # before this test's reconcile does, start it again and wait for the next idle spell
        # (the sweep after is 30 s away)
        for _ in range(3):
            hub.stop_server("stu1")  # gone (the sweep's stop may still be on its way)
            status, server = hub.spawn("stu1", {"profile": "cpu", "project": "ai103"})
            assert status == 201, server
            active_now(hub, "stu1")  # idle from now (the hub may have seen it ready late)
            # stu1's one core is taken by the server: a job of theirs is refused with their
            # share
            job = {"kind": "job", "project": "ai103", "cpu": 1}
            status, refused = call(hub, "POST", "admission", tokens["stu1"], job)
            assert status == 403 and refused["quota_exceeded"], refused
            assert refused["error"] == (
                "stu1 uses 1 of the 1 CPU cores each member of project ai103 may use; this needs 1"
            )
            status, granted = call(hub, "POST", "admission", tokens["stu2"], job)  # stu2's own
            assert status == 201, granted
            call(hub, "DELETE", f"admission/{granted['id']}", tokens["stu2"])
            # idle past the course's 2 seconds: stopped at the next reconcile, and told why
            time.sleep(3)
            status, swept = hub.admin("POST", "reconcile")
            assert status == 200, swept
            if swept["stopped_idle"] or not swept_already(hub, "stu1"):
                break
        assert [(s["user"], s["group"]) for s in swept["stopped_idle"]] == [("stu1", "ai103")]
        deadline = time.monotonic() + 30
        while hub.hub("GET", "/users/stu1")[1].get("servers") and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not hub.hub("GET", "/users/stu1")[1].get("servers")
        status, notices = call(hub, "GET", "notices", tokens["stu1"])
        [idle] = [n for n in notices["notices"] if n["kind"] == "idle"]
        assert idle["by"] == "ai103" and "limit of project ai103" in idle["text"]
        with httpx.Client(base_url=hub.url, headers={"Accept-Language": "zh-CN"}) as client:
            assert login(client, "stu1", course["passwords"]["stu1"]).status_code == 302
            page = client.get("/hub/home", follow_redirects=True)
            assert "空闲" in page.text and "ai103" in page.text, page.text[:2000]
    finally:
        hub.stop_server("stu1")
        hub.admin("DELETE", "groups/ai103")
