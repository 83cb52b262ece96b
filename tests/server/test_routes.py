"""The REST API through a real jupyter-server: auth, errors, tenancy, registry routes."""

from __future__ import annotations

import io
import re
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import isolation
import pytest
from server_util import free_port, start_server, wait_up

from cube_lab.handlers import routes
from cube_lab.handlers.openapi import openapi_document

METHODS = ("get", "post", "put", "patch", "delete")


def concrete(pattern: str) -> str:
    """Turn a route regex into a path with sample values."""
    return re.sub(r"\([^)]*\)", "sample", pattern).removeprefix("/cube/api/v1/")


@pytest.fixture(scope="module")
def server_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """One real jupyter server with cube-lab for every route's check (they change nothing)."""
    tmp = tmp_path_factory.mktemp("routes")
    (tmp / "root").mkdir()
    port = free_port()
    proc = start_server(tmp / "root", tmp / "data", port, tmp, isolation.environment(tmp))
    try:
        wait_up(port)
        yield port
    finally:
        proc.terminate()
        proc.wait(15)


def anonymous(port: int, method: str, path: str) -> int:
    """The status of one request without credentials."""
    body = b"{}" if method in ("POST", "PUT", "PATCH") else None
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/cube/api/v1/{path}", method=method, data=body
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.mark.parametrize("pattern, handler", routes())
def test_every_route_needs_authentication(server_port: int, pattern: str, handler: Any) -> None:
    methods = [
        m
        for m in METHODS
        if m in vars(handler)
        or any(
            m in vars(base)
            for base in handler.__mro__[1:]
            if base.__module__.startswith("cube_lab")
        )
    ]
    assert methods, f"{handler.__name__} serves no method"
    for method in methods:
        status = anonymous(server_port, method.upper(), concrete(pattern))
        assert status in (401, 403), f"{method.upper()} {pattern} answered {status} without auth"


def test_every_route_is_documented_in_openapi() -> None:
    def shape(path: str) -> str:
        return re.sub(r"\{[^}]+\}", "{}", re.sub(r"\([^)]*\)", "{}", path))

    documented = {shape(p): ops for p, ops in openapi_document()["paths"].items()}
    for pattern, handler in routes():
        path = shape(pattern.removeprefix("/cube/api/v1"))
        assert path in documented, f"{path} ({handler.__name__}) missing in openapi.yaml"
        for method in METHODS:
            if method in vars(handler):
                assert method in documented[path], f"{method} {path} undocumented"


async def test_openapi_and_whoami(api: Any) -> None:
    status, doc = await api("alice", "GET", "openapi.json")
    assert status == 200 and doc["openapi"].startswith("3.")
    status, me = await api("alice", "GET", "whoami")
    assert status == 200 and me["user"] == "alice" and me["backend"] == "local"
    assert [(p["name"], p["kind"], p["role"]) for p in me["projects"]] == [
        ("alice", "personal", "owner")
    ]


async def test_no_courses_outside_the_hub(api: Any, monkeypatch: Any) -> None:
    monkeypatch.delenv("CUBE_HUB_ADMIN_URL", raising=False)
    status, mine = await api("alice", "GET", "courses/mine")
    assert status == 200 and mine == {"hub": False, "user": "alice", "courses": []}
    status, err = await api("alice", "POST", "courses/ai101/handouts/lab1/submit")
    assert status == 400 and "hub" in err["error"] and err["detail"]


def write_model(root: Path, name: str = "model.pkl") -> str:
    (root / "models").mkdir(exist_ok=True)
    (root / "models" / name).write_bytes(b"pickled bytes" * 50)
    return f"models/{name}"


async def test_register_list_get_download_delete(api: Any, jp_root_dir: Path) -> None:
    path = write_model(jp_root_dir)
    status, v = await api(
        "alice",
        "POST",
        "models",
        {
            "name": "iris",
            "path": path,
            "flavor": "sklearn",
            "metrics": {"accuracy": 0.97},
            "params": {"max_depth": 4},
            "aliases": ["staging"],
            "source": "train.ipynb",
        },
    )
    assert status == 201, v
    assert (v["version"], v["project"], v["flavor"], v["aliases"]) == (
        1,
        "alice",
        "sklearn",
        ["staging"],
    )
    status, v2 = await api("alice", "POST", "models", {"name": "iris", "path": path})
    assert status == 201 and v2["version"] == 2
    status, page = await api("alice", "GET", "models", params={"q": "ir"})
    assert status == 200 and page["total"] == 1
    assert page["models"][0] | {"updated_at": None, "created_at": None, "id": None} == {
        "id": None,
        "project": "alice",
        "name": "iris",
        "description": "",
        "owner": "alice",
        "archived": False,
        "created_at": None,
        "updated_at": None,
        "latest_version": 2,
        "version_count": 2,
        "flavor": "generic",
        "aliases": {"staging": 1},
        "read_only": False,
    }
    status, detail = await api("alice", "GET", "projects/alice/models/iris")
    assert status == 200 and [x["version"] for x in detail["versions"]] == [2, 1]
    assert detail["versions"][1]["lineage"]["source"] == "train.ipynb"
    status, got = await api("alice", "GET", "projects/alice/models/iris/versions/staging")
    assert status == 200 and got["metrics"] == {"accuracy": 0.97}
    status, data = await api("alice", "GET", "projects/alice/models/iris/versions/1/download")
    assert status == 200 and data == b"pickled bytes" * 50
    status, cmp = await api(
        "alice", "GET", "projects/alice/models/iris/compare", params={"versions": "1,2"}
    )
    assert status == 200 and cmp["metrics"] == ["accuracy"]
    status, moved = await api(
        "alice",
        "PUT",
        "projects/alice/models/iris/aliases/staging",
        {"version": 2, "expected_version": 1},
    )
    assert status == 200 and moved["aliases"] == {"staging": 2}
    status, err = await api(
        "alice",
        "PUT",
        "projects/alice/models/iris/aliases/staging",
        {"version": 1, "expected_version": 1},
    )
    assert status == 409 and err["detail"]["current_version"] == 2
    status, _ = await api("alice", "DELETE", "projects/alice/models/iris/versions/1")
    assert status == 204
    status, _ = await api("alice", "DELETE", "projects/alice/models/iris")
    assert status == 204
    status, err = await api("alice", "GET", "projects/alice/models/iris")
    assert status == 404 and "not found" in err["error"]


async def test_folder_downloads_as_zip(api: Any, jp_root_dir: Path) -> None:
    folder = jp_root_dir / "bundle"
    (folder / "data").mkdir(parents=True)
    (folder / "MLmodel").write_text("flavors:\n  sklearn: {}\n")
    (folder / "data" / "model.pkl").write_bytes(b"abc")
    status, v = await api("alice", "POST", "models", {"name": "bundle", "path": "bundle"})
    assert status == 201 and (v["flavor"], v["format"]) == ("sklearn", "mlflow")
    status, data = await api("alice", "GET", "projects/alice/models/bundle/versions/1/download")
    assert status == 200
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert sorted(names) == ["bundle/MLmodel", "bundle/data/model.pkl"]


async def test_user_b_cannot_see_user_a_models(api: Any, jp_root_dir: Path) -> None:
    path = write_model(jp_root_dir)
    assert (await api("alice", "POST", "models", {"name": "private", "path": path}))[0] == 201
    status, page = await api("bob", "GET", "models")
    assert status == 200 and page["total"] == 0
    for method, route in [
        ("GET", "projects/alice/models/private"),
        ("GET", "projects/alice/models/private/versions/1"),
        ("GET", "projects/alice/models/private/versions/1/download"),
        ("PATCH", "projects/alice/models/private"),
        ("DELETE", "projects/alice/models/private"),
        ("PUT", "projects/alice/models/private/aliases/prod"),
        ("GET", "projects/alice"),
    ]:
        body = {"version": 1} if method == "PUT" else None
        status, err = await api("bob", method, route, body)
        assert status == 404 and "not found" in err["error"], f"bob: {method} {route}"
    status, _ = await api("bob", "POST", "models", {"name": "x", "path": path, "project": "alice"})
    assert status == 404
    status, _ = await api("alice", "GET", "projects/alice/models/private")
    assert status == 200


async def test_shared_project_is_seen_by_its_members(api: Any, jp_root_dir: Path) -> None:
    path = write_model(jp_root_dir)
    status, project = await api("alice", "POST", "projects", {"name": "vision"})
    assert status == 201 and project["role"] == "owner"
    assert (
        await api("alice", "POST", "models", {"name": "det", "path": path, "project": "vision"})
    )[0] == 201
    assert (await api("bob", "GET", "projects/vision/models/det"))[0] == 404
    status, _ = await api("bob", "PUT", "projects/vision/members/bob", {"role": "owner"})
    assert status == 404  # bob can't add himself to a project he can't see
    status, project = await api("alice", "PUT", "projects/vision/members/bob", {"role": "member"})
    assert status == 200 and [i["username"] for i in project["invitations"]] == ["bob"]
    assert (await api("bob", "GET", "projects/vision/models/det"))[0] == 404  # only invited
    status, project = await api("bob", "POST", "invitations/vision/accept")
    assert status == 200 and {m["username"] for m in project["members"]} == {"alice", "bob"}
    status, detail = await api("bob", "GET", "projects/vision/models/det")
    assert status == 200 and detail["owner"] == "alice"
    status, err = await api("bob", "PUT", "projects/vision/members/carol", {"role": "member"})
    assert status == 403 and "owners" in err["error"]


@pytest.mark.parametrize(
    "body, status, fragment",
    [
        ("not json", 400, "not valid JSON"),
        ([1, 2], 400, "must be a JSON object"),
        ({"path": "models/model.pkl"}, 400, "model name is required"),
        ({"name": "bad name!", "path": "models/model.pkl"}, 400, "invalid model name"),
        ({"name": "m"}, 400, "path is required"),
        ({"name": "m", "path": "models/missing.pkl"}, 400, "does not exist"),
        ({"name": "m", "path": "../outside.pkl"}, 400, "outside the server root"),
        ({"name": "m", "path": "/etc/passwd"}, 400, "does not exist"),
        (
            {"name": "m", "path": "models/model.pkl", "metrics": {"acc": "x"}},
            400,
            "must be a number",
        ),
        ({"name": "m", "path": "models/model.pkl", "colour": "red"}, 400, "unknown fields"),
        ({"name": "m", "path": "models/model.pkl", "project": "nope"}, 404, "project 'nope'"),
    ],
)
async def test_bad_registration_gets_a_clear_error(
    api: Any, jp_root_dir: Path, body: Any, status: int, fragment: str
) -> None:
    write_model(jp_root_dir)
    (jp_root_dir.parent / "outside.pkl").write_bytes(b"x")
    code, err = await api("alice", "POST", "models", body)
    assert code == status and fragment in err["error"], err
    assert set(err) == {"error", "detail"}
    assert (await api("alice", "GET", "models"))[1]["total"] == 0


async def test_symlink_out_of_root_is_refused(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir.parent / "secret.key").write_bytes(b"k")
    (jp_root_dir / "link.key").symlink_to(jp_root_dir.parent / "secret.key")
    code, err = await api("alice", "POST", "models", {"name": "m", "path": "link.key"})
    assert code == 400 and "outside the server root" in err["error"]


async def test_query_errors(api: Any) -> None:
    code, err = await api("alice", "GET", "models", params={"limit": "many"})
    assert code == 400 and "limit" in err["error"]
    code, err = await api("alice", "GET", "models", params={"limit": "100000"})
    assert code == 400 and "between 1 and 500" in err["error"]
    code, err = await api("alice", "GET", "models", params={"include_archived": "maybe"})
    assert code == 400
