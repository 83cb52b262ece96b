"""Per-user OS accounts (the local hub shape): names, and, as root, jobs run as their owner.

The root-only tests create real system accounts (``useradd``) with a per-run test name and
remove them afterwards; they are skipped, with the reason, where the tests do not run as
root or no ``useradd`` is installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from cube_lab import accounts, processes
from cube_lab.config import ENV_DB_URL, ENV_NO_STORE, Settings
from cube_lab.errors import StoreUnavailable
from cube_lab.identity import Caller
from cube_lab.workspace import Workspace
from tests.pipeline_util import node, script, write_pipeline

USERADD = re.compile(r"^[a-z_][a-z0-9_-]*$")  # what useradd takes (Debian's NAME_REGEX)

NAMES = [
    "张三",
    "李四",
    "alice",
    "Alice",
    "ALICE",
    "aLice",
    "j.smith",
    "j-smith",
    "j_smith",
    "jsmith",
    "a" * 200,
    "a" * 199 + "b",
    "张" * 200,
    "张" * 199 + "李",
    "2024-cv",
    "user@example.com",
    "x--41lice",
]


def test_user_accounts_are_valid_and_distinct() -> None:
    made = [accounts.user_account(n) for n in NAMES]
    assert len(set(made)) == len(NAMES), made
    for name, account in zip(NAMES, made, strict=True):
        assert USERADD.match(account), (name, account)
        assert len(account) <= 32, account
        assert account.startswith(accounts.USER_PREFIX)
        assert accounts.user_account(name) == account  # deterministic
    assert accounts.user_account("张三") != accounts.user_account("李四")
    assert accounts.user_account("alice") == "cube-u-alice"  # a plain name stays readable


def test_group_accounts_are_valid_distinct_and_apart_from_users() -> None:
    groups = [accounts.group_account(n) for n in NAMES]
    assert len(set(groups)) == len(NAMES)
    assert not set(groups) & {accounts.user_account(n) for n in NAMES}
    for group in groups:
        assert USERADD.match(group) and len(group) <= 32, group


def test_not_enabled_when_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(accounts.ENV_OS_ACCOUNTS, "0")
    assert not accounts.enabled()
    monkeypatch.delenv(accounts.ENV_OS_ACCOUNTS)
    assert accounts.enabled() == (os.geteuid() == 0)


# A job with no way to the store says so: where no job-token issuer is configured (the embedded
# shape, these tests) or for processes that are not jobs. Jobs the hub's cube-lab service starts
# get a token instead: tests/hub/test_job_credentials.py.


def test_a_job_without_the_store_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUBE_LAB_DATA_DIR", raising=False)
    monkeypatch.delenv("CUBE_LAB_SERVICE_URL", raising=False)
    monkeypatch.setenv(ENV_NO_STORE, "this job runs as its owner's own account")
    with pytest.raises(StoreUnavailable, match="no cube-lab store in this job"):
        Settings.resolve()


def test_a_job_without_the_store_fails_in_the_cli(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUBE_LAB_")}
    env.update({ENV_NO_STORE: "runs as its owner", "HOME": str(tmp_path)})
    proc = subprocess.run(
        [sys.executable, "-m", "cube_lab.cli", "model", "list"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "no cube-lab store in this job" in proc.stderr
    assert not (tmp_path / ".local").exists()  # no empty store was made under its HOME


def test_a_pipeline_training_node_without_the_store_says_why(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUBE_LAB_")}
    env.update(
        {
            ENV_NO_STORE: "runs as its owner",
            "HOME": str(tmp_path),
            "CUBE_TRAINING_SPEC": json.dumps({"framework": "plain", "script": "t.py"}),
        }
    )
    proc = subprocess.run(
        [sys.executable, "-m", "cube_lab.training.node_main"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "cube-lab: error: no cube-lab store in this job: runs as its owner" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- as root -------------------------------------------------------------------------------

as_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("useradd") is None,
    reason="creating system accounts needs root and useradd",
)


def _test_name(tag: str) -> str:
    return f"T{tag}.{uuid.uuid4().hex[:8]}"  # mixed case and a dot: an escaped name


@pytest.fixture
def users() -> Iterator[list[str]]:
    made: list[str] = []
    yield made
    for name in made:
        accounts.remove_user(name)


@pytest.fixture
def groups() -> Iterator[list[str]]:
    made: list[str] = []
    yield made
    for name in made:
        accounts.remove_group(name)


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder other accounts can pass through (pytest's tmp_path is under a 0700 one)."""
    folder = Path(tempfile.mkdtemp(prefix="cube-accounts-", dir="/tmp"))
    os.chmod(folder, 0o711)
    umask = os.umask(0o022)  # accounts.secure_store sets 077 for the process: put it back
    os.umask(umask)
    yield folder
    os.umask(umask)
    shutil.rmtree(folder, ignore_errors=True)


def _python_for(who: accounts.RunAs) -> str:
    """A Python the account can run (this one may lie under a folder only root enters)."""
    for candidate in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        if not Path(candidate).exists():
            continue
        try:
            proc = subprocess.run(
                [candidate, "-c", "pass"], capture_output=True, cwd="/", **who.popen_kwargs()
            )
        except PermissionError:
            continue
        if proc.returncode == 0:
            return candidate
    pytest.skip("no Python on this machine that an unprivileged account can run")


def _home(base: Path, who_name: str) -> Path:
    home = base / "users" / who_name
    home.mkdir(parents=True)
    return home


def _account(
    name: str, users: list[str], base: Path, groups_: tuple[str, ...] = ()
) -> accounts.RunAs:
    users.append(name)
    home = _home(base, accounts.user_account(name))
    who = accounts.run_as(name, groups_, home)
    os.chown(home, who.uid, who.gid)
    os.chmod(home, 0o700)
    return who


@as_root
def test_account_is_made_once_with_its_own_group(users: list[str], base: Path) -> None:
    name = _test_name("Made")
    who = _account(name, users, base)
    again = accounts.run_as(name)
    assert (again.uid, again.gid, again.name) == (who.uid, who.gid, who.name)
    assert who.uid != 0 and who.gid != 0
    assert who.name == accounts.user_account(name)
    import grp

    assert grp.getgrgid(who.gid).gr_name == who.name  # a group of its own, shared with nobody


@as_root
async def test_processes_start_runs_as_the_owner(users: list[str], base: Path) -> None:
    name = _test_name("Proc")
    who = _account(name, users, base)
    python = _python_for(who)
    secret = base / "root-only.txt"
    secret.write_text("root's")
    os.chmod(secret, 0o600)
    settings = Settings(
        base / "store", "sqlite:///" + str(base / "store" / "x.db"), os_accounts=True
    )
    job = accounts.job_folder(base / "store" / "runs" / "r1", who, settings.data_dir, ("log.txt",))
    probe = (
        "import json, os, sys\n"
        "out = {'uid': os.getuid(), 'gid': os.getgid(), 'env': dict(os.environ)}\n"
        f"try:\n    open({str(secret)!r}).read(); out['secret'] = 'read'\n"
        "except PermissionError:\n    out['secret'] = 'denied'\n"
        "open('written.txt', 'w').write('mine')\n"
        f"try:\n    os.remove({str(job / 'log.txt')!r}); out['log'] = 'removed'\n"
        "except PermissionError:\n    out['log'] = 'kept'\n"
        "print(json.dumps(out))\n"
    )
    env = {**os.environ, ENV_DB_URL: settings.db_url, "CUBE_LAB_DATA_DIR": str(base)}
    with open(job / "log.txt", "ab") as log:
        proc = processes.start([python, "-c", probe], job, env, log, run_as=who)
        assert await processes.wait(proc) == 0
    out = json.loads((job / "log.txt").read_text().strip().splitlines()[-1])
    assert out["uid"] == who.uid and out["gid"] == who.gid
    assert out["secret"] == "denied"
    assert out["log"] == "kept"  # root's log in the job folder is not the job's to replace
    assert (job / "written.txt").stat().st_uid == who.uid
    assert (job / "written.txt").stat().st_mode & 0o077 == 0  # umask 077
    assert "CUBE_LAB_DB_URL" not in out["env"] and "CUBE_LAB_DATA_DIR" not in out["env"]
    assert out["env"]["HOME"] == who.home and out["env"]["USER"] == who.name
    assert ENV_NO_STORE in out["env"]
    assert settings.data_dir.stat().st_mode & 0o777 == 0o711  # passable, not listable


@as_root
def test_pipeline_run_under_os_accounts(
    users: list[str], base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _test_name("Pipe")
    who = _account(name, users, base)
    other = _account(_test_name("Other"), users, base)
    monkeypatch.setattr(sys, "executable", _python_for(who))
    home = Path(who.home)
    # the node is the user's own code, in the user's home, writing as the user
    script(
        home,
        "probe.py",
        "import json, os\n"
        "json.dump({'uid': os.getuid(), 'db': os.environ.get('CUBE_LAB_DB_URL')},"
        " open(os.environ['CUBE_VALUES_FILE'], 'w'))\n"
        "open('out.txt', 'w').write(str(os.getuid()))\n",
    )
    path = write_pipeline(home, [node("p", filename="probe.py", outputs=["out.txt"])])
    for p in home.iterdir():
        os.chown(p, who.uid, who.gid)
    settings = replace(Settings.resolve(base / "store"), os_accounts=True)
    ws = Workspace.open(settings)
    try:
        caller = Caller(name)
        runner, recorder = ws.pipelines.prepare(caller, path, home)
        assert ws.pipelines.run_foreground(runner, recorder) == "succeeded", ws.pipelines.tail_log(
            caller, runner.plan.run_id, "p"
        ).text
        assert (home / "out.txt").read_text() == str(who.uid)
        assert (home / "out.txt").stat().st_uid == who.uid
        view = ws.pipelines.get_run(caller, runner.plan.run_id)
        values = next(n for n in view.nodes or [] if n.id == "p").values
        assert values == {"uid": who.uid, "db": None}
        run_dir = runner.plan.run_dir
        assert run_dir.stat().st_gid == who.gid and run_dir.stat().st_mode & 0o007 == 0
        # the other user's account can neither list nor enter the run folder
        peek = subprocess.run(
            ["ls", str(run_dir / "nodes")], capture_output=True, cwd="/", **other.popen_kwargs()
        )
        assert peek.returncode != 0 and b"Permission denied" in peek.stderr
        for db in settings.data_dir.glob("cube-lab.db*"):
            assert db.stat().st_mode & 0o077 == 0, db  # the database is root's alone
    finally:
        ws.close()


@as_root
def test_two_users_homes_are_mutually_unreadable(users: list[str], base: Path) -> None:
    zhang = _account("张三" + uuid.uuid4().hex[:6], users, base)
    li = _account("李四" + uuid.uuid4().hex[:6], users, base)
    assert zhang.home != li.home and zhang.uid != li.uid
    for owner, reader in ((zhang, li), (li, zhang)):
        subprocess.run(
            ["sh", "-c", "echo private > note.txt"],
            cwd=owner.home,
            check=True,
            **owner.popen_kwargs(),
        )
        peek = subprocess.run(
            ["cat", str(Path(owner.home) / "note.txt")],
            capture_output=True,
            cwd="/",
            **reader.popen_kwargs(),
        )
        assert peek.returncode != 0 and b"Permission denied" in peek.stderr
        mine = subprocess.run(
            ["cat", "note.txt"], capture_output=True, cwd=owner.home, **owner.popen_kwargs()
        )
        assert mine.stdout == b"private\n"


@as_root
def test_project_group_members_share_the_group(
    users: list[str], groups: list[str], base: Path
) -> None:
    group = _test_name("Grp")
    groups.append(group)
    a = _account(_test_name("A"), users, base, (group,))
    b = _account(_test_name("B"), users, base)
    shared = base / "projects" / "g"
    shared.mkdir(parents=True)
    gid = accounts.ensure_group(group)
    os.chown(shared, 0, gid)
    os.chmod(shared, 0o2770)
    assert gid in a.groups
    wrote = subprocess.run(["sh", "-c", f"echo hi > {shared}/f.txt"], cwd="/", **a.popen_kwargs())
    assert wrote.returncode == 0
    assert (shared / "f.txt").stat().st_gid == gid  # setgid folder: the project's files
    denied = subprocess.run(["ls", str(shared)], capture_output=True, cwd="/", **b.popen_kwargs())
    assert denied.returncode != 0
    # joining the project group (as the spawner does) opens it; leaving closes it again
    import grp

    assert accounts.set_groups(users[-1], [group]) == (gid,)
    assert b.name in grp.getgrgid(gid).gr_mem
    assert accounts.run_as(users[-1], [group]).groups == (gid,)
    accounts.set_groups(users[-1], [])
    assert b.name not in grp.getgrgid(gid).gr_mem


@as_root
async def test_local_spawner_runs_each_server_as_its_account(
    users: list[str], groups: list[str], base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import grp

    import yaml
    from traitlets.config import Config

    from cube_lab.hub import spawner as hubspawner
    from cube_lab.hub.settings import DEFAULT_FILE, ENV_DATA_DIR, ENV_SETTINGS
    from tests.hub.test_names import Group, User

    raw = yaml.safe_load(DEFAULT_FILE.read_text())
    raw.update({"shape": "local", "data_dir": str(base / "hub-data")})
    settings_file = base / "cube_hub.yaml"
    settings_file.write_text(yaml.safe_dump(raw, sort_keys=False))
    monkeypatch.setenv(ENV_SETTINGS, str(settings_file))
    monkeypatch.setenv(ENV_DATA_DIR, raw["data_dir"])
    monkeypatch.setenv(accounts.ENV_OS_ACCOUNTS, "1")
    store = base / "hub-data" / "cube-lab"
    store.mkdir(parents=True)
    (store / "cube-lab.db").write_text("the database")
    os.chmod(store / "cube-lab.db", 0o644)

    project = _test_name("Course")
    groups.append(project)
    name = _test_name("Srv")
    users.append(name)
    sp = hubspawner.CubeLocalSpawner(
        config=Config(), user=User(name, [Group(project, {"cube_lab": {"profiles": ["cpu"]}})])
    )
    probe = accounts.RunAs(65534, 65534, (), "/", "nobody")
    python = _python_for(probe)
    sp.cmd = [python]
    sp.user_options = {"profile": "cpu"}
    await sp.run_pre_spawn_hook()
    try:
        who = sp.run_as
        assert who is not None and who.name == accounts.user_account(name)
        home = Path(sp.home_dir)
        assert home.stat().st_uid == who.uid and home.stat().st_mode & 0o777 == 0o700
        shared = base / "hub-data" / "projects" / hubspawner.safe_dirname(project)
        gid = grp.getgrnam(accounts.group_account(project)).gr_gid
        assert (shared.stat().st_uid, shared.stat().st_gid) == (0, gid)
        assert shared.stat().st_mode & 0o7777 == 0o2770
        assert who.name in grp.getgrgid(gid).gr_mem
        assert (store / "cube-lab.db").stat().st_mode & 0o777 == 0o600
        assert "--allow-root" not in sp.get_args()
        env = sp.user_env({})
        assert env["USER"] == who.name and env["HOME"] == str(home)
        # the server's process: the account, its project group, links made by itself
        out = subprocess.run(
            [python, "-c", "import os; print(os.getuid(), os.getgroups(), os.listdir('projects'))"],
            preexec_fn=sp.make_preexec_fn(name),
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin"},
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.split()[0] == str(who.uid)
        assert str(gid) in out.stdout and hubspawner.safe_dirname(project) in out.stdout
        link = home / "projects" / hubspawner.safe_dirname(project)
        assert link.is_symlink() and link.lstat().st_uid == who.uid
    finally:
        await sp.run_post_stop_hook()


@as_root
async def test_local_spawner_says_when_the_account_cannot_run_python(
    users: list[str], base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml
    from traitlets.config import Config

    from cube_lab.hub import spawner as hubspawner
    from cube_lab.hub.settings import DEFAULT_FILE, ENV_DATA_DIR, ENV_SETTINGS
    from tests.hub.test_names import User

    raw = yaml.safe_load(DEFAULT_FILE.read_text())
    raw.update({"shape": "local", "data_dir": str(base / "hub-data")})
    settings_file = base / "cube_hub.yaml"
    settings_file.write_text(yaml.safe_dump(raw, sort_keys=False))
    monkeypatch.setenv(ENV_SETTINGS, str(settings_file))
    monkeypatch.setenv(ENV_DATA_DIR, raw["data_dir"])
    monkeypatch.setenv(accounts.ENV_OS_ACCOUNTS, "1")
    hidden = base / "hidden"
    hidden.mkdir(mode=0o700)
    program = hidden / "python"
    program.write_text("#!/bin/sh\n")
    os.chmod(program, 0o755)
    name = _test_name("NoPy")
    users.append(name)
    sp = hubspawner.CubeLocalSpawner(config=Config(), user=User(name))
    sp.cmd = [str(program)]
    sp.user_options = {"profile": "cpu"}
    with pytest.raises(Exception, match="cannot run") as caught:
        await sp.run_pre_spawn_hook()
    assert "CUBE_LAB_OS_ACCOUNTS=0" in caught.value.jupyterhub_message  # type: ignore[attr-defined]
    await sp.run_post_stop_hook()


def _owner_workspace(base: Path) -> Workspace:
    return Workspace.open(replace(Settings.resolve(base / "store"), os_accounts=True))


def _own_home(who: accounts.RunAs) -> None:
    for path in Path(who.home).rglob("*"):
        os.chown(path, who.uid, who.gid, follow_symlinks=False)


@as_root
def test_training_job_runs_as_its_owner(
    users: list[str], base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _test_name("Train")
    who = _account(name, users, base)
    monkeypatch.setattr(sys, "executable", _python_for(who))
    home = Path(who.home)
    (home / "train.py").write_text(
        "import json, os\n"
        "out = os.environ['CUBE_OUTPUT_DIR']\n"
        "open(os.path.join(out, 'uid.txt'), 'w').write(str(os.getuid()))\n"
        "with open(os.environ['CUBE_METRICS_FILE'], 'a') as f:\n"
        "    f.write(json.dumps({'step': 1, 'metrics': {'loss': 0.5}}) + '\\n')\n"
        "print('db', os.environ.get('CUBE_LAB_DB_URL'), 'home', os.environ['HOME'])\n"
    )
    _own_home(who)
    ws = _owner_workspace(base)
    try:
        caller = Caller(name)
        job = ws.training.prepare(caller, {"framework": "plain", "script": "train.py"}, cwd=home)
        assert ws.training.run_foreground(job) == "succeeded", ws.training.tail_log(
            caller, job.plan.job_id
        ).text
        view = ws.training.get(caller, job.plan.job_id)
        uid_file = Path(view.output_dir) / "uid.txt"
        assert uid_file.read_text() == str(who.uid) and uid_file.stat().st_uid == who.uid
        log = ws.training.tail_log(caller, job.plan.job_id).text
        assert f"db None home {who.home}" in log
        assert ws.training.metrics(caller, job.plan.job_id).series["loss"][-1][1] == 0.5
        job_dir = job.plan.job_dir
        assert (job_dir.stat().st_uid, job_dir.stat().st_gid) == (0, who.gid)
        assert job_dir.stat().st_mode & 0o7777 == accounts.JOB_MODE
    finally:
        ws.close()


@as_root
def test_tuning_trials_run_as_their_owner(users: list[str], base: Path) -> None:
    name = _test_name("Tune")
    who = _account(name, users, base)
    home = Path(who.home)
    (home / "trial.sh").write_text(
        'mkdir -p "$NNI_OUTPUT_DIR" && id -u > "$NNI_OUTPUT_DIR/uid"\n'
        'echo "db=${CUBE_LAB_DB_URL:-none}"\n'
        'echo "NNISDK_MEb\'{\\"type\\": \\"FINAL\\", \\"value\\": \\"$(id -u)\\"}\'"\n'
    )
    _own_home(who)
    ws = _owner_workspace(base)
    try:
        caller = Caller(name)
        cfg = {
            "searchSpace": {"x": {"_type": "uniform", "_value": [0, 1]}},
            "trialCommand": "sh trial.sh",
            "trialCodeDirectory": ".",
            "trialConcurrency": 1,
            "maxTrialNumber": 2,
            "tuner": {"name": "Random", "classArgs": {"seed": 1}},
        }
        engine = ws.tuning.prepare(caller, ws.tuning.parse(cfg, home))
        assert ws.tuning.run_foreground(engine) == "done"
        view = ws.tuning.get(caller, engine.experiment_id)
        assert [t.final for t in view.trials] == [float(who.uid)] * 2
        for trial_dir in (engine.folder / "trials").iterdir():
            assert (trial_dir / "output" / "uid").read_text().strip() == str(who.uid)
            assert "db=none" in (trial_dir / "log.txt").read_text()
            assert trial_dir.stat().st_mode & 0o007 == 0  # nobody else enters
    finally:
        ws.close()


def _cube_python(who: accounts.RunAs) -> tuple[str, str]:
    """A Python the account can run with cube-lab importable (PYTHONPATH), or skip."""
    import site

    paths = os.pathsep.join([*site.getsitepackages(), str(Path(__file__).resolve().parents[2])])
    for candidate in (
        sys.executable,
        f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}",
    ):
        try:
            proc = subprocess.run(
                [candidate, "-c", "import cube_lab.registry"],
                capture_output=True,
                cwd="/",
                env={"PYTHONPATH": paths, "PATH": "/usr/bin:/bin"},
                **who.popen_kwargs(),
            )
        except (PermissionError, FileNotFoundError):
            continue
        if proc.returncode == 0:
            return candidate, paths
    pytest.skip("no Python with cube-lab that an unprivileged account can run")


@as_root
def test_register_inside_a_node_run_as_its_owner_says_why(
    users: list[str], base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _test_name("Reg")
    who = _account(name, users, base)
    python, paths = _cube_python(who)
    monkeypatch.setattr(sys, "executable", python)
    home = Path(who.home)
    script(
        home,
        "reg.py",
        "from cube_lab import registry\n"
        "open('model.txt', 'w').write('weights')\n"
        "registry.register('model.txt', 'm')\n",
    )
    path = write_pipeline(
        home,
        [node("r", filename="reg.py", env_vars=[{"env_var": "PYTHONPATH", "value": paths}])],
    )
    _own_home(who)
    ws = _owner_workspace(base)
    try:
        caller = Caller(name)
        runner, recorder = ws.pipelines.prepare(caller, path, home)
        assert ws.pipelines.run_foreground(runner, recorder) == "failed"
        log = ws.pipelines.tail_log(caller, runner.plan.run_id, "r").text
        assert "no cube-lab store in this job" in log, log
        assert not (home / ".local").exists()  # no empty store of its own under its HOME
    finally:
        ws.close()
