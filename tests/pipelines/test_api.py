"""The pipeline REST API through a real jupyter-server."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from pipeline_util import node, script, write_pipeline


async def wait_done(api: Any, user: str, run_id: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, run = await api(user, "GET", f"pipelines/runs/{run_id}")
        assert status == 200, run
        if run["status"] not in ("queued", "running"):
            return run
        await asyncio.sleep(0.2)
    raise AssertionError(f"run {run_id} did not finish")


async def test_run_watch_logs_and_results(api: Any, jp_root_dir: Path) -> None:
    folder = jp_root_dir / "flows"
    folder.mkdir()
    script(
        folder,
        "a.py",
        "import json, os\nprint('hello from a')\n"
        "open('out.csv', 'w').write('k,v\\n1,2\\n')\n"
        "json.dump({'acc': 0.9}, open(os.environ['CUBE_VALUES_FILE'], 'w'))\n",
    )
    script(folder, "b.py", "print('b sees', open('out.csv').read().count('\\n'), 'lines')\n")
    write_pipeline(
        folder,
        [
            node("a", filename="a.py", outputs=["out.csv"]),
            node("b", upstream=("a",), filename="b.py"),
        ],
    )
    status, problems = await api(
        "alice", "POST", "pipelines/validate", {"path": "flows/p.pipeline"}
    )
    assert status == 200 and problems["valid"] and problems["nodes"] == 2
    status, run = await api("alice", "POST", "pipelines/runs", {"path": "flows/p.pipeline"})
    assert status == 201 and run["pipeline_path"] == "flows/p.pipeline", run
    done = await wait_done(api, "alice", run["id"])
    assert done["status"] == "succeeded" and done["trigger"] == "manual"
    nodes = {n["id"]: n for n in done["nodes"]}
    assert nodes["a"]["values"] == {"acc": 0.9} and nodes["b"]["status"] == "succeeded"
    status, log = await api("alice", "GET", f"pipelines/runs/{run['id']}/nodes/b/log")
    assert status == 200 and "b sees 2 lines" in log["text"] and log["done"]
    status, again = await api(
        "alice", "GET", f"pipelines/runs/{run['id']}/nodes/b/log", params={"offset": log["offset"]}
    )
    assert again["text"] == "" and again["offset"] == log["offset"]
    status, results = await api("alice", "GET", f"pipelines/runs/{run['id']}/nodes/a/results")
    table = next(r for r in results["results"] if r["kind"] == "table")
    status, body = await api(
        "alice", "GET", f"pipelines/runs/{run['id']}/nodes/a/results/{table['path']}"
    )
    assert status == 200 and body == b"k,v\n1,2\n"
    status, listed = await api(
        "alice", "GET", "pipelines/runs", params={"path": "flows/p.pipeline"}
    )
    assert [r["id"] for r in listed["runs"]] == [run["id"]]
    # another user sees none of it
    assert (await api("bob", "GET", "pipelines/runs"))[1]["runs"] == []
    for route in (
        f"pipelines/runs/{run['id']}",
        f"pipelines/runs/{run['id']}/nodes/a/log",
        f"pipelines/runs/{run['id']}/nodes/a/results",
    ):
        assert (await api("bob", "GET", route))[0] == 404
    assert (await api("bob", "POST", f"pipelines/runs/{run['id']}/cancel"))[0] == 404


async def test_cancel_a_running_run(api: Any, jp_root_dir: Path) -> None:
    script(jp_root_dir, "slow.py", "import time; time.sleep(60)\n")
    write_pipeline(jp_root_dir, [node("slow", filename="slow.py")])
    status, run = await api("alice", "POST", "pipelines/runs", {"path": "p.pipeline"})
    assert status == 201
    for _ in range(100):
        if (await api("alice", "GET", f"pipelines/runs/{run['id']}"))[1]["status"] == "running":
            break
        await asyncio.sleep(0.1)
    status, _ = await api("alice", "POST", f"pipelines/runs/{run['id']}/cancel")
    assert status == 200
    done = await wait_done(api, "alice", run["id"], timeout=15)
    assert done["status"] == "cancelled"
    status, err = await api("alice", "POST", f"pipelines/runs/{run['id']}/cancel")
    assert status == 409 and "already ended" in err["error"]


async def test_invalid_pipelines_and_bad_requests(api: Any, jp_root_dir: Path) -> None:
    write_pipeline(jp_root_dir, [node("a", filename="missing.py")])
    status, report = await api("alice", "POST", "pipelines/validate", {"path": "p.pipeline"})
    assert status == 200 and not report["valid"]
    assert report["problems"][0] | {"message": ""} == {
        "node_id": "a",
        "node_label": "a",
        "field": "filename",
        "message": "",
    }
    status, err = await api("alice", "POST", "pipelines/runs", {"path": "p.pipeline"})
    assert status == 400 and err["detail"][0]["field"] == "filename"
    (jp_root_dir / "broken.pipeline").write_text("{not json")
    status, err = await api("alice", "POST", "pipelines/runs", {"path": "broken.pipeline"})
    assert status == 400 and "not valid JSON" in err["error"]
    for body, fragment in [
        ({"path": "../x.pipeline"}, "outside the server root"),
        ({"path": "a.txt"}, "not a .pipeline file"),
        ({"path": "p.pipeline", "colour": 1}, "unknown fields"),
        ({"path": "p.pipeline", "parallelism": "many"}, "whole number"),
    ]:
        status, err = await api("alice", "POST", "pipelines/runs", body)
        assert status == 400 and fragment in err["error"], (body, err)


async def test_templates_and_node_kinds_for_the_palette(api: Any) -> None:
    status, body = await api("alice", "GET", "pipelines/templates")
    assert status == 200 and body["errors"] == []
    names = {t["name"] for t in body["templates"]}
    assert {
        "read-data",
        "split-data",
        "train-sklearn",
        "evaluate",
        "register-model",
        "batch-predict",
    } <= names
    status, kinds = await api("alice", "GET", "pipelines/node-kinds")
    assert {k["op"] for k in kinds["node_kinds"]} >= {
        "execute-notebook-node",
        "execute-python-node",
        "cube-lab:shell",
        "cube-lab:template",
    }


async def test_schedules_api(api: Any, jp_root_dir: Path) -> None:
    script(jp_root_dir, "a.py", "pass\n")
    write_pipeline(jp_root_dir, [node("a", filename="a.py")])
    status, sched = await api(
        "alice",
        "POST",
        "pipelines/schedules",
        {"path": "p.pipeline", "cron": "0 3 * * *", "catchup": False},
    )
    assert status == 201 and sched["next_fire_at"].endswith("03:00:00+00:00")
    assert (await api("bob", "GET", "pipelines/schedules"))[1]["schedules"] == []
    assert (await api("bob", "DELETE", f"pipelines/schedules/{sched['id']}"))[0] == 404
    status, paused = await api(
        "alice", "PATCH", f"pipelines/schedules/{sched['id']}", {"enabled": False}
    )
    assert status == 200 and paused["enabled"] is False and paused["next_fire_at"] is None
    status, err = await api(
        "alice", "POST", "pipelines/schedules", {"path": "p.pipeline", "cron": "sometimes"}
    )
    assert status == 400 and "invalid cron" in err["error"]
    assert (await api("alice", "DELETE", f"pipelines/schedules/{sched['id']}"))[0] == 204
    assert (await api("alice", "GET", "pipelines/schedules"))[1]["schedules"] == []


async def test_compile_for_kubeflow_pipelines(api: Any, jp_root_dir: Path) -> None:
    import yaml

    folder = jp_root_dir / "kfp"
    folder.mkdir()
    script(folder, "prep.py", "print('prep')\n")
    script(folder, "train.py", "print('train')\n")
    write_pipeline(
        folder,
        [
            node("prep", filename="prep.py"),
            node("train", upstream=("prep",), filename="train.py", cpu=2),
        ],
        name="two-steps",
        parameters=[
            {"name": "lr", "default_value": {"type": "Float", "value": 0.1}, "required": False}
        ],
    )
    status, body = await api("alice", "POST", "pipelines/compile", {"path": "kfp/p.pipeline"})
    assert status == 200, body
    assert body["filename"] == "p.yaml" and body["name"] == "two-steps"
    spec = next(yaml.safe_load_all(body["yaml"]))
    tasks = spec["root"]["dag"]["tasks"]
    assert len(tasks) == 2
    downstream = next(t for t in tasks.values() if t.get("dependentTasks"))
    assert downstream["taskInfo"]["name"] == "train"
    assert spec["root"]["inputDefinitions"]["parameters"]["lr"]["defaultValue"] == 0.1
    assert isinstance(body["notes"], list)
    # each step's pod is labelled with the caller's project and name (DCGM joins on them)
    platform = list(yaml.safe_load_all(body["yaml"]))[1]
    executors = platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]
    for executor in executors.values():
        labels = executor["podMetadata"]["labels"]
        assert labels["cube-lab.io/owner"] == labels["cube-lab.io/project"] == "alice"
        assert labels["cube-lab.io/kind"] == "run-node"
    assert {e["podMetadata"]["labels"]["cube-lab.io/node-id"] for e in executors.values()} == {
        "prep",
        "train",
    }
    # Nothing is left next to the pipeline: the IR only travels in the answer.
    assert sorted(p.name for p in folder.iterdir()) == ["p.pipeline", "prep.py", "train.py"]

    # An invalid pipeline names the node and the field, like a run does.
    write_pipeline(folder, [node("a", filename="missing.py")], filename="bad.pipeline")
    status, err = await api("alice", "POST", "pipelines/compile", {"path": "kfp/bad.pipeline"})
    assert status == 400 and err["detail"][0]["field"] == "filename"
    for body_in, fragment in [
        ({"path": "kfp/p.pipeline", "target": "argo"}, "unknown target"),
        ({"path": "kfp/prep.py"}, "not a .pipeline file"),
        ({"path": "../x.pipeline"}, "outside the server root"),
    ]:
        status, err = await api("alice", "POST", "pipelines/compile", body_in)
        assert status == 400 and fragment in err["error"], (body_in, err)


async def test_schedules_of_one_pipeline(api: Any, jp_root_dir: Path) -> None:
    script(jp_root_dir, "a.py", "pass\n")
    write_pipeline(jp_root_dir, [node("a", filename="a.py")], filename="one.pipeline")
    write_pipeline(jp_root_dir, [node("a", filename="a.py")], filename="two.pipeline")
    for name in ("one", "two"):
        status, _ = await api(
            "alice",
            "POST",
            "pipelines/schedules",
            {"path": f"{name}.pipeline", "cron": "0 3 * * *"},
        )
        assert status == 201
    status, body = await api("alice", "GET", "pipelines/schedules", params={"path": "one.pipeline"})
    assert status == 200 and [s["name"] for s in body["schedules"]] == ["one"]
    assert len((await api("alice", "GET", "pipelines/schedules"))[1]["schedules"]) == 2
