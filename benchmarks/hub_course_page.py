"""The course page and its data API with a class on the hub: p50/p95 over N requests.

Seeding: ``benchmarks/hub_seed.py`` (the real hub, ``--students`` students in one project
group, each with a running server through the real admission path, a month of GPU-hours in the
ledger); then that group is made a course (``POST api/courses``), a roster gives it a teacher
and every student a Chinese display name (``POST api/groups/G/roster``), the teacher hands out
a starter notebook and a registered model to every student (``POST api/courses/G/handouts``:
the model read-only in the course's project), half of the students register a model from
the notebook and submit with their own tokens (``.../submit``: the folder's snapshot, and the
cube-lab service's look-up of the folder's models and runs, the model copied to the teacher;
each timed), and the teacher collects the other half at once (``.../collect``, timed).

    python benchmarks/hub_course_page.py [--students 60] [--requests 100]

Target (issue 24): < 300 ms p95 for the page and for ``GET api/courses/G`` on this machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hub_admin_page import measure, pct, report
from hub_seed import seeded_hub

SURNAMES = "王李张刘陈杨黄赵吴周"
GIVEN = "伟芳娜敏静丽强磊军洋"


def seed_course(hub: object, info: dict[str, object]) -> tuple[str, dict[str, list[float]]]:
    """The seeded group as a course with a teacher, a hand-out and half of it submitted; the
    times (ms) of the submissions and of the collection of the rest."""
    group = str(info["group"])
    students = list(info["students"])  # type: ignore[call-overload]
    status, body = hub.admin("POST", "courses", {"name": group})  # type: ignore[attr-defined]
    assert status == 200, body
    rows = ["user name,display name,e-mail,role", "admin,林老师,lin@example.edu,teacher"]
    for i, name in enumerate(students):
        rows.append(f"{name},{SURNAMES[i % 10]}{GIVEN[(i // 10) % 10]},{name}@example.edu,student")
    resp = httpx.post(
        f"{hub.url}/services/cube-admin/api/groups/{group}/roster",  # type: ignore[attr-defined]
        content=("\n".join(rows) + "\n").encode(),
        headers={
            "Authorization": f"token {hub.token}",  # type: ignore[attr-defined]
            "Content-Type": "text/csv",
        },
        timeout=120,
    )
    body = resp.json()
    assert resp.status_code == 200, body
    teacher = next(r for r in body["rows"] if r["name"] == "admin")
    assert teacher["role"] == "teacher" and not teacher.get("error"), teacher
    starter = hub.data_dir / "users" / "admin" / "lab1-starter"  # type: ignore[attr-defined]
    starter.mkdir(parents=True, exist_ok=True)
    notebook = {
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# Lab 1"]}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (starter / "lab1.ipynb").write_text(json.dumps(notebook))
    (starter.parent / "base.bin").write_bytes(b"weights" * 10_000)
    store = "/services/cube-lab/cube/api/v1/models"
    status, body = hub.request(  # type: ignore[attr-defined]
        "POST",
        store,
        {"name": "base", "path": "base.bin"},
        token=hub.user_token("admin"),  # type: ignore[attr-defined]
    )
    assert status == 201, body
    status, body = hub.admin(  # type: ignore[attr-defined]
        "POST",
        f"courses/{group}/handouts",
        {"source": "lab1-starter", "name": "lab1", "models": ["base"]},
    )
    assert status == 201, body
    assert sum(1 for s in body["students"] if s["status"] == "copied") == len(students), body
    times: dict[str, list[float]] = {"submit": [], "collect": []}
    for name in students[: len(students) // 2]:
        token = hub.user_token(name)  # type: ignore[attr-defined]
        folder = f"course/{group}/lab1"
        home = hub.data_dir / "users" / name  # type: ignore[attr-defined]
        (home / folder / "answer.bin").write_bytes(name.encode() * 1000)
        model = {"name": "answer", "path": f"{folder}/answer.bin", "source": f"{folder}/lab1.ipynb"}
        status, body = hub.request("POST", store, model, token=token)  # type: ignore[attr-defined]
        assert status == 201, body
        start = time.perf_counter()
        status, body = hub.admin(  # type: ignore[attr-defined]
            "POST", f"courses/{group}/handouts/lab1/submit", token=token
        )
        times["submit"].append((time.perf_counter() - start) * 1000)
        assert status == 201 and len(body["models"]) == 1, body
    start = time.perf_counter()
    status, body = hub.admin("POST", f"courses/{group}/handouts/lab1/collect")  # type: ignore[attr-defined]
    times["collect"].append((time.perf_counter() - start) * 1000)
    assert status == 200, body
    return group, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--requests", type=int, default=100)
    args = parser.parse_args()
    with seeded_hub(args.students) as (hub, info):
        group, writes = seed_course(hub, info)
        headers = {"Authorization": f"token {hub.token}"}
        base = "/services/cube-admin/"
        with httpx.Client(base_url=hub.url, headers=headers, timeout=60) as client:
            view = client.get(f"{base}api/courses/{group}").json()
            assert view["running"] == info["running"], view["running"]
            assert len(view["members"]) == args.students + 1, len(view["members"])
            page = client.get(f"{base}courses/{group}").text
            assert page.count("data-student=") == args.students, "submission rows"
            rows = {
                "course page (HTML)": measure(client, f"{base}courses/{group}", args.requests),
                f"GET api/courses/{group}": measure(
                    client, f"{base}api/courses/{group}", args.requests
                ),
                "GET .../handouts/lab1/submissions": measure(
                    client, f"{base}api/courses/{group}/handouts/lab1/submissions", args.requests
                ),
            }
    report(rows, students=args.students, running=info["running"], requests=args.requests)
    submits = writes["submit"]
    print(
        f"POST .../submit, {len(submits)} students each once (with a model from the notebook): "
        f"p50 {statistics.median(submits):.1f} ms, p95 {pct(submits, 0.95):.1f} ms; "
        f"POST .../collect of the other {args.students - len(submits)} folders: "
        f"{writes['collect'][0]:.0f} ms"
    )


if __name__ == "__main__":
    main()
