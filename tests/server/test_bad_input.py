"""Bad input the security review sent (issue 15, defect 6) gets a 4xx JSON answer, never a 500:
NUL bytes in bodies, query arguments and URL paths; ids and offsets past 2^63; JSON nested
100,000 levels deep on every operation that takes a body; file names with a newline or a quote
in a download's Content-Disposition."""

from __future__ import annotations

import json
import re
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from labeling_util import make_images
from werkzeug.http import parse_options_header

from cube_lab.handlers.inputs import INT64_MAX, content_disposition
from cube_lab.handlers.openapi import openapi_document

HUGE = "59355821030896467968"  # > 2^64, the review's schedule id
HUGE_OFFSET = "484010684395397251072"


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def write_pipeline(root: Path) -> str:
    (root / "p.pipeline").write_text(
        json.dumps(
            {
                "doc_type": "pipeline",
                "version": "3.0",
                "id": "p",
                "primary_pipeline": "main",
                "pipelines": [{"id": "main", "nodes": [], "app_data": {"version": 8, "name": "p"}}],
            }
        )
    )
    return "p.pipeline"


async def test_nul_bytes_in_bodies_are_refused_naming_the_field(
    api: Any, jp_root_dir: Path
) -> None:
    write_pipeline(jp_root_dir)
    bad_path = "p.pipeline\u0000.txt"
    cases = [
        ("pipelines/validate", {"path": bad_path}, "'path'"),
        ("pipelines/compile", {"path": bad_path}, "'path'"),
        ("pipelines/runs", {"path": bad_path}, "'path'"),
        ("pipelines/schedules", {"path": bad_path, "cron": "0 * * * *"}, "'path'"),
        (
            "pipelines/runs",
            {"path": "p.pipeline", "params": {"x": ["ok", "a\u0000"]}},
            "params.x[1]",
        ),
        ("datasets", {"name": "d", "path": "pics\u0000"}, "'path'"),
        ("models", {"name": "m\u0000", "path": "x.pkl"}, "'name'"),
        ("models", {"name": "m", "path": "x.pkl", "tags": {"k\u0000": "v"}}, "key"),
        ("training/jobs/anything/register", {"path": "p\u0000"}, "'path'"),
        ("labeling", {"name": "l", "dataset": "d\u0000", "type": "image-class"}, "'dataset'"),
    ]
    for path, body, named in cases:
        status, err = await api("alice", "POST", path, body)
        assert status == 400, (path, body, status, err)
        assert "NUL" in err["error"] and named in err["error"], (path, err)


async def test_nul_bytes_in_query_arguments_and_url_paths(api: Any) -> None:
    status, err = await api("alice", "GET", "models", params={"q": "ir\u0000is"})
    assert status == 400 and "'q'" in err["error"] and "NUL" in err["error"], err
    status, err = await api("alice", "GET", "pipelines/runs", params={"path": "p\u0000.pipeline"})
    assert status == 400 and "'path'" in err["error"], err
    status, err = await api("alice", "GET", "projects/alice/models/iris\u0000x")
    assert status == 400 and "NUL" in err["error"] and "iris\\x00x" in err["error"], err
    # unauthenticated requests still learn nothing but 403
    status, _ = await api(None, "GET", "models", params={"q": "\u0000"})
    assert status == 403


async def test_ids_past_64_bits_are_not_found(api: Any, jp_root_dir: Path) -> None:
    make_images(jp_root_dir / "pics", 2)
    assert (await api("alice", "POST", "datasets", {"name": "pics", "path": "pics"}))[0] == 201
    body = {"name": "pets", "dataset": "pics", "type": "image-class", "labels": ["a", "b"]}
    assert (await api("alice", "POST", "labeling", body))[0] == 201
    lab = "projects/alice/labeling/pets"
    for method, path, body in [
        ("DELETE", f"pipelines/schedules/{HUGE}", None),
        ("PATCH", f"pipelines/schedules/{HUGE}", {"enabled": False}),
        ("GET", f"{lab}/tasks/{HUGE}", None),
        ("PUT", f"{lab}/tasks/{HUGE}", {"result": {"labels": ["a"]}}),
        ("POST", f"{lab}/tasks/{HUGE}/review", {"decision": "accept"}),
        ("GET", f"projects/alice/datasets/pics/items/{HUGE}/content", None),
        ("GET", f"projects/alice/datasets/pics/items/{INT64_MAX + 1}/content", None),
        ("GET", "projects/alice/datasets/pics/items/\u00b2/content", None),  # "²" isdigit()
        ("GET", f"projects/alice/datasets/pics/items/{'9' * 5000}/content", None),
    ]:
        status, err = await api("alice", method, path, body)
        assert status == 404, (method, path, status, err)
        assert err["error"].startswith("no "), err
    # the largest id that can exist is looked up and simply not there
    status, err = await api("alice", "GET", f"{lab}/tasks/{INT64_MAX}")
    assert status == 404, err


async def test_offsets_and_limits_past_64_bits_are_bad_requests(api: Any) -> None:
    for path, name in [
        ("models", "offset"),
        ("models", "limit"),
        ("pipelines/runs", "limit"),
        ("training/jobs", "limit"),
        ("tuning/experiments", "limit"),
    ]:
        for value in (HUGE_OFFSET, "-1", "1.5", "1e3"):
            status, err = await api("alice", "GET", path, params={name: value})
            assert status == 400, (path, name, value, status, err)
            assert f"'{name}'" in err["error"], err
    status, page = await api("alice", "GET", "models", params={"offset": str(INT64_MAX)})
    assert status == 200 and page["models"] == []


async def test_integers_past_64_bits_in_a_body(api: Any, jp_root_dir: Path) -> None:
    status, err = await api("alice", "POST", "deployments", {"model": "m:1", "replicas": 2**64})
    assert status == 400 and "'replicas'" in err["error"] and "range" in err["error"], err
    status, err = await api(
        "alice", "POST", "models", '{"name": "m", "path": "x", "metrics": {"a": NaN}}'
    )
    assert status == 400 and "NaN" in err["detail"], err
    status, err = await api("alice", "GET", "projects/alice/models/m/versions/\u00b2")
    assert status == 404, err


def _operations_with_a_body() -> list[tuple[str, str]]:
    ops = []
    for path, item in openapi_document()["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and "requestBody" in op:
                filled = re.sub(r"\{[^}]+\}", "x", path).lstrip("/")
                ops.append((method.upper(), filled))
    return ops


@pytest.mark.parametrize("levels", [100_000, 65])
async def test_deeply_nested_json_on_every_operation_with_a_body(api: Any, levels: int) -> None:
    ops = _operations_with_a_body()
    assert len(ops) >= 25, ops
    body = _nested(levels)
    wrapped = '{"name": ' + body + "}"
    for method, path in ops:
        for sent in (body, wrapped):
            status, err = await api("alice", method, path, sent)
            # an operation on an object that does not exist may answer 404 before reading
            assert status in (400, 404), (method, path, status, err)
            if status == 400:
                assert "nested too deeply" in err["error"], (method, path, err)
    # where nothing is looked up first, the body itself is refused
    for path in ("models", "pipelines/validate", "datasets", "labeling", "deployments"):
        status, err = await api("alice", "POST", path, wrapped)
        assert status == 400 and "nested too deeply" in err["error"], (path, err)


def _filename_from(header: str) -> str:
    """What a client that reads RFC 6266 / 5987 (werkzeug's parser) takes as the name."""
    disposition, options = parse_options_header(header)
    assert disposition == "attachment"
    return options["filename"]


@pytest.mark.parametrize(
    "name", ["odd\nname.pkl", 'say "hi".pkl', "模型\\ü;x,y%41.pkl", "tab\there.pkl"]
)
async def test_downloads_encode_any_file_name(
    api: Any, jp_fetch: Any, jp_root_dir: Path, name: str
) -> None:
    from conftest import TOKENS

    (jp_root_dir / name).write_bytes(b"weights" * 20)
    status, v = await api("alice", "POST", "models", {"name": "odd", "path": name})
    assert status == 201, v
    resp = await jp_fetch(
        "cube", "api", "v1", "projects", "alice", "models", "odd", "versions", "1", "download",
        headers={"Authorization": f"token {TOKENS['alice']}"},
    )  # fmt: skip
    assert resp.code == 200 and resp.body == b"weights" * 20
    header = resp.headers["Content-Disposition"]
    assert "\n" not in header and "\r" not in header
    assert header == content_disposition(f"odd-v1-{name}")
    # a client that reads RFC 5987 gets the exact name back; the plain one is ASCII and safe
    assert _filename_from(header) == f"odd-v1-{name}"
    fallback = re.search(r'filename="([^"]*)"', header)
    assert fallback and fallback.group(1).isascii()
    exact = header.split("filename*=UTF-8''", 1)[1]
    assert urllib.parse.unquote(exact) == f"odd-v1-{name}"


def test_content_disposition_fallback() -> None:
    assert content_disposition("plain-v1.zip") == (
        "attachment; filename=\"plain-v1.zip\"; filename*=UTF-8''plain-v1.zip"
    )
    header = content_disposition('a"b\\c\r\nd.zip')
    assert header.startswith('attachment; filename="a_b_c__d.zip"; ')
