"""The ``cube-lab`` CLI, the magics and ``registry.register`` under the hub: through the
cube-lab service, with the user's own token.

One real hub (local shape) for the module, alice's and bob's servers spawned; the real CLI runs
as a child process with alice's server environment (``/proc/<pid>/environ``: the service URL and
her server's token, no store) in her home, as her terminal would run it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from cube_lab import errors
from cube_lab.hub import devhub
from cube_lab.rest_client import ServiceClient
from tests.hub_kernel import Kernel
from tests.hub_util import bare_hub, spawn_servers
from tests.k8s_mock import InThread
from tests.pipeline_util import node, script, write_pipeline

pytestmark = pytest.mark.hub

USERS = ("alice", "bob")
NS = "ml"


@pytest.fixture(scope="module")
def cluster() -> Iterator[InThread]:
    """A Kubernetes API server (kmock) the hub's cube-lab service has credentials for."""
    with InThread() as running:
        yield running


@pytest.fixture(scope="module")
def hub(cluster: InThread) -> Iterator[devhub.DevHub]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(
            "CUBE_LAB_OS_ACCOUNTS", "0"
        )  # per-user OS accounts: tests/hub/test_os_accounts.py
        # the service's cluster credentials (the hub's environment; never a user server's)
        mp.setenv("CUBE_LAB_K8S_HOST", cluster.url)
        mp.setenv("CUBE_LAB_K8S_TOKEN", "service-account-token")
        mp.setenv("CUBE_LAB_K8S_NAMESPACE", NS)
        with bare_hub("cube-hub-cli-") as running:
            for name in USERS:
                running.hub("POST", f"/users/{name}")
            spawn_servers(running, USERS)
            yield running


def home(hub: devhub.DevHub, user: str) -> Path:
    return hub.data_dir / "users" / user


def server_env(hub: devhub.DevHub, user: str) -> dict[str, str]:
    """What a terminal of ``user``'s server has: the server's environment, its root."""
    _, model = hub.hub("GET", f"/users/{user}")
    pid = model["servers"][""]["state"]["pid"]
    raw = Path(f"/proc/{pid}/environ").read_text()
    env = dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)
    env["CUBE_LAB_ROOT_DIR"] = str(home(hub, user))  # the server exports it to its children
    return env


def cli(
    hub: devhub.DevHub, user: str, *args: str, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    run_env = {**server_env(hub, user), **env}
    assert "CUBE_LAB_DATA_DIR" not in run_env and "CUBE_LAB_DB_URL" not in run_env
    return subprocess.run(
        [sys.executable, "-m", "cube_lab.cli", *args],
        cwd=cwd or home(hub, user),
        env=run_env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_register_list_show_and_only_alice_sees_it(hub: devhub.DevHub) -> None:
    folder = home(hub, "alice") / "models"
    folder.mkdir(exist_ok=True)
    (folder / "weights.bin").write_bytes(b"w" * 1000)
    out = ok(
        cli(
            hub,
            "alice",
            "model",
            "register",
            "weights.bin",
            "--name",
            "cli-model",
            "--metric",
            "acc=0.9",
            cwd=folder,
        )
    )
    assert "Registered cli-model v1" in out and "1,000 bytes" in out and "project alice" in out
    listed = ok(cli(hub, "alice", "model", "list"))
    assert "cli-model" in listed and "PROJECT" in listed.splitlines()[0]
    as_json = json.loads(ok(cli(hub, "alice", "model", "list", "--json")))
    assert [m["name"] for m in as_json if m["name"] == "cli-model"] == ["cli-model"]
    shown = ok(cli(hub, "alice", "model", "show", "cli-model"))
    assert shown.startswith("alice/cli-model") and "acc=0.9" in shown
    # bob's CLI, his own token: nothing of alice's, whatever $CUBE_LAB_USER says
    bobs = cli(hub, "bob", "model", "list", CUBE_LAB_USER="alice")
    assert bobs.returncode == 0 and "cli-model" not in bobs.stdout, bobs
    refused = cli(hub, "bob", "model", "show", "cli-model", "--project", "alice")
    assert refused.returncode != 0 and "cube-lab: error:" in refused.stderr
    assert "Traceback" not in refused.stderr and "cli-model v1" not in refused.stdout
    projects = ok(cli(hub, "alice", "project", "list"))
    assert "alice" in projects and "personal" in projects


def test_download_writes_the_file(hub: devhub.DevHub) -> None:
    folder = home(hub, "alice")
    (folder / "dl.bin").write_bytes(b"payload" * 50)
    ok(cli(hub, "alice", "model", "register", "dl.bin", "--name", "dl-model"))
    out = ok(cli(hub, "alice", "model", "download", "dl-model", "-o", "fetched/"))
    assert "Downloaded dl-model:latest to" in out or "Downloaded dl-model" in out
    assert (folder / "fetched" / "dl.bin").read_bytes() == b"payload" * 50
    # a folder model comes back as the folder
    (folder / "tree" / "sub").mkdir(parents=True)
    (folder / "tree" / "a.txt").write_text("a")
    (folder / "tree" / "sub" / "b.txt").write_text("b")
    ok(cli(hub, "alice", "model", "register", "tree", "--name", "tree-model"))
    ok(cli(hub, "alice", "model", "download", "tree-model", "-o", "tree-copy"))
    assert (folder / "tree-copy" / "sub" / "b.txt").read_text() == "b"
    assert (folder / "tree-copy" / "a.txt").read_text() == "a"


def test_pipeline_runs_with_progress_and_its_exit_code(hub: devhub.DevHub) -> None:
    folder = home(hub, "alice") / "flows"
    folder.mkdir(exist_ok=True)
    first = script(folder, "first.py", "print('first says hi')\n")
    second = script(folder, "second.py", "import os\nprint('second got', os.environ.get('WHO'))\n")
    write_pipeline(
        folder,
        [
            node("a", filename=first, label="first"),
            node(
                "b", upstream=("a",), filename=second, label="second", pipeline_parameters=["WHO"]
            ),
        ],
        parameters=[{"name": "WHO", "default_value": {"type": "String", "value": "nobody"}}],
        filename="two.pipeline",
    )
    done = cli(hub, "alice", "pipeline", "run", "two.pipeline", "--param", "WHO=alice", cwd=folder)
    out = ok(done)
    lines = out.splitlines()
    assert lines[0].startswith("run ") and "2 node(s)" in lines[0], out
    assert any(" 1/2 " in ln and " ok first" in ln for ln in lines), out
    assert any(" 2/2 " in ln and " ok second" in ln for ln in lines), out
    assert lines[-1].startswith("run ") and " succeeded in " in lines[-1], out
    run_id = lines[0].split()[1].rstrip(":")
    runs = ok(cli(hub, "alice", "pipeline", "runs"))
    assert run_id in runs and "succeeded" in runs
    log = ok(cli(hub, "alice", "pipeline", "logs", run_id, "second"))
    assert "second got" in log
    assert run_id not in ok(cli(hub, "bob", "pipeline", "runs"))

    compiled = ok(cli(hub, "alice", "pipeline", "compile", "two.pipeline", cwd=folder))
    assert compiled.strip() == "compiled two.pipeline to two.yaml (Kubeflow Pipelines v2 IR)"
    assert "deploymentSpec:" in (folder / "two.yaml").read_text()
    scheduled = ok(
        cli(
            hub,
            "alice",
            "pipeline",
            "schedule",
            "two.pipeline",
            "--cron",
            "0 3 * * *",
            "--name",
            "nightly",
            cwd=folder,
        )
    )
    assert scheduled.startswith("schedule ") and "(nightly): 0 3 * * *, next run 20" in scheduled
    schedule_id = scheduled.split()[1]
    listed = ok(cli(hub, "alice", "pipeline", "schedules")).splitlines()
    assert listed[0].startswith("ID"), listed
    assert [ln.split()[:2] for ln in listed[1:]] == [[schedule_id, "nightly"]], listed
    assert "nightly" not in ok(cli(hub, "bob", "pipeline", "schedules"))
    gone = ok(cli(hub, "alice", "pipeline", "unschedule", schedule_id))
    assert gone.strip() == f"deleted schedule {schedule_id}"
    assert "nightly" not in ok(cli(hub, "alice", "pipeline", "schedules"))

    bad = script(folder, "bad.py", "import sys\nprint('going down')\nsys.exit(3)\n")
    write_pipeline(folder, [node("a", filename=bad, label="bad")], filename="bad.pipeline")
    failed = cli(hub, "alice", "pipeline", "run", "bad.pipeline", cwd=folder)
    assert failed.returncode == 1, failed
    assert "FAIL bad" in failed.stdout and " failed in " in failed.stdout.splitlines()[-1]
    assert "--- bad: last lines" in failed.stderr and "going down" in failed.stderr


def test_paths_outside_the_home_and_commands_not_there_yet(hub: devhub.DevHub) -> None:
    outside = Path(tempfile.mkdtemp(prefix="cube-outside-"))
    try:
        (outside / "m.bin").write_bytes(b"x")
        done = cli(hub, "alice", "model", "register", str(outside / "m.bin"), "--name", "out")
        assert done.returncode == 2, done
        assert "is outside your home" in done.stderr and "Traceback" not in done.stderr
        done = cli(hub, "alice", "model", "register", "../bob/x.bin", "--name", "sneaky")
        assert done.returncode == 2 and "is outside your home" in done.stderr, done
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    # --json carries the error body for scripts
    done = cli(hub, "alice", "model", "show", "no-such-model", "--json")
    assert done.returncode == 1 and json.loads(done.stdout)["error"], done


def test_train_streams_the_job_and_lists_it(hub: devhub.DevHub) -> None:
    folder = home(hub, "alice") / "train"
    folder.mkdir(exist_ok=True)
    (folder / "fit.py").write_text("print('epoch 1 loss 0.5', flush=True)\n")
    done = cli(hub, "alice", "train", "--framework", "plain", "fit.py", cwd=folder)
    out = ok(done)
    assert out.startswith("job ") and "epoch 1 loss 0.5" in out, out
    assert " succeeded" in done.stderr, done.stderr
    job_id = out.split()[1].rstrip(":")
    assert job_id in ok(cli(hub, "alice", "training", "list"))
    assert "epoch 1 loss 0.5" in ok(cli(hub, "alice", "training", "logs", job_id))
    (folder / "ckpt.bin").write_bytes(b"c" * 10)
    registered = ok(
        cli(
            hub,
            "alice",
            "training",
            "register",
            job_id,
            "--name",
            "trained",
            "--path",
            "ckpt.bin",
            cwd=folder,
        )
    )
    assert registered.strip() == f"Registered trained v1 from job {job_id} in project alice"
    shown = json.loads(ok(cli(hub, "alice", "model", "show", "trained", "--json")))
    assert shown["versions"][0]["lineage"]["training_job_id"] == job_id, shown
    (folder / "crash.py").write_text("raise SystemExit(4)\n")
    crashed = cli(hub, "alice", "train", "--framework", "plain", "crash.py", cwd=folder)
    assert crashed.returncode == 1 and " failed" in crashed.stderr, crashed
    assert ok(cli(hub, "alice", "deployments")).startswith("NAME")


MAGICS = textwrap.dedent(
    """
    import os, pathlib
    os.chdir(os.environ["CUBE_LAB_ROOT_DIR"])
    pathlib.Path("magic.bin").write_bytes(b"m" * 10)
    get_ipython().run_line_magic("load_ext", "cube_lab")
    get_ipython().run_line_magic("cube_register", "magic-model magic.bin --metric acc=0.5")
    from cube_lab.registry import register
    v = register("magic.bin", name="fn-model", metrics={"f1": 0.25})
    print("FN", v.model, v.version, v.project, v.metrics)
    from sklearn.linear_model import LinearRegression
    fitted = LinearRegression().fit([[0.0], [1.0], [2.0]], [0.0, 1.0, 2.0])
    o = register(fitted, name="obj-model")
    print("OBJ", o.model, o.version, o.flavor, sorted(os.listdir(".cube-lab/uploads")))
    pathlib.Path("m.py").write_text("print('magic node ran')")
    import json
    from cube_lab.pipelines import elyra_format
    doc = elyra_format.new_document("m")
    doc["pipelines"][0]["nodes"] = [NODE]
    pathlib.Path("m.pipeline").write_text(json.dumps(doc))
    get_ipython().run_line_magic("cube_pipeline", "run m.pipeline --wait")
    get_ipython().run_cell_magic("cube_train", "--wait --framework plain", "print('cell trained')")
    import cube_lab as cl
    run = cl.pipelines.runs()[0]
    print("RUN", run.status, run.logs("only").strip())
    print("JOB", cl.training.jobs()[0].logs().strip())
    """
)


def test_magics_and_register_in_alices_kernel(hub: devhub.DevHub) -> None:
    token = hub.user_token("alice")
    kernel = Kernel(hub.url, "alice", token)
    try:
        code = MAGICS.replace("NODE", repr(node("n", filename="m.py", label="only")))
        outcome = kernel.run(code, timeout=180)
    finally:
        kernel.shutdown()
    assert outcome.error is None, outcome
    assert "Registered magic-model v1" in outcome.stdout, outcome.stdout
    assert "FN fn-model 1 alice {'f1': 0.25}" in outcome.stdout, outcome.stdout
    assert "OBJ obj-model 1 sklearn []" in outcome.stdout, outcome.stdout  # no scratch left
    assert "JOB [rank 0] cell trained" in outcome.stdout, outcome.stdout
    assert "RUN succeeded magic node ran" in outcome.stdout, outcome.stdout
    listed = ok(cli(hub, "alice", "model", "list"))
    assert "magic-model" in listed and "fn-model" in listed
    assert "magic-model" not in ok(cli(hub, "bob", "model", "list"))


TRIAL = """\
import os
import nni

x = nni.get_next_parameter()["x"]
print("trial got x", x)
with open(os.path.join(os.environ["NNI_OUTPUT_DIR"], "model.txt"), "w") as out:
    out.write(str(x))
nni.report_final_result(-((x - 2) ** 2))
"""


def test_tune_runs_at_the_service(hub: devhub.DevHub) -> None:
    folder = home(hub, "alice") / "hpo"
    folder.mkdir(exist_ok=True)
    (folder / "trial.py").write_text(TRIAL)
    config = {
        "searchSpace": {"x": {"_type": "uniform", "_value": [-5, 5]}},
        "trialCommand": "python3 trial.py",
        "trialCodeDirectory": ".",
        "trialConcurrency": 2,
        "maxTrialNumber": 5,
        "tuner": {"name": "Random", "classArgs": {"seed": 3}},
    }
    (folder / "search.yml").write_text(yaml.safe_dump(config))
    done = cli(hub, "alice", "tune", "hpo/search.yml", "--max-trials", "3")
    out = ok(done)
    assert out.startswith("experiment ") and "up to 3 trials" in out, out
    assert out.count(" succeeded ") == 3, out
    assert "experiment " in out and " done in " in out and "best: trial " in out, out
    exp_id = out.split()[1].rstrip(":")
    assert exp_id in ok(cli(hub, "alice", "tuning", "list"))
    assert exp_id not in ok(cli(hub, "bob", "tuning", "list"))
    assert " *" in ok(cli(hub, "alice", "tuning", "show", exp_id))
    view = json.loads(ok(cli(hub, "alice", "tuning", "show", exp_id, "--json")))
    best = view["best"]["id"]
    assert "trial got x" in ok(cli(hub, "alice", "tuning", "log", exp_id, best))
    registered = ok(cli(hub, "alice", "tuning", "register", exp_id, "--name", "tuned"))
    assert registered.strip() == "registered tuned version 1"
    refused = cli(hub, "bob", "tuning", "register", exp_id, "--name", "stolen")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused
    resumed = ok(cli(hub, "alice", "tuning", "resume", exp_id))  # nothing left to try
    assert resumed.startswith(f"experiment {exp_id}: Random, up to 3 trials"), resumed
    assert " succeeded " not in resumed and f"experiment {exp_id} done in " in resumed, resumed


def test_katib_runs_through_the_service_with_its_cluster_credentials(
    hub: devhub.DevHub, cluster: InThread
) -> None:
    """alice's server holds no cluster credentials; her `cube-lab tune --backend kubernetes`
    asks the service, which creates the Katib Experiment with its own and follows it (the
    test plays Katib); bob does not see it."""
    from tests.tuning.test_cluster_service import EXPERIMENTS, add_trial, katib_says, succeeded

    env = server_env(hub, "alice")
    held = [k for k in env if k.startswith("CUBE_LAB_K8S") or k in ("KUBECONFIG",)]
    assert held == [] and "service-account-token" not in json.dumps(env)
    folder = home(hub, "alice") / "katib"
    folder.mkdir(exist_ok=True)
    (folder / "trial.py").write_text(TRIAL)
    config = {
        "experimentName": "x-search",
        "searchSpace": {"x": {"_type": "uniform", "_value": [-5, 5]}},
        "trialCommand": "python3 trial.py",
        "maxTrialNumber": 2,
        "tuner": {"name": "Random"},
    }
    (folder / "search.yml").write_text(yaml.safe_dump(config))
    answer: dict[str, subprocess.CompletedProcess[str]] = {}
    argv = ("tune", "katib/search.yml", "--backend", "kubernetes", "--image", "reg/t:1", "--json")
    waiting = threading.Thread(target=lambda: answer.update(done=cli(hub, "alice", *argv)))
    waiting.start()

    async def created(km: Any) -> str | None:
        names = [k[2] for k in km.objects if k[0] == EXPERIMENTS and k[1] == NS]
        return names[0] if names else None

    deadline = time.monotonic() + 60
    while (name := cluster.run(created)) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert name, answer

    async def katib_ran(km: Any) -> None:
        add_trial(km, name, "aaaaaaaa", {"x": "1.5"}, "Succeeded", "-0.25", namespace=NS)
        done = succeeded(f"{name}-aaaaaaaa", {"x": "1.5"}, "-0.25")
        await katib_says(km, name, done, namespace=NS)

    cluster.run(katib_ran)
    waiting.join(120)
    result = json.loads(ok(answer["done"]))
    assert result["status"] == "done" and result["trials"] == 1, result
    assert result["best"]["parameters"] == {"x": 1.5} and result["best"]["metric"] == -0.25
    assert result["experiment"] in ok(cli(hub, "alice", "tuning", "list"))
    assert result["experiment"] not in ok(cli(hub, "bob", "tuning", "list"))
    refused = cli(hub, "alice", "tune", "katib/search.yml", "--namespace", "kube-system")
    assert refused.returncode == 2 and "not available under the hub" in refused.stderr


def test_kserve_through_the_service_with_its_cluster_credentials(
    hub: devhub.DevHub, cluster: InThread
) -> None:
    """alice deploys a registered version to KServe from her server, which holds no cluster
    credentials: the service submits the InferenceService (the test plays KServe), she
    lists, moves the canary and deletes it; bob sees nothing and cannot delete it."""
    isvcs = "serving.kserve.io/v1beta1/inferenceservices"
    (home(hub, "alice") / "served.joblib").write_bytes(b"the manifest needs the path only")
    ok(cli(hub, "alice", "model", "register", "served.joblib", "--name", "served"))
    k8s = ("--backend", "kubernetes")
    answer: dict[str, subprocess.CompletedProcess[str]] = {}
    argv = ("deploy", "served:1", *k8s, "--wait", "60")
    waiting = threading.Thread(target=lambda: answer.update(done=cli(hub, "alice", *argv)))
    waiting.start()
    ready = {
        "conditions": [{"type": "Ready", "status": "True"}],
        "url": "http://served.ml.example.com",
    }

    async def kserve_ran(km: Any) -> bool:
        if not any(k[:3] == (isvcs, NS, "served") for k in km.objects):
            return False
        url = f"/apis/serving.kserve.io/v1beta1/namespaces/{NS}/inferenceservices/served"
        return (await km.patch(url, json={"status": ready})).status == 200

    deadline = time.monotonic() + 60
    while not cluster.run(kserve_ran) and time.monotonic() < deadline:
        time.sleep(0.1)
    waiting.join(90)
    out = ok(answer["done"])
    assert out.strip().splitlines()[-1] == "http://served.ml.example.com", out
    listed = ok(cli(hub, "alice", "deployments", *k8s))
    assert listed.splitlines()[1].split()[:3] == ["served", "alice", "ready"], listed
    assert "served" not in ok(cli(hub, "bob", "deployments", *k8s))
    refused = cli(hub, "bob", "undeploy", "served", *k8s)
    assert refused.returncode != 0 and "no InferenceService 'served' of yours" in refused.stderr
    canary = ok(cli(hub, "alice", "deployment", "traffic", "served", "25", *k8s))
    assert canary.strip() == "served: canary 25%", canary
    ok(cli(hub, "alice", "undeploy", "served", *k8s))

    async def deleted(km: Any) -> bool:
        return bool(km.objects[isvcs, NS, "served"].deleted)

    assert cluster.run(deleted)


def test_finetune_on_the_cluster_through_the_service(hub: devhub.DevHub, cluster: InThread) -> None:
    """alice's `cube-lab finetune --backend kubernetes` asks the service, which submits the
    PyTorchJob with its own credentials and follows it (the test plays the operator); a volume
    that is not hers is refused before anything is submitted; bob does not see the job."""
    pytest.importorskip("transformers")
    from cube_lab.finetune import tiny

    mine = home(hub, "alice")
    tiny.build(mine / "ft" / "base", [json.dumps(r) for r in tiny.alpaca_rows()])
    (mine / "ft" / "alpaca.json").write_text(json.dumps(tiny.alpaca_rows()))
    config = {"model": "base", "data": "alpaca.json", "output_dir": "out", "name": "ft-hub"}
    (mine / "ft" / "ft.yaml").write_text(yaml.safe_dump(config))
    k8s = ("--backend", "kubernetes", "--image", "reg/llm:1", "--workers", "2")
    theirs = cli(hub, "alice", "finetune", "ft/ft.yaml", *k8s, "--mount", f"claim-bob:{mine}")
    assert theirs.returncode != 0 and "'claim-bob'" in theirs.stderr, theirs.stderr
    refused = cli(hub, "alice", "finetune", "ft/ft.yaml", *k8s, "--namespace", "kube-system")
    assert refused.returncode == 2 and "not available under the hub" in refused.stderr
    answer: dict[str, subprocess.CompletedProcess[str]] = {}
    argv = ("finetune", "ft/ft.yaml", *k8s, "--mount", f"claim-alice:{mine}", "--json")
    waiting = threading.Thread(target=lambda: answer.update(done=cli(hub, "alice", *argv)))
    waiting.start()
    jobs = "kubeflow.org/v1/pytorchjobs"

    async def operator_ran(km: Any) -> dict[str, Any] | None:
        key = next((k for k in km.objects if k[0] == jobs and k[2] == "ft-hub"), None)
        if key is None:
            return None
        url = f"/apis/kubeflow.org/v1/namespaces/{NS}/pytorchjobs/ft-hub"
        done = [{"type": t, "status": "True", "reason": t} for t in ("Created", "Succeeded")]
        assert (await km.patch(url, json={"status": {"conditions": done}})).status == 200
        return dict(km.objects[key].raw)

    deadline = time.monotonic() + 60
    while (obj := cluster.run(operator_ran)) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert obj, answer
    container = obj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert container["command"][:3] == ["torchrun", "-m", "cube_lab.finetune.trainer"]
    waiting.join(120)
    job = json.loads(ok(answer["done"]))["job"]
    assert job["status"] == "succeeded" and job["backend"] == "kubernetes", job
    assert job["id"] in ok(cli(hub, "alice", "training", "list"))
    assert job["id"] not in ok(cli(hub, "bob", "training", "list"))


class _Answers(BaseHTTPRequestHandler):
    """A stand-in service: answers by the path's last segment, with what it was sent."""

    def do_GET(self) -> None:
        code = int(self.path.rsplit("/", 1)[-1].split("?")[0])
        body = b'{"error": "what went wrong", "detail": "how to fix it"}' if code >= 400 else b""
        if code == 200:
            body = json.dumps(
                {"auth": self.headers.get("Authorization"), "path": self.path}
            ).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


def test_the_client_maps_answers_to_cube_errors() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_port}/services/cube-lab/"
        client = ServiceClient(base, "tok")
        got = client.get("x/200", q="a b", flag=True, none=None)
        assert got["auth"] == "token tok"
        assert got["path"] == "/services/cube-lab/cube/api/v1/x/200?q=a+b&flag=true"
        expected = {
            400: errors.InvalidInput,
            403: errors.Forbidden,
            404: errors.NotFound,
            409: errors.Conflict,
            503: errors.StoreUnavailable,
        }
        for code, cls in expected.items():
            with pytest.raises(cls) as raised:
                client.get(f"x/{code}")
            assert raised.value.error == "what went wrong" and raised.value.status == code
            assert raised.value.detail == "how to fix it"
        with pytest.raises(errors.CubeError) as raised:
            client.get("x/429")
        assert raised.value.status == 429
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(errors.StoreUnavailable, match="cannot reach the cube-lab service"):
        ServiceClient(base, "tok").get("whoami")
    assert ServiceClient.from_env({}) is None
    with pytest.raises(errors.CubeError, match=r"JUPYTERHUB_API_TOKEN is not$"):
        ServiceClient.from_env({"CUBE_LAB_SERVICE_URL": base})
    made = ServiceClient.from_env({"CUBE_LAB_SERVICE_URL": base, "JUPYTERHUB_API_TOKEN": "t"})
    assert made is not None and made.api_url == base + "cube/api/v1/"


def test_a_team_project_shared_through_the_cli(hub: devhub.DevHub) -> None:
    ok(cli(hub, "alice", "project", "create", "cli-team", "--description", "shared"))
    invited = ok(cli(hub, "alice", "project", "member", "cli-team", "bob"))
    assert "Invited bob to cli-team as member" in invited
    assert "cli-team" in ok(cli(hub, "bob", "project", "invitations"))
    assert "You are now member of cli-team" in ok(cli(hub, "bob", "project", "accept", "cli-team"))
    folder = home(hub, "alice")
    for n in (1, 2):
        (folder / "team.bin").write_bytes(b"t" * n)
        ok(cli(hub, "alice", "model", "register", "team.bin", "--name", "team-model",
               "--project", "cli-team", "--metric", f"loss={n / 10}"))  # fmt: skip
    assert "team-model" in ok(cli(hub, "bob", "model", "list", "--project", "cli-team"))
    compared = ok(
        cli(hub, "bob", "model", "compare", "team-model", "1", "2", "--project", "cli-team")
    )
    assert "metric loss" in compared and "0.1" in compared and "0.2" in compared
    assert "Archived team-model:1" in ok(
        cli(hub, "alice", "model", "archive", "team-model:1", "--project", "cli-team")
    )
    refused = cli(hub, "alice", "model", "delete", "team-model", "--project", "cli-team")
    assert refused.returncode == 2 and "--yes" in refused.stderr
    ok(cli(hub, "alice", "model", "delete", "team-model", "--project", "cli-team", "--yes"))
    gone = cli(hub, "bob", "model", "show", "team-model", "--project", "cli-team")
    assert gone.returncode == 1 and "not found" in gone.stderr, gone


def test_deploy_call_change_traffic_and_undeploy(hub: devhub.DevHub) -> None:
    import joblib
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier

    folder = home(hub, "alice") / "serve"
    folder.mkdir(exist_ok=True)
    x, y = load_iris(return_X_y=True)
    joblib.dump(
        RandomForestClassifier(n_estimators=3, random_state=0).fit(x, y), folder / "m.joblib"
    )
    for _ in range(2):
        ok(cli(hub, "alice", "model", "register", "m.joblib", "--name", "iris", cwd=folder))
    done = cli(hub, "alice", "deploy", "iris:1")
    endpoint = ok(done).strip()
    assert endpoint.startswith("http://127.0.0.1:"), done
    assert "deployed iris v1 as iris (1 replica(s)) in " in done.stderr, done.stderr
    assert "iris: running, traffic v1 100%" in done.stderr, done.stderr
    env = server_env(hub, "alice")
    alice = ServiceClient(env["CUBE_LAB_SERVICE_URL"], env["JUPYTERHUB_API_TOKEN"])
    try:
        assert "iris" in ok(cli(hub, "alice", "deployments"))
        ok(cli(hub, "alice", "deployment", "samples", "iris", "--set", "100"))
        row = [5.1, 3.5, 1.4, 0.2]
        answer = alice.post(
            "projects/alice/deployments/iris/infer",
            {"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP64", "data": row}]},
        )
        assert answer["status"] == 200 and answer["body"]["outputs"][0]["data"] == [0], answer
        samples = cli(hub, "alice", "deployment", "samples", "iris")
        assert "sampling 100% of requests" in samples.stderr
        assert ok(samples).startswith("200 v1 "), samples.stdout
        assert "cube_serving_requests_total" in ok(
            cli(hub, "alice", "deployment", "metrics", "iris")
        )
        assert "listening" in ok(cli(hub, "alice", "deployment", "logs", "iris"))
        canary = cli(hub, "alice", "deploy", "iris:2", "--canary", "20")
        assert "traffic v1 80%, v2 20%" in ok(canary) + canary.stderr, canary
        assert ok(cli(hub, "alice", "deployment", "traffic", "iris", "50")).strip() == (
            "v1 50%, v2 50%"
        )
        assert ok(cli(hub, "alice", "deployment", "rollback", "iris")).strip() == "v1 100%"
        made = cli(hub, "alice", "deployment", "keys", "create", "iris", "ci")
        key = ok(made).strip()
        assert "key ci (" in made.stderr and "shown only now" in made.stderr and key
        listed = ok(cli(hub, "alice", "deployment", "keys", "list", "iris"))
        assert listed.splitlines()[0].startswith("ID") and " ci " in listed, listed
        revoked = ok(cli(hub, "alice", "deployment", "keys", "revoke", "iris", "ci"))
        assert revoked.startswith("key ci (") and revoked.strip().endswith("of iris: revoked")
        access = ok(cli(hub, "alice", "deployment", "access", "iris", "--rps", "50"))
        assert "auth: required" in access and "rate limit: 50 requests/s, bursts of" in access
        settings = json.loads(ok(cli(hub, "alice", "deployment", "access", "iris", "--json")))
        assert settings["rate_limit"]["rps"] == 50, settings
        refused = cli(hub, "bob", "deployment", "access", "iris", "--project", "alice")
        assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused
        assert "iris" not in ok(cli(hub, "bob", "deployments"))
    finally:
        stopped = cli(hub, "alice", "undeploy", "iris")
    assert ok(stopped).strip() == "iris: stopped", stopped
    assert ok(cli(hub, "alice", "undeploy", "iris", "--forget")).strip() == (
        "iris: undeployed and forgotten"
    )


def test_datasets_and_labeling_through_the_cli(hub: devhub.DevHub) -> None:
    from tests.labeling_util import make_images

    folder = home(hub, "alice") / "label"
    make_images(folder / "pics", 3)
    created = ok(cli(hub, "alice", "dataset", "create", "pics", "pics", cwd=folder))
    assert created.startswith("Created dataset pics in project alice: 3 images"), created
    assert "pics" in ok(cli(hub, "alice", "dataset", "list"))
    assert "pics" not in ok(cli(hub, "bob", "dataset", "list"))
    made = ok(
        cli(hub, "alice", "label", "create", "pets", "--dataset", "pics", "--type",
            "image-class", "--labels", "cat,dog", "--no-review")
    )  # fmt: skip
    assert made.strip() == "Created labeling project pets (image-class) on pics: 1=cat, 2=dog"
    assigned = ok(cli(hub, "alice", "label", "assign", "pets", "--users", "alice"))
    assert assigned.strip() == "Assigned 3 to alice"
    env = server_env(hub, "alice")
    alice = ServiceClient(env["CUBE_LAB_SERVICE_URL"], env["JUPYTERHUB_API_TOKEN"])
    where = "projects/alice/labeling/pets"
    while (task := alice.post(f"{where}/next")) is not None:  # as the labeling panel does
        alice.put(f"{where}/tasks/{task['id']}", {"result": {"labels": ["cat"]}, "submit": True})
    assert "3/3 done" in ok(cli(hub, "alice", "label", "list"))
    shown = ok(cli(hub, "alice", "label", "show", "pets"))
    assert shown.startswith("alice/pets: image-class on pics") and "labels: cat=3, dog=0" in shown
    exported = ok(
        cli(hub, "alice", "label", "export", "pets", "--format", "labelstudio", "-o", "ls.json",
            cwd=folder)
    )  # fmt: skip
    assert exported.startswith("Exported 3 task(s) as labelstudio: dataset pics version 1")
    assert "copied to ls.json" in exported, exported
    assert len(json.loads((folder / "ls.json").read_text())) == 3
    ok(cli(hub, "alice", "label", "export", "pets", "--format", "jsonl", "-o", "out/", cwd=folder))
    assert len((folder / "out" / "labels.jsonl").read_text().splitlines()) == 3
    ok(
        cli(hub, "alice", "label", "create", "copy", "--dataset", "pics", "--type",
            "image-class", "--labels", "cat,dog")
    )  # fmt: skip
    imported = ok(
        cli(hub, "alice", "label", "import", "copy", "ls.json", "--format", "labelstudio",
            cwd=folder)
    )  # fmt: skip
    assert imported.strip() == "Imported 3 task(s), skipped 0"
    versions = ok(cli(hub, "alice", "dataset", "show", "pics"))
    assert "v1  labelstudio" in versions and "v2  jsonl" in versions, versions
    refused = cli(hub, "bob", "label", "show", "pets", "--project", "alice")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused


def test_prelabel_with_a_registered_text_model(hub: devhub.DevHub) -> None:
    import joblib
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from tests.labeling_util import make_csv

    folder = home(hub, "alice") / "mood"
    folder.mkdir(exist_ok=True)
    good, bad = ["great movie", "loved it, great", "great fun"], ["awful film", "so awful"]
    model = make_pipeline(TfidfVectorizer(), LogisticRegression(C=10))
    joblib.dump(model.fit(good + bad, ["pos"] * 3 + ["neg"] * 2), folder / "sentiment.joblib")
    ok(cli(hub, "alice", "model", "register", "sentiment.joblib", "--name", "sentiment",
           cwd=folder))  # fmt: skip
    make_csv(folder / "r.csv", ["a great great film", "so awful", "great"])
    ok(cli(hub, "alice", "dataset", "create", "reviews", "r.csv", cwd=folder))
    ok(cli(hub, "alice", "label", "create", "mood", "--dataset", "reviews", "--type",
           "text-class", "--labels", "pos,neg"))  # fmt: skip
    done = ok(cli(hub, "alice", "label", "prelabel", "mood", "--model", "sentiment",
                  "--threshold", "0.5"))  # fmt: skip
    assert done.strip() == "Pre-labeled 3 task(s) with sentiment"
    assert "3 pre-labeled" in ok(cli(hub, "alice", "label", "show", "mood"))


def test_every_command_goes_through_the_service_and_one_that_does_not_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cube_lab import cli as cube_cli
    from cube_lab.cli import remote as cli_remote

    missing: list[str] = []

    def walk(parser: argparse.ArgumentParser, prefix: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for word, sub in action.choices.items():
                    fn = sub.get_default("fn")
                    # the hub's cube-admin commands (course) reach that service the same way
                    # everywhere: no store, nothing to route
                    admin = sub.get_default("hub_admin")
                    if fn is not None and not admin and cli_remote._remote(fn) is None:
                        missing.append(" ".join([*prefix, word]))
                    walk(sub, [*prefix, word])

    walk(cube_cli.build_parser(), [])
    assert missing == []
    # a command without a remote implementation exits 2 and names the ones that work
    monkeypatch.delitem(cli_remote.LABELING, "label_prelabel")
    monkeypatch.setenv("CUBE_LAB_SERVICE_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "t")
    monkeypatch.delenv("CUBE_LAB_USER", raising=False)
    assert cube_cli.main(["label", "prelabel", "some-project", "--model", "m"]) == 2
    err = capsys.readouterr().err
    assert "`cube-lab label prelabel` does not work under the hub yet" in err
    assert "model register" in err and "label export" in err and "label prelabel," not in err
