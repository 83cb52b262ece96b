"""The CLI's output contracts, as a script piping ``cube-lab`` into ``jq`` sees them.

- ``--json``: every command that takes it prints exactly one JSON document on stdout and
  nothing else; logs, progress and warnings go to stderr. Each command runs here as a real
  subprocess against real objects (models, a pipeline run, a tuning experiment, a training
  job, a deployment, a dataset and a labeling project). The commands come from the argparse
  parser itself, so a new ``--json`` command without a case below fails
  ``test_every_json_command_has_a_case``.
- A successful command prints no library warnings a user would have to read past.
- ``-o``: a name ending in .json/.jsonl/.csv/.yaml/.yml is a file, a .zip is an archive,
  anything else a folder; several files asked into one file is an error that says what to
  pass instead.
- The two shapes (in this process with a store, under the hub through the cube-lab service's
  REST API) make the same request of the same options: ``deploy`` with ``--engine`` and
  ``--engine-option`` makes the same deployment either way.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from labeling_util import make_images
from pipeline_util import node, script, write_pipeline

from cube_lab.cli import build_parser
from cube_lab.cli.args import output_target
from cube_lab.errors import InvalidInput
from tests.serving.test_kserve_cluster import READY, run_cli

CLI = [sys.executable, "-m", "cube_lab.cli"]


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, Any]:
    """Every leaf command of the parser by its words ("model register", "train", ...)."""
    found: dict[str, Any] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(_commands(sub, f"{prefix} {name}".strip()))
            return found
    return {prefix: parser}


def _takes_json(parser: argparse.ArgumentParser) -> bool:
    return any("--json" in a.option_strings for a in parser._actions)


COMMANDS = _commands(build_parser())
JSON_COMMANDS = {name for name, p in COMMANDS.items() if _takes_json(p)}

# Each --json command is run by one of the tests below (the test named here).
CASES: dict[str, str] = {
    **dict.fromkeys(
        [
            "model register", "model list", "model show", "model compare", "model alias",
            "model archive", "model delete", "model download",
            "project list", "project create", "project member", "project invitations",
            "project accept", "project decline",
        ],
        "test_model_and_project_commands",
    ),
    **dict.fromkeys(
        [
            "pipeline validate", "pipeline run", "pipeline runs", "pipeline cancel",
            "pipeline compile", "pipeline schedule", "pipeline schedules",
            "pipeline unschedule",
        ],
        "test_pipeline_commands",
    ),
    **dict.fromkeys(
        ["train", "training list", "training stop", "training metrics", "training register"],
        "test_training_commands",
    ),
    **dict.fromkeys(
        [
            "tune", "tuning list", "tuning show", "tuning stop", "tuning resume",
            "tuning register",
        ],
        "test_tuning_commands",
    ),
    **dict.fromkeys(
        [
            "deploy", "deployments", "undeploy", "deployment promote", "deployment rollback",
            "deployment traffic", "deployment samples", "deployment access",
            "deployment keys create", "deployment keys list", "deployment keys revoke",
        ],
        "test_serving_commands",
    ),
    **dict.fromkeys(
        [
            "dataset create", "dataset list", "dataset show", "label create", "label list",
            "label show", "label assign", "label import", "label export", "label prelabel",
        ],
        "test_labeling_commands",
    ),
    **dict.fromkeys(
        [
            "kb create", "kb list", "kb show", "kb add", "kb remove", "kb search", "kb eval",
            "kb chat", "kb delete", "kb preview",
        ],
        "test_kb_commands",
    ),
    **dict.fromkeys(
        ["alerts add", "alerts list", "alerts test", "alerts deliveries", "alerts remove"],
        "test_alerts_commands",
    ),
}  # fmt: skip
# --json commands no test runs, with the reason.
EXEMPT: dict[str, str] = {
    "finetune": "tests/finetune/test_finetune.py runs it with --json on a tiny model built there",
    "merge": "tests/finetune/test_merge_eval.py runs it with --json on a tiny adapter",
    "evaluate": "tests/finetune/test_merge_eval.py runs it with --json on a tiny adapter",
    "chat list": "tests/chat/test_rest.py runs it with --json (here and under the hub)",
    "chat export": "tests/chat/test_rest.py runs it with --json on feedback given over REST",
    "course import": "tests/hub/test_course.py runs it with --json against a real hub",
    "kb query": "another name for kb search (the same handler), which test_kb_commands runs",
    "kb sync": "tests/kb/test_nodekind.py runs it with --json on a folder made there",
    **dict.fromkeys(
        [
            "course create",
            "course list",
            "course show",
            "course handout",
            "course collect",
            "course submissions",
            "course submit",
        ],
        "tests/hub/test_course_classroom.py runs them against a real hub",
    ),
}
# Commands without --json: what they print is a text stream, meant to be read as it is.
TEXT_COMMANDS = {
    "pipeline logs": "a node's log as the node wrote it (--follow streams it)",
    "training logs": "a job's log, every rank's lines as written (--follow streams it)",
    "tuning log": "a trial's output as the trial wrote it",
    "deployment logs": "the model servers' output (--follow streams it)",
    "deployment metrics": "Prometheus' text exposition format, for a scraper",
}

# What a library's warning looks like: Python's warnings ("...: FutureWarning: ...") and
# log records at WARNING or above ("WARNING: ...", "[W ...]").
LIBRARY_WARNING = re.compile(r"\b\w*Warning: |\bWARNING\b|\bTraceback \(most recent")


def _key(args: list[str]) -> str:
    ns = build_parser().parse_args(args)
    words = (ns.group, getattr(ns, "command", None), getattr(ns, "keys_command", None))
    return " ".join(w for w in words if w)


class Cli:
    """``cube-lab`` as a user runs it, in ``cwd`` with the test's data dir."""

    def __init__(self, cwd: Path, user: str = "alice") -> None:
        self.cwd = cwd
        self.env = {**os.environ, "CUBE_LAB_USER": user}
        self.ran: set[str] = set()

    def __call__(
        self, *args: str, rc: int | None = 0, timeout: float = 180
    ) -> subprocess.CompletedProcess[str]:
        """Run it; ``rc`` is the exit status it must end with (None: any)."""
        out = subprocess.run(
            [*CLI, *args], cwd=self.cwd, env=self.env, capture_output=True, text=True,
            timeout=timeout,
        )  # fmt: skip
        if rc is not None:
            assert out.returncode == rc, (
                f"cube-lab {' '.join(args)}: {out.returncode}\n{out.stderr}"
            )
        if rc == 0:  # a success prints nothing a user must read past, with --json or not
            assert not LIBRARY_WARNING.search(out.stderr), (args, out.stderr)
            assert not LIBRARY_WARNING.search(out.stdout), (args, out.stdout)
        return out

    def json(self, *args: str, rc: int = 0, timeout: float = 180) -> Any:
        """Run with --json (right after the command's words, before a script's own
        arguments): stdout must be exactly one JSON document."""
        key = _key(list(args))
        words = len(key.split())
        argv = [*args[:words], "--json", *args[words:]]
        out = self(*argv, rc=rc, timeout=timeout)
        assert out.stdout.strip(), f"cube-lab {' '.join(argv)} printed nothing on stdout"
        try:
            doc = json.loads(out.stdout)
        except json.JSONDecodeError as exc:
            raise AssertionError(
                f"cube-lab {' '.join(argv)}: stdout is not one JSON document ({exc}):\n"
                f"{out.stdout[:2000]}"
            ) from None
        self.ran.add(key)
        return doc

    def covered(self, test: str) -> None:
        """This test ran every command given to it in CASES."""
        mine = {name for name, owner in CASES.items() if owner == test}
        assert mine <= self.ran, f"{test} did not run: {sorted(mine - self.ran)}"


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    work = tmp_path / "work"
    work.mkdir()
    return Cli(work)


def test_every_json_command_has_a_case() -> None:
    missing = JSON_COMMANDS - set(CASES) - set(EXEMPT)
    assert not missing, f"--json commands without a case in CASES (or EXEMPT): {sorted(missing)}"
    assert not (set(CASES) | set(EXEMPT)) - JSON_COMMANDS, "CASES names unknown commands"
    text = set(COMMANDS) - JSON_COMMANDS
    assert text == set(TEXT_COMMANDS), f"commands without --json: {sorted(text)}"


# -- --json, command by command ---------------------------------------------------------------


def test_model_and_project_commands(cli: Cli) -> None:
    (cli.cwd / "model.onnx").write_bytes(b"onnx" * 64)
    folder = cli.cwd / "weights"
    folder.mkdir()
    (folder / "a.bin").write_bytes(b"a" * 10)
    v1 = cli.json("model", "register", "model.onnx", "--name", "det", "--metric", "map=0.5")
    assert (v1["model"], v1["version"]) == ("det", 1)
    cli.json("model", "register", "model.onnx", "--name", "det", "--metric", "map=0.6")
    cli.json("model", "register", "weights", "--name", "folder")
    assert sorted(m["name"] for m in cli.json("model", "list")) == ["det", "folder"]
    assert len(cli.json("model", "show", "det")["versions"]) == 2
    assert cli.json("model", "compare", "det", "1", "2")["metrics"] == ["map"]
    assert cli.json("model", "alias", "det", "production", "2")["aliases"] == {"production": 2}
    assert cli.json("model", "alias", "det", "production", "--remove")["aliases"] == {}
    assert cli.json("model", "archive", "det:1")["archived"] is True
    assert cli.json("model", "archive", "det:1", "--undo")["archived"] is False
    got = cli.json("model", "download", "det:2", "-o", "copy.onnx")
    assert got == {"model": "det", "version": 2, "output": str(cli.cwd / "copy.onnx")}
    assert cli.json("model", "delete", "det:1", "--yes")["deleted"] == "det:1"
    assert cli.json("model", "delete", "folder", "--yes")["deleted"] == "folder"

    assert cli.json("project", "create", "vision")["name"] == "vision"
    member = cli.json("project", "member", "vision", "bob")
    assert {i["username"]: i["role"] for i in member["invitations"]} == {"bob": "member"}
    cli.json("project", "member", "vision", "carol")
    cli.env["CUBE_LAB_USER"] = "bob"
    assert [i["project"] for i in cli.json("project", "invitations")] == ["vision"]
    assert cli.json("project", "accept", "vision")["role"] == "member"
    cli.env["CUBE_LAB_USER"] = "carol"
    assert cli.json("project", "decline", "vision") == {"declined": "vision"}
    cli.env["CUBE_LAB_USER"] = "alice"
    assert cli.json("project", "member", "vision", "bob", "--remove")["name"] == "vision"
    assert {p["name"] for p in cli.json("project", "list")} == {"alice", "vision"}

    # an error under --json: the message on stderr, and the REST API's error body on stdout
    error = cli.json("model", "show", "nope", rc=1)
    assert set(error) == {"error", "detail"} and "nope" in error["error"]
    error = cli.json("model", "delete", "det", rc=2)
    assert "--yes" in error["detail"]
    cli.covered("test_model_and_project_commands")


def test_pipeline_commands(cli: Cli) -> None:
    pytest.importorskip("kfp")
    step = script(cli.cwd, "step.py", "print('hello from a node')\n")
    slow = script(cli.cwd, "slow.py", "import time\ntime.sleep(60)\n")
    write_pipeline(cli.cwd, [node("a", filename=step), node("b", upstream=("a",), filename=step)])
    write_pipeline(cli.cwd, [node("s", filename=slow)], name="slow", filename="slow.pipeline")
    checked = cli.json("pipeline", "validate", "p.pipeline")
    assert checked == {"valid": True, "problems": []}
    run = cli.json("pipeline", "run", "p.pipeline")
    assert run["status"] == "succeeded" and run["counts"] == {"succeeded": 2}
    assert [r["id"] for r in cli.json("pipeline", "runs")] == [run["id"]]

    # cancel a run that another cube-lab process is running
    running = subprocess.Popen(
        [*CLI, "pipeline", "run", "slow.pipeline", "--json"], cwd=cli.cwd, env=cli.env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        runs: list[Any] = []
        while time.monotonic() < deadline:
            runs = [r for r in cli.json("pipeline", "runs") if r["status"] == "running"]
            if runs:
                break
            time.sleep(0.3)
        assert runs, "the slow run never started"
        cancelled = cli.json("pipeline", "cancel", runs[0]["id"])
        assert cancelled["id"] == runs[0]["id"]
        out, err = running.communicate(timeout=60)
    finally:
        running.kill()
    assert running.returncode == 1, err
    assert json.loads(out)["status"] == "cancelled"  # the run's own --json, on its stdout

    compiled = cli.json("pipeline", "compile", "p.pipeline")
    assert compiled["output"] == str(cli.cwd / "p.yaml") and compiled["kfp_run"] is None
    schedule = cli.json("pipeline", "schedule", "p.pipeline", "--cron", "0 3 * * *")
    assert [s["id"] for s in cli.json("pipeline", "schedules")] == [schedule["id"]]
    assert cli.json("pipeline", "unschedule", str(schedule["id"])) == {"deleted": schedule["id"]}

    (cli.cwd / "bad.pipeline").write_text("{")
    assert cli.json("pipeline", "validate", "bad.pipeline", rc=2)["error"]
    cli.covered("test_pipeline_commands")


TRAIN = """\
import os, time
for step in range(3):
    print(f"step={step} loss={1 / (step + 1):.3f}", flush=True)
with open(os.path.join(os.environ["CUBE_OUTPUT_DIR"], "model.txt"), "w") as f:
    f.write("weights")
if os.environ.get("SLOW"):
    time.sleep(60)
"""


def test_training_commands(cli: Cli) -> None:
    (cli.cwd / "train.py").write_text(TRAIN)
    dry = cli.json("train", "--framework", "plain", "--dry-run", "train.py")
    assert len(dry["commands"]) == 1 and "train.py" in dry["commands"][0]
    cluster = cli.json("train", "--backend", "kubernetes", "--dry-run", "--workers", "2",
                       "--image", "python:3.11", "train.py")  # fmt: skip
    assert cluster["manifests"][-1]["kind"] == "PyTorchJob"
    job = cli.json("train", "--framework", "plain", "train.py")
    assert job["status"] == "succeeded"
    assert [j["id"] for j in cli.json("training", "list")] == [job["id"]]
    metrics = cli.json("training", "metrics", job["id"])
    assert len(metrics["series"]["loss"]) == 3
    version = cli.json("training", "register", job["id"], "--name", "trained")
    assert (version["model"], version["version"]) == ("trained", 1)

    slow = subprocess.Popen(
        [*CLI, "train", "--json", "--framework", "plain", "--env", "SLOW=1", "train.py"],
        cwd=cli.cwd, env=cli.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        running: list[Any] = []
        while time.monotonic() < deadline and not running:
            running = [j for j in cli.json("training", "list") if j["status"] == "running"]
            time.sleep(0.3)
        assert running, "the slow job never started"
        stopped = cli.json("training", "stop", running[0]["id"])
        assert stopped["id"] == running[0]["id"]
        out, err = slow.communicate(timeout=60)
    finally:
        slow.kill()
    assert slow.returncode != 0
    assert json.loads(out)["status"] in ("cancelled", "failed"), err
    cli.covered("test_training_commands")


TRIAL = """\
import os
import nni

x = nni.get_next_parameter()["x"]
nni.report_intermediate_result(-(x - 2) ** 2)
with open(os.path.join(os.environ["NNI_OUTPUT_DIR"], "model.txt"), "w") as f:
    f.write(str(x))
nni.report_final_result(-(x - 2) ** 2)
print("trial done", x)
"""


def _tuning_config(folder: Path, trials: int) -> None:
    (folder / "trial.py").write_text(TRIAL)
    config = {
        "searchSpace": {"x": {"_type": "uniform", "_value": [-5, 5]}},
        "trialCommand": f"{sys.executable} trial.py",
        "trialCodeDirectory": ".",
        "trialConcurrency": 2,
        "maxTrialNumber": trials,
        "tuner": {"name": "TPE", "classArgs": {"optimize_mode": "maximize"}},
    }
    (folder / "config.yml").write_text(yaml.safe_dump(config))


def test_tuning_commands(cli: Cli) -> None:
    _tuning_config(cli.cwd, trials=2)
    # the case: NNI's tuner logs "Using random seed ..." to stdout
    result = cli.json("tune", "config.yml")
    assert result["status"] == "done" and result["trials"] == 2
    plain = cli("tune", "config.yml")
    assert "Using random seed" not in plain.stdout + plain.stderr
    assert plain.stdout.splitlines()[-1].startswith("best: trial")
    katib = cli.json("tune", "config.yml", "--backend", "kubernetes", "--dry-run",
                     "--image", "python:3.11")  # fmt: skip
    assert katib["kind"] == "Experiment"

    exp = result["experiment"]
    assert exp in [e["id"] for e in cli.json("tuning", "list")]
    shown = cli.json("tuning", "show", exp)
    assert shown["id"] == exp and len(shown["trials"]) == 2
    version = cli.json("tuning", "register", exp, "--name", "tuned")
    assert version["model"] == "tuned" and version["params"] == result["best"]["parameters"]
    stopped = cli.json("tuning", "stop", exp)
    assert stopped["id"] == exp
    resumed = cli.json("tuning", "resume", exp)  # already at its budget: ends at once
    assert resumed["experiment"] == exp and resumed["trials"] == 2
    cli.covered("test_tuning_commands")


def _iris(folder: Path, seed: int) -> Path:
    import joblib
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    x, y = load_iris(return_X_y=True)
    path = folder / f"iris{seed}.joblib"
    joblib.dump(LogisticRegression(max_iter=300, C=1 + seed).fit(x, y), path)
    return path


def test_serving_commands(cli: Cli) -> None:
    for seed in (0, 1):
        cli("model", "register", str(_iris(cli.cwd, seed)), "--name", "iris")
    try:
        dep = cli.json("deploy", "iris:1", "--name", "web")
        assert dep["status"] == "running" and dep["endpoint"]
        cli.json("deploy", "iris:2", "--name", "web", "--canary", "20")
        traffic = cli.json("deployment", "traffic", "web", "50")["traffic"]
        assert sorted(t["weight"] for t in traffic) == [50, 50]
        assert cli.json("deployment", "rollback", "web")["version"] == 1
        cli.json("deploy", "iris:2", "--name", "web", "--canary", "20")
        assert cli.json("deployment", "promote", "web")["version"] == 2
        samples = cli.json("deployment", "samples", "web", "--set", "100")
        assert samples["percent"] == 100 and samples["samples"] == []
        made = cli.json("deployment", "keys", "create", "web", "ci", "--expires-in-days", "7")
        assert made["key"].startswith("cube_") and made["expires_at"]
        listed = cli.json("deployment", "keys", "list", "web")["keys"]
        assert [(k["name"], k["key"]) for k in listed] == [("ci", None)]
        assert cli.json("deployment", "keys", "revoke", "web", "ci")["state"] == "revoked"
        shown = cli.json("deployment", "access", "web", "--auth", "required", "--rps", "100")
        assert shown["auth"] == "required" and shown["rate_limit"]["burst"] == 100
        assert [d["name"] for d in cli.json("deployments")] == ["web"]
        kserve = cli.json("deploy", "iris:1", "--backend", "kubernetes", "--dry-run",
                          "--storage-uri", "s3://models/iris/1")  # fmt: skip
        assert kserve["kind"] == "InferenceService"
        assert cli.json("undeploy", "web")["status"] == "stopped"
        assert cli.json("undeploy", "web", "--forget") == {"deleted": "web"}
    finally:
        cli("undeploy", "web", rc=None)
    cli.covered("test_serving_commands")


PREDICTOR = """
class Predictor:
    def __init__(self, path):
        self.path = path

    def prelabel(self, item):
        return {"boxes": [{"label": "cat", "x": 1, "y": 1, "w": 5, "h": 5, "score": 0.9}]}
"""


def test_labeling_commands(cli: Cli, ws: Any) -> None:
    from cube_lab.identity import Caller

    make_images(cli.cwd / "pics", 3)
    detector = cli.cwd / "detector"
    detector.mkdir()
    (detector / "predictor.py").write_text(PREDICTOR)
    cli("model", "register", "detector", "--name", "detector")
    assert cli.json("dataset", "create", "pics", "pics")["item_count"] == 3
    assert [d["name"] for d in cli.json("dataset", "list")] == ["pics"]
    assert cli.json("dataset", "show", "pics")["versions"] == []
    created = cli.json("label", "create", "pets", "--dataset", "pics", "--type", "image-bbox",
                       "--labels", "cat,dog", "--no-review")  # fmt: skip
    assert created["name"] == "pets"
    assert cli.json("label", "prelabel", "pets", "--model", "detector") == {"prelabeled": 3}
    assert cli.json("label", "assign", "pets", "--users", "alice") == {"assigned": {"alice": 3}}
    alice = Caller("alice")  # annotate through the service, as the UI does
    while (task := ws.labeling.next(alice, "alice", "pets")) is not None:
        box = {"label": "dog", "x": 2, "y": 2, "w": 4, "h": 4}
        ws.labeling.save(alice, "alice", "pets", task.id, {"boxes": [box]}, submit=True)
    assert [p["name"] for p in cli.json("label", "list")] == ["pets"]
    assert cli.json("label", "show", "pets")["progress"]["submitted"] == 3
    exported = cli.json("label", "export", "pets", "--format", "labelstudio", "-o", "ls.json")
    assert exported["output"] == str(cli.cwd / "ls.json")
    assert len(json.loads((cli.cwd / "ls.json").read_text())) == 3
    cli("label", "create", "copy", "--dataset", "pics", "--type", "image-bbox", "--labels",
        "cat,dog")  # fmt: skip
    imported = cli.json("label", "import", "copy", "ls.json", "--format", "labelstudio")
    assert imported["imported"] == 3
    cli.covered("test_labeling_commands")


# -- -o: a file, a folder or a .zip ----------------------------------------------------------


def _labeled(cli: Cli, ws: Any) -> None:
    from cube_lab.identity import Caller

    make_images(cli.cwd / "pics", 3)
    cli("dataset", "create", "pics", "pics")
    cli("label", "create", "pets", "--dataset", "pics", "--type", "image-bbox", "--labels",
        "cat,dog", "--no-review")  # fmt: skip
    alice = Caller("alice")
    while (task := ws.labeling.next(alice, "alice", "pets")) is not None:
        box = {"label": "cat", "x": 1, "y": 1, "w": 5, "h": 6}
        ws.labeling.save(alice, "alice", "pets", task.id, {"boxes": [box]}, submit=True)


def _versions(cli: Cli) -> int:
    return len(cli.json("dataset", "show", "pics")["versions"])


def test_label_export_output_is_a_file_a_folder_or_a_zip(cli: Cli, ws: Any) -> None:
    _labeled(cli, ws)
    # refused before anything is exported, with what to pass instead
    out = cli("label", "export", "pets", "--format", "yolo", "-o", "data.yaml", rc=2)
    assert "Pass a folder (-o data) or a .zip (-o data.zip)" in out.stderr
    out = cli("label", "export", "pets", "--format", "csv", "-o", "labels.json", rc=2)
    assert "Name it labels.csv" in out.stderr
    assert _versions(cli) == 0

    # the README's example: a .json is the COCO annotation file; the images stay in the version
    out = cli("label", "export", "pets", "--format", "coco", "-o", "coco.json")
    coco = json.loads((cli.cwd / "coco.json").read_text())
    assert len(coco["images"]) == 3 and (cli.cwd / "coco.json").is_file()
    images = out.stdout.split("its images are in ")[1].rstrip(")\n")
    assert all((Path(images) / image["file_name"]).is_file() for image in coco["images"])
    cli("label", "export", "pets", "--format", "coco", "-o", "coco")
    coco = json.loads((cli.cwd / "coco" / "annotations.json").read_text())
    assert len(coco["images"]) == 3 and len(list((cli.cwd / "coco").rglob("*.png"))) == 3
    cli("label", "export", "pets", "--format", "coco", "-o", "coco.zip")
    with zipfile.ZipFile(cli.cwd / "coco.zip") as zf:
        names = zf.namelist()
        assert "annotations.json" in names and sum(n.endswith(".png") for n in names) == 3
        assert len(json.loads(zf.read("annotations.json"))["images"]) == 3
    cli("label", "export", "pets", "--format", "yolo", "-o", "yolo/")
    assert (cli.cwd / "yolo" / "data.yaml").is_file()
    assert len(list((cli.cwd / "yolo" / "labels").glob("*.txt"))) == 3

    # one-file formats: the file as named, into a folder under its own name, or zipped
    cli("label", "export", "pets", "--format", "labelstudio", "-o", "tasks-v1.json")
    assert len(json.loads((cli.cwd / "tasks-v1.json").read_text())) == 3
    cli("label", "export", "pets", "--format", "csv", "-o", "out/")
    assert (cli.cwd / "out" / "labels.csv").read_text().count("\n") >= 4
    cli("label", "export", "pets", "--format", "jsonl", "-o", "out")  # an existing folder
    assert len((cli.cwd / "out" / "labels.jsonl").read_text().splitlines()) == 3
    cli("label", "export", "pets", "--format", "jsonl", "-o", "labels.zip")
    with zipfile.ZipFile(cli.cwd / "labels.zip") as zf:
        assert zf.namelist() == ["labels.jsonl"]

    # nothing is overwritten
    out = cli("label", "export", "pets", "--format", "yolo", "-o", "yolo", rc=2)
    assert "not empty" in out.stderr
    out = cli("label", "export", "pets", "--format", "csv", "-o", "out", rc=2)
    assert "out/labels.csv already exists" in out.stderr
    assert _versions(cli) == 8  # one per export that was not refused


def test_model_download_and_pipeline_compile_follow_the_same_rule(cli: Cli) -> None:
    (cli.cwd / "model.onnx").write_bytes(b"onnx" * 64)
    folder = cli.cwd / "weights"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.bin").write_bytes(b"a")
    (folder / "sub" / "b.bin").write_bytes(b"b")
    cli("model", "register", "model.onnx", "--name", "file")
    cli("model", "register", "weights", "--name", "folder")

    cli("model", "download", "file", "-o", "copy.onnx")  # a file model keeps any file name
    assert (cli.cwd / "copy.onnx").read_bytes() == b"onnx" * 64
    cli("model", "download", "file", "-o", "got/")
    assert (cli.cwd / "got" / "model.onnx").is_file()
    cli("model", "download", "file", "-o", "file.zip")
    assert zipfile.ZipFile(cli.cwd / "file.zip").namelist() == ["model.onnx"]
    cli("model", "download", "folder", "-o", "folder-copy")
    assert (cli.cwd / "folder-copy" / "sub" / "b.bin").read_bytes() == b"b"
    cli("model", "download", "folder", "-o", "folder.zip")
    assert sorted(zipfile.ZipFile(cli.cwd / "folder.zip").namelist()) == ["a.bin", "sub/b.bin"]
    out = cli("model", "download", "folder", "-o", "weights.json", rc=2)
    assert "several files" in out.stderr and "-o weights.zip" in out.stderr
    out = cli("model", "download", "file", "-o", "copy.onnx", rc=2)
    assert "already exists" in out.stderr

    pytest.importorskip("kfp")
    step = script(cli.cwd, "step.py", "print('hi')\n")
    write_pipeline(cli.cwd, [node("a", filename=step)])
    cli("pipeline", "compile", "p.pipeline", "-o", "flow.yaml")
    assert next(yaml.safe_load_all((cli.cwd / "flow.yaml").read_text()))["pipelineInfo"]
    cli("pipeline", "compile", "p.pipeline", "-o", "flow.yaml")  # compiling again refreshes it
    cli("pipeline", "compile", "p.pipeline", "-o", "build")
    assert (cli.cwd / "build" / "p.yaml").is_file()
    cli("pipeline", "compile", "p.pipeline", "-o", "flow.zip")
    assert zipfile.ZipFile(cli.cwd / "flow.zip").namelist() == ["p.yaml"]
    out = cli("pipeline", "compile", "p.pipeline", "-o", "flow.json", rc=2)
    assert "Name it flow.yaml" in out.stderr


@pytest.mark.parametrize(
    ("raw", "single", "kind"),
    [
        ("a.json", "tasks.json", "file"),
        ("a.yml", "p.yaml", "file"),
        ("copy.onnx", "model.onnx", "file"),
        ("dir/", "tasks.json", "folder"),
        ("dir", "tasks.json", "folder"),
        ("dir", None, "folder"),
        ("model.v2", None, "folder"),
        ("a.zip", None, "zip"),
        ("a.ZIP", "tasks.json", "zip"),
    ],
)
def test_the_output_rule(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, raw: str, single: str | None, kind: str
) -> None:
    monkeypatch.chdir(tmp_path)
    assert output_target(raw, what="it", single=single).kind == kind


@pytest.mark.parametrize(
    ("raw", "single", "message"),
    [
        ("coco.json", None, "Pass a folder (-o coco) or a .zip (-o coco.zip)."),
        ("labels.csv", "tasks.json", "Name it labels.json, or pass a folder or a .zip."),
        ("", "tasks.json", "Pass a file name, a folder or a .zip."),
    ],
)
def test_the_output_rule_says_what_to_pass(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, raw: str, single: str | None, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInput) as err:
        output_target(raw, what="it", single=single)
    assert err.value.detail == message


# -- how --json keeps stdout clean ----------------------------------------------------------

STRAYS = """\
import logging, os, subprocess, sys
from cube_lab.cli.args import json_stdout, print_json

early = logging.StreamHandler(sys.stdout)  # a library's handler, made before the command
logging.getLogger("early").addHandler(early)
with json_stdout():
    late = logging.StreamHandler(sys.stdout)  # one made while it runs (NNI imported late)
    logging.getLogger("late").addHandler(late)
    print("a stray print")
    logging.getLogger("early").warning("early library log")
    logging.getLogger("late").warning("late library log")
    os.write(1, b"written to fd 1\\n")
    subprocess.run(["echo", "a child process"], check=True)
    print_json({"ok": True})
    try:
        print_json({"again": True})
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
print("after the command")
logging.getLogger("early").warning("early handler back on stdout")
"""


def test_only_the_document_reaches_stdout(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", STRAYS], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == ('{\n  "ok": true\n}\nafter the command\nearly handler back on stdout\n')
    for line in (
        "a stray print",
        "early library log",
        "late library log",
        "written to fd 1",
        "a child process",
        "a --json command printed a second JSON document",
    ):
        assert line in out.stderr


@pytest.fixture
def registered(ws: Any, tmp_path: Path) -> list[str]:
    from cube_lab.cli import local_username
    from cube_lab.identity import Caller

    for version in (1, 2):
        model = tmp_path / f"v{version}" / "model.joblib"
        model.parent.mkdir()
        model.write_bytes(b"only the path and the flavor matter to the manifest")
        ws.registry.register(Caller(local_username()), name="iris", path=model)
    return ["--data-dir", str(ws.settings.data_dir)]


async def test_kserve_commands_print_one_document(
    registered: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--backend kubernetes (cli_kserve) against kmock, in-process as the KServe tests run."""
    from k8s_mock import api_server

    async with api_server() as km:
        monkeypatch.setenv("CUBE_LAB_K8S_HOST", str(km.url))
        monkeypatch.setenv("CUBE_LAB_K8S_TOKEN", "t0k")
        k8s = ["--backend", "kubernetes", "--namespace", "ml", "--json"]

        async def one_document(argv: list[str], status: Any = None, rc: int = 0) -> Any:
            code = await run_cli(km, [*registered, *argv, *k8s], status)
            out, err = capsys.readouterr()
            assert code == rc, err
            return json.loads(out)

        assert (await one_document(["deploy", "iris:1"], READY))["status"] == "ready"
        canary = await one_document(["deploy", "iris:2", "--name", "iris", "--canary", "10"])
        assert canary["name"] == "iris"
        assert (await one_document(["deployment", "rollback", "iris"]))["name"] == "iris"
        assert (await one_document(["deployment", "traffic", "iris", "20"]))["name"] == "iris"
        assert (await one_document(["deployment", "promote", "iris"]))["name"] == "iris"
        assert [d["name"] for d in await one_document(["deployments"])] == ["iris"]
        gone = await one_document(["undeploy", "iris"])
        assert gone == {"deleted": "iris", "backend": "kubernetes"}
        error = await one_document(["undeploy", "iris"], rc=1)
        assert "no InferenceService 'iris'" in error["error"]
        failed = {
            "conditions": [{"type": "Ready", "status": "False", "reason": "ModelLoadFailed"}],
            "modelStatus": {"lastFailureInfo": {"message": "could not unpickle the model"}},
        }
        # it prints the service as it ended, then fails: still one document
        got = await one_document(["deploy", "iris:1", "--name", "iris"], failed, rc=2)
        assert got["status"] == "failed"


def test_kb_commands(cli: Cli) -> None:
    docs = cli.cwd / "docs"
    docs.mkdir()
    (docs / "refunds.md").write_text("# Refunds\n\nRefunds are paid within thirty days.")
    question = {"question": "refunds", "source": str((docs / "refunds.md").resolve())}
    (cli.cwd / "q.jsonl").write_text(json.dumps(question) + "\n")
    assert cli.json("kb", "create", "docs")["name"] == "docs"
    shown = cli.json("kb", "preview", "docs", "docs", "--chunk-size", "8", "--overlap", "4")
    assert [c["tokens"] for c in shown["chunks"]] == [6] and shown["overlap"] == 4
    record = cli.json("kb", "add", "docs", "docs")
    assert (record["status"], record["files_done"], record["chunks"]) == ("succeeded", 1, 1)
    assert [v["name"] for v in cli.json("kb", "list")] == ["docs"]
    assert cli.json("kb", "show", "docs")["chunks"] == 1
    hits = cli.json("kb", "search", "docs", "refunds", "--mode", "keyword")["hits"]
    assert hits[0]["source"] == question["source"]
    assert cli.json("kb", "eval", "docs", "q.jsonl", "--mode", "keyword")["recall_at_k"] == 1.0
    # nothing in the documents is close: answered without asking the model (none listens)
    off_topic = ["kb", "chat", "docs", "Who won the 1998 world cup?", "--model", "m"]
    answer = cli.json(*off_topic, "--base-url", "http://127.0.0.1:9/v1")
    assert answer["answered"] is False and answer["citations"] == []
    assert cli.json("kb", "remove", "docs", "docs/refunds.md")["removed_chunks"] == 1
    assert cli.json("kb", "delete", "docs") == {"deleted": "docs"}
    cli.covered("test_kb_commands")


def test_alerts_commands(cli: Cli) -> None:
    from tests.alerts.test_rules import Hooks

    hooks = Hooks()
    try:
        url = hooks.url + "/hook?token=T0KEN"
        made = cli.json("alerts", "add", "hook", "--on", "job.failed", "--channel", "webhook",
                        "--url", url)  # fmt: skip
        assert made["name"] == "hook" and "T0KEN" not in json.dumps(made)
        assert [r["name"] for r in cli.json("alerts", "list")] == ["hook"]
        sent = cli.json("alerts", "test", "hook")
        assert sent["ok"] and len(hooks.at("/hook")) == 1
        assert [d["event"] for d in cli.json("alerts", "deliveries", "hook")] == ["rule.test"]
        assert cli.json("alerts", "remove", "hook") == {"removed": "hook"}
    finally:
        hooks.close()
    cli.covered("test_alerts_commands")


# -- the two shapes: the same options make the same request ------------------------------------

DEPLOYS = {
    "engine": ["deploy", "notes:1", "--engine", "ollama", "--engine-option", "url=http://h:1",
               "--engine-option", "model=llama3"],
    "every field": ["deploy", "iris:2", "--name", "web", "--project", "team", "--replicas", "2",
                    "--port", "8123", "--batch-max-rows", "8", "--batch-wait-ms", "5",
                    "--samples", "10", "--auth", "required", "--runtime", "oip",
                    "--engine", "transformers"],
}  # fmt: skip


def _deploy_both_ways(argv: list[str]) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """``argv`` through the in-process command (what it asks of the serving service) and
    through the command under the hub (what it posts to the cube-lab service)."""
    from cube_lab.cli import remote as cli_remote
    from cube_lab.cli import serving as cli_serving
    from cube_lab.identity import Caller

    a = build_parser().parse_args([*argv, "--json"])
    view = {"name": "x"}
    asked: dict[str, Any] = {}

    def deploy(caller: Caller, ref: str, **kwargs: Any) -> dict[str, Any]:
        asked.update(model=ref, **kwargs)
        return view

    posted: list[tuple[str, Any]] = []

    def post(path: str, body: Any = None) -> dict[str, Any]:
        posted.append((path, body))
        return view

    cli_serving.deploy(SimpleNamespace(serving=SimpleNamespace(deploy=deploy)), Caller("a"), a)
    cli_remote.serving.deploy(SimpleNamespace(post=post), a)  # type: ignore[arg-type]
    return asked, posted


@pytest.mark.parametrize("case", sorted(DEPLOYS))
def test_deploy_posts_what_the_in_process_command_asks(
    case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import inspect

    from cube_lab.handlers.serving import _DEPLOY_FIELDS
    from cube_lab.serving.service import DeploymentService

    asked, posted = _deploy_both_ways(DEPLOYS[case])
    assert posted == [("deployments", {k: v for k, v in asked.items() if v is not None})]
    # every field is one the REST handler reads and the service takes
    takes = set(inspect.signature(DeploymentService.deploy).parameters) | {"model"}
    assert set(asked) <= _DEPLOY_FIELDS and set(asked) <= takes
    if case == "engine":
        assert posted[0][1]["engine"] == "ollama"
        assert posted[0][1]["engine_options"] == {"url": "http://h:1", "model": "llama3"}
    capsys.readouterr()


def test_deploy_refuses_the_clusters_options_in_both_shapes() -> None:
    """--image and the like go with --backend kubernetes; neither shape drops them silently."""
    from cube_lab.cli import remote as cli_remote
    from cube_lab.cli import serving as cli_serving

    for argv in (["--image", "vllm/vllm-openai"], ["--llm-backend", "vllm"], ["--gpu-cores", "50"]):
        a = build_parser().parse_args(["deploy", "tiny:1", "--engine", "vllm", *argv])
        with pytest.raises(InvalidInput, match=f"{argv[0]} go with --backend kubernetes"):
            cli_serving.deploy(None, None, a)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match=f"{argv[0]} go with --backend kubernetes"):
            cli_remote.serving.deploy(None, a)  # type: ignore[arg-type]


@pytest.fixture
def fake_ollama() -> Iterator[str]:
    """An Ollama-shaped server with model llama3: what a deployment on engine ollama asks of
    it before it answers (``GET /v1/models``)."""

    class Models(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = json.dumps({"object": "list", "data": [{"id": "llama3:latest"}]}).encode()
            self.send_response(200 if self.path == "/v1/models" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Models)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def test_deploy_with_an_engine_makes_the_same_deployment_in_both_shapes(
    api: Any,
    jp_root_dir: Path,
    jp_http_port: int,
    jp_base_url: str,
    fake_ollama: str,
    tmp_path: Path,
) -> None:
    """``cube-lab deploy --engine ollama --engine-option ...`` as a user runs it, with a store
    (--data-dir) and under the hub (the service: a real jupyter server with cube-lab, as
    alice): the deployment runs on the engine asked for, with its options, either way."""
    import asyncio

    await api("alice", "GET", "whoami")  # the server is up
    (jp_root_dir / "llama3.txt").write_text("served by Ollama as llama3")
    hub = {
        **os.environ,
        "CUBE_LAB_SERVICE_URL": f"http://localhost:{jp_http_port}{jp_base_url}",
        "JUPYTERHUB_API_TOKEN": "alice-secret",
        "CUBE_LAB_ROOT_DIR": str(jp_root_dir),
    }
    shapes = {"in-process": ["--data-dir", str(tmp_path / "cli-data")], "hub": []}

    async def cli(prefix: list[str], *argv: str, rc: int | None = 0) -> Any:
        # in a thread: the service answers on this thread's event loop meanwhile
        done = await asyncio.to_thread(
            subprocess.run, [*CLI, *prefix, *argv], cwd=jp_root_dir, env=hub,
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        if rc is not None:
            assert done.returncode == rc, f"cube-lab {' '.join(argv)}:\n{done.stderr}"
        return json.loads(done.stdout) if rc == 0 else None

    engine = ["--engine", "ollama", "--engine-option", f"url={fake_ollama}/v1",
              "--engine-option", "model=llama3"]  # fmt: skip
    made: dict[str, Any] = {}
    try:
        for shape, prefix in shapes.items():
            await cli(prefix, "model", "register", "llama3.txt", "--name", "notes", "--json")
            made[shape] = await cli(prefix, "deploy", "notes:1", "--json", *engine)
    finally:
        for prefix in shapes.values():
            await cli(prefix, "undeploy", "notes", "--forget", rc=None)
    for shape, view in made.items():
        assert (view["status"], view["runtime"], view["engine"]) == ("running", "llm", "ollama"), (
            shape,
            view,
        )
        assert view["engine_options"] == {"url": fake_ollama, "model": "llama3"}, (shape, view)


def test_train_refuses_the_kubeconfig_options_under_the_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--namespace, --kubeconfig and --kube-context choose the cluster credentials of the
    in-process command; under the hub the service uses its own, so they are refused there (as
    finetune refuses them), not dropped."""
    from cube_lab.cli import remote as cli_remote

    monkeypatch.setenv("CUBE_LAB_ROOT_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for flag, value in (("--namespace", "ml"), ("--kubeconfig", "k.yaml"), ("--kube-context", "c")):
        a = build_parser().parse_args(["train", "--backend", "kubernetes", flag, value, "t.py"])
        with pytest.raises(InvalidInput, match=f"cube-lab train {flag} are not available"):
            cli_remote.training.train_run(None, a)  # type: ignore[arg-type]


def test_pipeline_compile_sends_its_target_under_the_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cube_lab.cli import remote as cli_remote

    monkeypatch.setenv("CUBE_LAB_ROOT_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    posted: list[tuple[str, Any]] = []

    def post(path: str, body: Any = None) -> dict[str, Any]:
        posted.append((path, body))
        return {"yaml": "pipelineSpec: {}\n", "notes": []}

    a = build_parser().parse_args(["pipeline", "compile", "flows/p.pipeline", "--target", "kfp"])
    cli_remote.pipelines.pipeline_compile(SimpleNamespace(post=post), a)  # type: ignore[arg-type]
    assert posted == [("pipelines/compile", {"path": "flows/p.pipeline", "target": "kfp"})]
    assert (tmp_path / "flows" / "p.yaml").read_text() == "pipelineSpec: {}\n"
    capsys.readouterr()
