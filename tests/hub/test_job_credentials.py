"""A job's own credential under the hub: what a job the cube-lab service started (a pipeline
node run as its owner's OS account) can reach, as its owner, while it runs; and datasets read
through the service (in a job, in a user's kernel) as they are read in-process.

The unit tests need nothing; the hub tests start a real hub (local shape) with two users, alice
and bob, their jobs and servers run as their own OS accounts where the machine allows it.
"""

from __future__ import annotations

import json
import os
import stat
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cube_lab import accounts, job_credentials
from cube_lab.config import ENV_NO_STORE, ENV_ROOT_DIR, ENV_SERVICE_URL, Settings
from cube_lab.identity import Caller
from cube_lab.job_credentials import InvalidJobToken, Issuer, JobRef
from cube_lab.rest_client import ServiceClient
from cube_lab.store.models import PipelineRun
from cube_lab.workspace import Workspace

SECRET = b"s" * 32


# -- the token -------------------------------------------------------------------------------


def test_a_token_names_its_job_and_owner() -> None:
    issuer = Issuer(SECRET, "http://svc/")
    token = issuer.issue(JobRef("run", "r123", "张三"))
    assert job_credentials.is_job_token(token)
    claims = issuer.verify(token)
    assert (claims.kind, claims.id, claims.owner) == ("run", "r123", "张三")
    assert abs(claims.issued_at - time.time()) < 60


def test_a_tampered_token_is_refused() -> None:
    issuer = Issuer(SECRET, "http://svc/")
    token = issuer.issue(JobRef("training", "t1", "alice"))
    prefix, payload, mac = token.split(".")
    # the same signature over a payload that names bob
    forged = json.loads(job_credentials._unb64(payload)) | {"o": "bob"}
    other = job_credentials._b64(json.dumps(forged).encode())
    for bad in (
        f"{prefix}.{other}.{mac}",
        f"{prefix}.{payload}.{mac[:-2]}xx",
        f"{prefix}.{payload}",
        f"{prefix}.{payload}.{mac}.x",
        "cjt2." + token[5:],
        "cjt1..",
        f"{prefix}.{payload}.{mac}\u00e9",
    ):
        with pytest.raises(InvalidJobToken) as caught:
            issuer.verify(bad)
        assert caught.value.status == 401 and "refused the job token" in caught.value.error


def test_a_token_of_another_secret_is_refused() -> None:
    token = Issuer(b"o" * 32, "http://svc/").issue(JobRef("tuning", "e1", "alice"))
    with pytest.raises(InvalidJobToken, match="signature"):
        Issuer(SECRET, "http://svc/").verify(token)


def test_a_token_of_an_unknown_kind_is_neither_issued_nor_taken() -> None:
    issuer = Issuer(SECRET, "http://svc/")
    with pytest.raises(ValueError):
        issuer.issue(JobRef("deployment", "d1", "alice"))
    body = job_credentials._b64(json.dumps({"k": "x", "i": "1", "o": "a", "t": 0}).encode())
    signed = f"cjt1.{body}"
    with pytest.raises(InvalidJobToken, match="unknown kind"):
        issuer.verify(f"{signed}.{issuer._mac(signed)}")


def test_the_secret_is_made_once_and_private(tmp_path: Path) -> None:
    first = job_credentials.load_secret(tmp_path)
    path = tmp_path / job_credentials.SECRET_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert job_credentials.load_secret(tmp_path) == first and len(first) >= 32
    path.chmod(0o644)
    assert job_credentials.load_secret(tmp_path) == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_token_is_taken_only_while_its_job_is_active(tmp_path: Path) -> None:
    ws = Workspace(Settings.resolve(tmp_path / "store"))
    try:
        ws.projects.ensure_personal(Caller("alice"))
        with ws.store.write() as s:
            project = ws.projects.resolve(s, Caller("alice"), None)
            s.add(
                PipelineRun(
                    id="r1", project_id=project.id, owner="alice", pipeline_path="/p",
                    pipeline_name="p", status="running", trigger="manual", run_dir="/r",
                )
            )  # fmt: skip
        issuer = Issuer(SECRET, "http://svc/")
        claims = issuer.verify(issuer.issue(JobRef("run", "r1", "alice")))
        assert job_credentials.active(ws.store, claims)
        # another owner's claim on the same run, and a job that does not exist
        assert not job_credentials.active(ws.store, replace_owner(claims, "bob"))
        assert not job_credentials.active(
            ws.store, issuer.verify(issuer.issue(JobRef("training", "r1", "alice")))
        )
        with ws.store.write() as s:
            s.get(PipelineRun, "r1").status = "succeeded"
        assert not job_credentials.active(ws.store, claims)
    finally:
        ws.close()


def replace_owner(claims: job_credentials.JobClaims, owner: str) -> job_credentials.JobClaims:
    from dataclasses import replace

    return replace(claims, owner=owner)


# -- a job's environment ---------------------------------------------------------------------


@pytest.fixture
def issuer(tmp_path: Path) -> Iterator[Issuer]:
    made = Issuer(SECRET, "http://127.0.0.1:9/services/cube-lab/", home=lambda u: tmp_path / u)
    job_credentials.configure(made)
    yield made
    job_credentials.configure(None)


WHO = accounts.RunAs(12345, 12345, (), "/home/x", "cube-u-alice")
SERVICE_ENV = {
    "PATH": "/usr/bin",
    "CUBE_LAB_DATA_DIR": "/store",
    "CUBE_LAB_DB_URL": "sqlite:////store/db",
    "JUPYTERHUB_API_TOKEN": "service-secret",
    "CUBE_LAB_TOKEN": "inherited",
    "CUBE_LAB_USER": "alice",
}


def test_a_job_of_the_service_gets_its_own_token(issuer: Issuer, tmp_path: Path) -> None:
    who = WHO.for_job("run", "r9", "alice", tmp_path / "runs" / "r9")
    env = accounts.job_env(dict(SERVICE_ENV), who)
    assert ENV_NO_STORE not in env
    assert "CUBE_LAB_DATA_DIR" not in env and "CUBE_LAB_DB_URL" not in env
    assert "JUPYTERHUB_API_TOKEN" not in env and "CUBE_LAB_USER" not in env
    assert env[ENV_SERVICE_URL] == "http://127.0.0.1:9/services/cube-lab/"
    assert env[ENV_ROOT_DIR] == str(tmp_path / "alice")
    assert env[job_credentials.ENV_JOB_DIR] == str(tmp_path / "runs" / "r9")
    claims = issuer.verify(env[job_credentials.ENV_TOKEN])
    assert (claims.kind, claims.id, claims.owner) == ("run", "r9", "alice")
    # cube-lab inside the job uses it
    client = ServiceClient.from_env({**env, "JUPYTERHUB_API_TOKEN": "a-hub-token"})
    assert client is not None and client.token == env[job_credentials.ENV_TOKEN]


def test_a_job_without_an_issuer_or_a_job_has_no_store(issuer: Issuer) -> None:
    env = accounts.job_env(dict(SERVICE_ENV), WHO)  # an account, no job (a model server)
    assert env[ENV_NO_STORE] and job_credentials.ENV_TOKEN not in env
    job_credentials.configure(None)  # the embedded shape: no service, no issuer
    env = accounts.job_env(dict(SERVICE_ENV), WHO.for_job("run", "r1", "alice"))
    assert env[ENV_NO_STORE] and job_credentials.ENV_TOKEN not in env
    assert ENV_SERVICE_URL not in env


# -- on a real hub ----------------------------------------------------------------------------

from cube_lab.hub import devhub  # noqa: E402
from tests.hub_kernel import Kernel  # noqa: E402
from tests.hub_util import (  # noqa: E402
    OS_ACCOUNTS,
    cube,
    home,
    needs_accounts,
    running_hub,
    spawn_servers,
    wait_for_run,
)
from tests.labeling_util import make_csv, make_images  # noqa: E402
from tests.pipeline_util import node, script, write_pipeline  # noqa: E402

USERS = ("alice", "bob")


@pytest.fixture(scope="module")
def hub() -> Iterator[devhub.DevHub]:
    with running_hub("cube-hub-jobs-", USERS) as running:
        yield running


@pytest.fixture(scope="module")
def tokens(hub: devhub.DevHub) -> dict[str, str]:
    return {name: hub.user_token(name) for name in USERS}


@pytest.fixture(scope="module")
def servers(hub: devhub.DevHub, tokens: dict[str, str]) -> dict[str, Any]:
    return spawn_servers(hub, USERS)


def service(hub: devhub.DevHub, path: str, token: str) -> tuple[int, Any]:
    """A request straight to the cube-lab service (as jobs make them)."""
    return hub.request("GET", f"/services/cube-lab/cube/api/v1/{path}", token=token)


def exported_dataset(hub: devhub.DevHub, user: str, token: str, texts: list[str]) -> None:
    """``reviews``: a text dataset of ``user``'s with a labeled item and a JSONL export."""
    make_csv(home(hub, user) / "reviews.csv", texts)
    status, made = cube(
        hub, user, "datasets", token, method="POST", body={"name": "reviews", "path": "reviews.csv"}
    )
    assert status == 201, made
    body = {"name": "mood", "dataset": "reviews", "type": "text-class", "labels": ["+", "-"]}
    status, made = cube(hub, user, "labeling", token, method="POST", body=body)
    assert status == 201, made
    where = f"projects/{user}/labeling/mood"
    status, task = cube(hub, user, f"{where}/next", token, method="POST")
    assert status == 200, task
    result = {"result": {"labels": ["+"]}, "submit": True}
    status, _ = cube(hub, user, f"{where}/tasks/{task['id']}", token, method="PUT", body=result)
    assert status == 200
    status, exported = cube(
        hub, user, f"{where}/export", token, method="POST", body={"format": "jsonl"}
    )
    assert status == 201, exported


def in_process(hub: devhub.DevHub, user: str, name: str) -> pd.DataFrame:
    """What ``cube_lab.datasets.load`` returns in-process, on the service's own store."""
    from cube_lab import datasets

    ws = Workspace(Settings.resolve(hub.data_dir / "cube-lab"))
    try:
        return datasets.read(ws.datasets.resolve(Caller(user), name))
    finally:
        ws.close()


NODE = textwrap.dedent(
    """
    import json, os, subprocess, sys
    import cube_lab.datasets as datasets
    from cube_lab import registry
    from cube_lab.rest_client import ServiceClient

    out = {"uid": os.getuid(), "no_store": os.environ.get("CUBE_LAB_NO_STORE")}
    df = datasets.load("reviews")
    out["df"] = df.to_json(orient="records")
    out["cached"] = str(datasets.path("reviews"))
    # a file the job wrote in its own folder (outside the home), and one in the home
    mine = os.path.join(os.environ["CUBE_LAB_JOB_DIR"], "weights.bin")
    with open(mine, "wb") as f:
        f.write(b"w" * 64)
    v = registry.register(mine, "job-model", project="alice", metrics={"acc": 0.5})
    out["version"] = [v.project, v.model, v.version, v.created_by, v.lineage.datasets]
    with open("home-weights.bin", "wb") as f:
        f.write(b"h" * 64)
    v = registry.register("home-weights.bin", "job-model-2")
    out["version2"] = [v.project, v.version]
    cli = subprocess.run(
        [sys.executable, "-m", "cube_lab.cli", "model", "list"],
        capture_output=True, text=True,
    )
    out["cli"] = [cli.returncode, cli.stdout + cli.stderr]
    client = ServiceClient.from_env()
    out["whoami"] = client.get("whoami")["user"]
    try:
        client.get("projects/bob/models/bob-model")
        out["bob"] = "read"
    except Exception as exc:
        out["bob"] = [getattr(exc, "status", None), str(exc)]
    out["token"] = os.environ["CUBE_LAB_TOKEN"]
    print("RESULT " + json.dumps(out))
    """
)


@needs_accounts
def test_alices_node_reads_her_dataset_and_registers_what_it_wrote(
    hub: devhub.DevHub, tokens: dict[str, str], servers: dict[str, Any]
) -> None:
    alice, bob = tokens["alice"], tokens["bob"]
    exported_dataset(hub, "alice", alice, ["great", "awful", "fine"])
    (home(hub, "bob") / "bob.bin").write_bytes(b"bob")
    status, made = cube(
        hub, "bob", "models", bob, method="POST",
        body={"name": "bob-model", "path": "bob.bin", "project": "bob"},
    )  # fmt: skip
    assert status == 201, made
    folder = home(hub, "alice")
    step = script(folder, "job.py", NODE)
    write_pipeline(folder, [node("j", filename=step)], filename="job.pipeline")
    status, run = cube(
        hub, "alice", "pipelines/runs", alice, method="POST", body={"path": "job.pipeline"}
    )
    assert status in (200, 201), run
    found = wait_for_run(hub, alice, run["id"])
    status, log = cube(hub, "alice", f"pipelines/runs/{run['id']}/nodes/j/log", alice)
    assert found["status"] == "succeeded", str(log)[-3000:]
    text = log["text"] if isinstance(log, dict) else str(log)
    line = next(x for x in text.splitlines() if x.startswith("RESULT "))
    out = json.loads(line.removeprefix("RESULT "))
    assert out["uid"] != 0 and out["no_store"] is None
    # the dataset, through the service, is the DataFrame cube-lab reads in-process
    expected = in_process(hub, "alice", "reviews")
    got = pd.read_json(__import__("io").StringIO(out["df"]), orient="records")
    pd.testing.assert_frame_equal(got, expected.reset_index(drop=True), check_dtype=False)
    assert out["cached"].startswith(str(folder / ".cache" / "cube-lab" / "datasets"))
    # the model version is alice's, made from the file the job wrote, with its lineage
    project, model, number, created_by, lineage = out["version"]
    assert (project, model, created_by) == ("alice", "job-model", "alice")
    assert [(d["name"], d["version"]) for d in lineage] == [("reviews", 1)]
    assert out["version2"][0] == "alice"
    status, seen = cube(hub, "alice", f"projects/alice/models/job-model/versions/{number}", alice)
    assert status == 200 and seen["size_bytes"] == 64, seen
    status, _ = cube(hub, "bob", "projects/alice/models/job-model", bob)
    assert status in (403, 404)
    status, listed = cube(hub, "bob", "models", bob)
    assert status == 200 and "job-model" not in json.dumps(listed)
    # the CLI in the job reaches the service as alice
    code, text = out["cli"]
    assert code == 0 and "job-model" in text and "bob-model" not in text, text
    assert out["whoami"] == "alice"
    # bob's model is out of the job's reach, as of any other request of alice's
    status, as_alice = cube(hub, "alice", "projects/bob/models/bob-model", alice)
    assert out["bob"][0] == status and status in (403, 404), (out["bob"], as_alice)
    # the run has ended: its token ends with it
    token = out["token"]
    status, refused = service(hub, "whoami", token)
    assert status == 401, refused
    assert "no longer active" in refused["error"] and refused["detail"]
    prefix, payload, mac = token.split(".")
    for bad in (f"{prefix}.{payload}.{mac[:-3]}abc", f"{prefix}.{payload[:-2]}.{mac}"):
        status, refused = service(hub, "whoami", bad)
        assert status == 401 and "refused the job token" in refused["error"], refused
    forged = Issuer(b"f" * 32, "x").issue(JobRef("run", run["id"], "alice"))
    status, refused = service(hub, "whoami", forged)
    assert status == 401 and "signature" in refused["error"], refused
    # hub tokens work as before
    status, me = service(hub, "whoami", alice)
    assert status == 200 and me["user"] == "alice"


@pytest.fixture
def bob_kernel(
    hub: devhub.DevHub, tokens: dict[str, str], servers: dict[str, Any]
) -> Iterator[Kernel]:
    """A kernel of its own for each test: what ``datasets.used()`` lists is the kernel's."""
    kernel = Kernel(hub.url, "bob", tokens["bob"])
    yield kernel
    kernel.shutdown()


def test_datasets_load_in_bobs_kernel_is_what_it_is_in_process(
    hub: devhub.DevHub, tokens: dict[str, str], bob_kernel: Kernel
) -> None:
    exported_dataset(hub, "bob", tokens["bob"], ["one", "two"])
    code = textwrap.dedent(
        """
        import json, cube_lab.datasets as datasets
        df = datasets.load("reviews")
        again = datasets.load("reviews", version=1)
        print("RESULT " + json.dumps({
            "df": df.to_json(orient="records"), "same": df.equals(again),
            "path": str(datasets.path("reviews")), "used": datasets.used(),
        }))
        try:
            datasets.load("reviews", project="alice")
        except Exception as exc:
            print("ALICE", type(exc).__name__, getattr(exc, "status", None))
        """
    )
    outcome = bob_kernel.run(code)
    assert outcome.error is None, outcome
    lines = outcome.stdout.splitlines()
    out = json.loads(next(x for x in lines if x.startswith("RESULT ")).removeprefix("RESULT "))
    expected = in_process(hub, "bob", "reviews")
    got = pd.read_json(__import__("io").StringIO(out["df"]), orient="records")
    pd.testing.assert_frame_equal(got, expected.reset_index(drop=True), check_dtype=False)
    assert out["same"]
    cached = Path(out["path"])
    assert cached.is_relative_to(home(hub, "bob") / ".cache" / "cube-lab" / "datasets" / "bob")
    assert [(u["project"], u["name"], u["version"]) for u in out["used"]] == [("bob", "reviews", 1)]
    assert "/datasets/" in out["used"][0]["path"] and ".cache" not in out["used"][0]["path"]
    alice_line = next(x for x in lines if x.startswith("ALICE"))
    assert alice_line.split()[1:] in (["NotFound", "404"], ["Forbidden", "403"]), alice_line
    if OS_ACCOUNTS:  # the cache is bob's own
        assert cached.stat().st_uid == os.stat(home(hub, "bob")).st_uid


def test_bob_loads_the_images_of_a_dataset_in_alices_home(
    hub: devhub.DevHub, tokens: dict[str, str], bob_kernel: Kernel
) -> None:
    """An image dataset with no export, registered by alice from her home in a project bob
    is in: bob's kernel gets its items as in-process, and where it cannot read alice's home
    (her OS account's) the images themselves, through the service, into his cache."""
    alice = tokens["alice"]
    names = make_images(home(hub, "alice") / "pics", 3, nested=True)
    status, made = cube(hub, "alice", "projects", alice, method="POST", body={"name": "zoo"})
    assert status == 201, made
    status, invited = cube(
        hub, "alice", "projects/zoo/members/bob", alice, method="PUT", body={"role": "member"}
    )
    assert status == 200, invited
    status, joined = cube(hub, "bob", "invitations/zoo/accept", tokens["bob"], method="POST")
    assert status == 200, joined
    body = {"name": "pics", "path": "pics", "project": "zoo"}
    status, made = cube(hub, "alice", "datasets", alice, method="POST", body=body)
    assert status == 201, made
    code = textwrap.dedent(
        """
        import json, hashlib, pathlib, cube_lab.datasets as datasets
        df = datasets.load("pics", project="zoo")
        files = [pathlib.Path(p) for p in df["path"]]
        print("RESULT " + json.dumps({
            "rows": df[["name", "width", "height"]].to_dict("records"),
            "paths": [str(f) for f in files],
            "sha": [hashlib.sha256(f.read_bytes()).hexdigest() for f in files],
            "folder": str(datasets.path("pics", project="zoo")),
            "used": datasets.used()[-1],
        }))
        """
    )
    outcome = bob_kernel.run(code)
    assert outcome.error is None, outcome
    line = next(x for x in outcome.stdout.splitlines() if x.startswith("RESULT "))
    out = json.loads(line.removeprefix("RESULT "))
    ws = Workspace(Settings.resolve(hub.data_dir / "cube-lab"))
    try:
        expected = ws.datasets.items(Caller("bob"), "zoo", "pics")
    finally:
        ws.close()
    assert out["rows"] == [{k: i[k] for k in ("name", "width", "height")} for i in expected]
    assert sorted(r["name"] for r in out["rows"]) == sorted(names)
    source = home(hub, "alice") / "pics"
    originals = [__import__("hashlib").sha256((source / r["name"]).read_bytes()).hexdigest()
                 for r in out["rows"]]  # fmt: skip
    assert out["sha"] == originals
    assert out["used"]["path"] == str(source) and out["used"]["version"] is None
    if OS_ACCOUNTS:  # alice's home is closed to bob: the images came through the service
        cache = home(hub, "bob") / ".cache" / "cube-lab" / "datasets" / "zoo" / "pics"
        assert Path(out["folder"]).is_relative_to(cache)
        assert all(Path(p).is_relative_to(cache) for p in out["paths"])
    else:
        assert out["folder"] == str(source)


TRAIN = textwrap.dedent(
    """
    import os
    import cube_lab
    for step in range(1, 4):
        cube_lab.report(step=step, loss=1.0 / step)
        print(f"step={step}", flush=True)
    out = os.environ["CUBE_OUTPUT_DIR"]
    os.makedirs(out, exist_ok=True)
    open(os.path.join(out, "model.txt"), "w").write("weights")
    print("uid", os.getuid(), flush=True)
    """
)


@needs_accounts
def test_alices_training_node_runs_its_job_through_the_service(
    hub: devhub.DevHub, tokens: dict[str, str], servers: dict[str, Any]
) -> None:
    from cube_lab.training.nodekind import OP_TRAINING

    alice, bob = tokens["alice"], tokens["bob"]
    folder = home(hub, "alice")
    script(folder, "train.py", TRAIN)
    script(folder, "after.py", "import os; print('trained by', os.environ['JOB'])\n")
    write_pipeline(
        folder,
        [
            node("train", OP_TRAINING, filename="train.py", framework="plain"),
            node(
                "after",
                upstream=("train",),
                filename="after.py",
                env_vars=[{"env_var": "JOB", "value": "{{ nodes.train.values.job_id }}"}],
            ),
        ],
        filename="train.pipeline",
    )
    status, run = cube(
        hub, "alice", "pipelines/runs", alice, method="POST", body={"path": "train.pipeline"}
    )
    assert status in (200, 201), run
    found = wait_for_run(hub, alice, run["id"])
    status, log = cube(hub, "alice", f"pipelines/runs/{run['id']}/nodes/train/log", alice)
    text = log["text"] if isinstance(log, dict) else str(log)
    assert found["status"] == "succeeded", text[-3000:]
    train = next(n for n in found["nodes"] if n["id"] == "train")
    job_id = train["values"]["job_id"]
    assert train["values"]["status"] == "succeeded"
    assert train["values"]["metric_loss"] == 1.0 / 3
    assert "step=3" in text and f"training job {job_id} succeeded" in text  # its log, streamed
    uid = __import__("pwd").getpwnam(accounts.user_account("alice")).pw_uid
    assert f"uid {uid}" in text
    status, job = cube(hub, "alice", f"training/jobs/{job_id}", alice)
    assert status == 200 and job["status"] == "succeeded", job
    assert Path(job["output_dir"], "model.txt").read_text() == "weights"
    status, _ = cube(hub, "bob", f"training/jobs/{job_id}", bob)
    assert status == 404
    status, log = cube(hub, "alice", f"pipelines/runs/{run['id']}/nodes/after/log", alice)
    assert f"trained by {job_id}" in str(log)


def node_log(hub: devhub.DevHub, token: str, run_id: str, node_id: str) -> str:
    status, log = cube(hub, "alice", f"pipelines/runs/{run_id}/nodes/{node_id}/log", token)
    assert status == 200, log
    return log["text"] if isinstance(log, dict) else str(log)


@needs_accounts
def test_cancelling_alices_run_stops_the_training_job_its_node_started(
    hub: devhub.DevHub, tokens: dict[str, str], servers: dict[str, Any]
) -> None:
    import re

    from cube_lab.training.nodekind import OP_TRAINING

    alice = tokens["alice"]
    folder = home(hub, "alice")
    script(folder, "long.py", "import time\nfor i in range(600):\n    print(i, flush=True)\n"
           "    time.sleep(0.2)\n")  # fmt: skip
    write_pipeline(
        folder, [node("long", OP_TRAINING, filename="long.py", framework="plain")],
        filename="long.pipeline",
    )  # fmt: skip
    status, run = cube(
        hub, "alice", "pipelines/runs", alice, method="POST", body={"path": "long.pipeline"}
    )
    assert status in (200, 201), run
    deadline, job_id = time.monotonic() + 90, None
    while time.monotonic() < deadline:
        found = re.search(r"training job (\S+) \(plain", node_log(hub, alice, run["id"], "long"))
        if found:
            job_id = found.group(1)
            _, job = cube(hub, "alice", f"training/jobs/{job_id}", alice)
            if job["status"] == "running":
                break
        time.sleep(0.5)
    assert job_id is not None, node_log(hub, alice, run["id"], "long")
    status, _ = cube(hub, "alice", f"pipelines/runs/{run['id']}/cancel", alice, method="POST")
    assert status == 200
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        _, job = cube(hub, "alice", f"training/jobs/{job_id}", alice)
        if job["status"] not in ("queued", "running"):
            break
        time.sleep(0.5)
    assert job["status"] == "cancelled", job
    assert wait_for_run(hub, alice, run["id"])["status"] == "cancelled"


QUADRATIC = """\
import nni
params = nni.get_next_parameter()
x = params["x"]
nni.report_final_result(-(x - 2) ** 2)
print("trial", nni.get_trial_id(), "x", x)
"""


@needs_accounts
def test_alices_tuning_node_runs_its_experiment_through_the_service(
    hub: devhub.DevHub, tokens: dict[str, str], servers: dict[str, Any]
) -> None:
    import sys

    import yaml

    from cube_lab.tuning.nodekind import OP_TUNING

    alice, bob = tokens["alice"], tokens["bob"]
    folder = home(hub, "alice")
    script(folder, "trial.py", QUADRATIC)
    cfg = {
        "searchSpace": {"x": {"_type": "uniform", "_value": [-5, 5]}},
        "trialCommand": f"{sys.executable} trial.py",
        "trialCodeDirectory": ".",
        "trialConcurrency": 1,
        "maxTrialNumber": 2,
        "tuner": {"name": "Random", "classArgs": {"seed": 7}},
    }
    (folder / "search.yml").write_text(yaml.safe_dump(cfg))
    write_pipeline(
        folder, [node("tune", OP_TUNING, filename="search.yml", max_trials=2)],
        filename="tune.pipeline",
    )  # fmt: skip
    status, run = cube(
        hub, "alice", "pipelines/runs", alice, method="POST", body={"path": "tune.pipeline"}
    )
    assert status in (200, 201), run
    found = wait_for_run(hub, alice, run["id"])
    assert found["status"] == "succeeded", node_log(hub, alice, run["id"], "tune")[-3000:]
    values = next(n for n in found["nodes"] if n["id"] == "tune")["values"]
    assert values["trials"] == 2
    status, experiment = cube(hub, "alice", f"tuning/experiments/{values['experiment']}", alice)
    assert status == 200 and experiment["owner"] == "alice", experiment
    assert experiment["best"]["parameters"]["x"] == values["param_x"]
    status, _ = cube(hub, "bob", f"tuning/experiments/{values['experiment']}", bob)
    assert status == 404


@needs_accounts
def test_cancelling_alices_run_stops_the_experiment_its_tuning_node_started(
    hub: devhub.DevHub, tokens: dict[str, str], servers: dict[str, Any]
) -> None:
    import sys

    import yaml

    from cube_lab.tuning.nodekind import OP_TUNING

    alice = tokens["alice"]
    folder = home(hub, "alice")
    script(folder, "slow_trial.py", "import time, nni\nnni.get_next_parameter()\ntime.sleep(120)\n")
    cfg = {
        "searchSpace": {"x": {"_type": "uniform", "_value": [-5, 5]}},
        "trialCommand": f"{sys.executable} slow_trial.py",
        "trialCodeDirectory": ".",
        "trialConcurrency": 1,
        "maxTrialNumber": 1,
        "tuner": {"name": "Random", "classArgs": {"seed": 7}},
    }
    (folder / "slow.yml").write_text(yaml.safe_dump(cfg))
    write_pipeline(folder, [node("tune", OP_TUNING, filename="slow.yml")], filename="slow.pipeline")
    _, before = cube(hub, "alice", "tuning/experiments", alice)
    known = {e["id"] for e in before["experiments"]}
    status, run = cube(
        hub, "alice", "pipelines/runs", alice, method="POST", body={"path": "slow.pipeline"}
    )
    assert status in (200, 201), run
    deadline, started = time.monotonic() + 90, None
    while time.monotonic() < deadline and started is None:
        _, listed = cube(hub, "alice", "tuning/experiments", alice)
        started = next(
            (e for e in listed["experiments"] if e["id"] not in known and e["status"] == "running"),
            None,
        )
        time.sleep(0.5)
    assert started is not None, node_log(hub, alice, run["id"], "tune")
    assert "CUBE_LAB_USER" not in node_log(hub, alice, run["id"], "tune")
    time.sleep(2)  # its trial starts
    status, _ = cube(hub, "alice", f"pipelines/runs/{run['id']}/cancel", alice, method="POST")
    assert status == 200
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        _, experiment = cube(hub, "alice", f"tuning/experiments/{started['id']}", alice)
        if experiment["status"] not in ("queued", "running"):
            break
        time.sleep(0.5)
    assert experiment["status"] not in ("queued", "running", "done"), experiment
    assert wait_for_run(hub, alice, run["id"])["status"] == "cancelled"
