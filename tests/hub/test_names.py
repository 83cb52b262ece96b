"""Safe, distinct names: one escaping of user and group names (cube_lab.names) into homes,
project folders, OS accounts, Kubernetes names and personal projects, and its users: the
local spawner's homes, the projects service's personal projects and KubeSpawner's pods."""

from __future__ import annotations

import asyncio
import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import escapism
import kubespawner.spawner
import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from kubespawner.slugs import is_valid_label, is_valid_object_name
from property import examples
from sqlalchemy import select
from traitlets.config import Config

from cube_lab import names
from cube_lab.hub import spawner as hubspawner
from cube_lab.hub.settings import DEFAULT_FILE, ENV_DATA_DIR, ENV_SETTINGS, load
from cube_lab.identity import NAME_RE, Caller
from cube_lab.projects import ProjectService
from cube_lab.store.models import Project, ProjectMember

LONG = "很长的名字" * 60  # 300 characters, 900 bytes of UTF-8
AWKWARD = [
    "alice", "bob", "student1", "jean-luc", "ml-course", "2024-cv",
    "张三", "李四", "张三 ", " 张三", "Alice", "ALICE", "aLice",
    "a.b", "a-b", "a_b", "a b", "a@b", "a+b", "a--b", "a---b", "-a", "a-", ".alice", "__",
    "x--a-2eb", "x---41lice", "x", "x-", "x--", "user", "user-2",
    "🙂", "🙂🙂", "e\u0301", "\u00e9",  # é decomposed and precomposed are different names
    "a" * 300, "a" * 299, "a" * 300 + "b", LONG, LONG[:-1], LONG + "!",
    "x" * 300, "x--" + "x" * 297,
]  # fmt: skip
FOLDER = re.compile(r"^[a-z0-9][a-z0-9-]*$")
ACCOUNT = re.compile(r"^[a-z][a-z0-9-]*$")  # useradd's NAME_REGEX, and more strict


def places(name: str) -> dict[str, str]:
    return {
        "folder": names.folder_name(name),
        "account": names.account_name(name),
        "project": names.project_name(name),
        "label": names.label_value(name),
        "object": names.object_name(name, ""),
        "claim": names.object_name(name, "cube-project-"),
    }


def assert_valid(name: str) -> None:
    p = places(name)
    assert FOLDER.match(p["folder"]) and len(p["folder"].encode()) <= 255, p
    assert ACCOUNT.match(p["account"]) and len(p["account"]) <= 32, p
    assert NAME_RE.match(p["project"]) and len(p["project"]) <= 100, p
    assert is_valid_label(p["label"]), p
    assert is_valid_object_name(p["object"]) and is_valid_object_name(p["claim"]), p


# -- the escaping -------------------------------------------------------------------------


def test_plain_names_stay_readable_and_look_as_they_did() -> None:
    for name in ("alice", "bob", "student1", "jean-luc", "ml-course", "cv-2025"):
        assert set(places(name).values()) - {f"cube-project-{name}"} == {name}
        # the same folder as before this naming: homes and project folders do not move
        assert names.legacy_folder_name(name) == names.folder_name(name)
    assert names.folder_name("2024-cv") == "2024-cv"
    assert names.account_name("2024-cv") == "x--2024-2dcv"  # an account needs a letter first


def test_other_names_are_escaped_as_kubespawner_escapes_them() -> None:
    assert names.folder_name("张三") == "x---e5-bc-a0-e4-b8-89"
    assert names.folder_name("李四") == "x---e6-9d-8e-e5-9b-9b"
    assert names.folder_name("Alice") == "x---41lice"
    assert names.folder_name("a.b") == "x--a-2eb"
    assert names.folder_name("🙂") == "x---f0-9f-99-82"
    safe = set(string.ascii_lowercase + string.digits)
    for name in AWKWARD:
        assert names.escape(name) == escapism.escape(name, safe=safe, escape_char="-").lower()


def test_awkward_names_are_all_distinct_valid_and_reversible() -> None:
    assert len(set(AWKWARD)) == len(AWKWARD)
    for place in places("x"):
        made = {places(name)[place] for name in AWKWARD}
        assert len(made) == len(AWKWARD), place
    for name in AWKWARD:
        assert_valid(name)
        slug = names.folder_name(name)
        if names.is_hashed(slug):
            with pytest.raises(ValueError, match="shortened"):
                names.unslug(slug)
        else:
            assert names.unslug(slug) == name


def test_long_names_are_shortened_with_a_hash_of_the_whole_name() -> None:
    folder = names.folder_name(LONG)
    assert len(folder) == 255 and names.is_hashed(folder)
    assert folder.startswith("x---e5-be-88")  # still starts like the name
    account = names.account_name(LONG)
    assert len(account) <= 32 and re.fullmatch(r"x---e5-be-88[-0-9a-f]*---[0-9a-f]{10}", account)
    # names that differ only after the readable part still differ
    assert names.account_name(LONG) != names.account_name(LONG[:-1] + "子")
    assert names.account_name("a" * 40) != names.account_name("a" * 41)
    # a name that fits is never hashed, one that does not always is
    assert not names.is_hashed(names.account_name("a" * 32))
    assert names.is_hashed(names.account_name("a" * 33))


def test_what_is_not_a_name_is_refused() -> None:
    for bad in ("", None, 3):
        with pytest.raises(ValueError):
            names.slug(bad)  # type: ignore[arg-type]
    for text in ("Alice", "a--b", "x--A", "x---zz", "x--a-2"):
        with pytest.raises(ValueError):
            names.unslug(text)


# any text, plus text built near the edges: plain words, dashes, the escape's own marks
EDGY = st.lists(
    st.sampled_from(["a", "z", "0", "9", "-", "--", "x--", "---", ".", "_", "A", "张", "🙂", " "]),
    min_size=1,
    max_size=12,
).map("".join)
NAMES = st.one_of(st.text(min_size=1, max_size=40), EDGY, st.text(min_size=1, max_size=400))


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(NAMES, min_size=2, max_size=8, unique=True))
def test_escaping_is_injective_in_every_place(batch: list[str]) -> None:
    for place in places("x"):
        assert len({places(name)[place] for name in batch}) == len(batch), (place, batch)


@settings(max_examples=examples(400), deadline=None)
@given(NAMES)
@example("0\n")  # a plain name plus a newline once passed for plain ($ matches before \n)
@example("alice\n")
def test_escaping_is_valid_everywhere_and_reversible_where_promised(name: str) -> None:
    assert_valid(name)
    assert names.unescape(names.escape(name)) == name
    made = places(name)
    made["claim"] = made["claim"][len("cube-project-") :]
    for slug in made.values():
        if not names.is_hashed(slug):
            assert names.unslug(slug) == name
    # the escaped form is hashed exactly when it does not fit
    full = names.slug(name, 10_000)
    assert not names.is_hashed(full) and names.unslug(full) == name


# -- homes: the local spawner --------------------------------------------------------------


@dataclass
class Group:
    name: str
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class User:
    name: str
    groups: list[Group] = field(default_factory=list)
    id: int = 7
    url: str = "/user/x/"

    @property
    def escaped_name(self) -> str:
        return self.name


def shipped_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str) -> Path:
    raw = yaml.safe_load(DEFAULT_FILE.read_text())
    raw.update({"shape": shape, "data_dir": str(tmp_path / "hub-data")})
    path = tmp_path / "cube_hub.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    monkeypatch.setenv(ENV_SETTINGS, str(path))
    monkeypatch.setenv(ENV_DATA_DIR, raw["data_dir"])
    return path


async def spawn_prepared(sp: Any) -> None:
    sp.user_options = {"profile": "cpu"}
    await sp.run_pre_spawn_hook()  # admission, the home, the project links
    await sp.run_post_stop_hook()


def local_spawner(user: User) -> hubspawner.CubeLocalSpawner:
    return hubspawner.CubeLocalSpawner(config=Config(), user=user)


def test_two_chinese_users_get_distinct_homes_and_cannot_share_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings_file = shipped_settings(tmp_path, monkeypatch, "local")
    users = load(settings_file).users_dir
    group = Group("ML_Course", {"cube_lab": {"profiles": ["cpu"]}})
    zhang, li = local_spawner(User("张三", [group])), local_spawner(User("李四", [group]))
    asyncio.run(spawn_prepared(zhang))
    asyncio.run(spawn_prepared(li))
    assert zhang.home_dir == str(users / "x---e5-bc-a0-e4-b8-89")
    assert li.home_dir == str(users / "x---e6-9d-8e-e5-9b-9b")
    assert zhang.notebook_dir == zhang.home_dir and li.notebook_dir == li.home_dir
    (Path(zhang.home_dir) / "私人.txt").write_text("张三's")
    assert not (Path(li.home_dir) / "私人.txt").exists()
    assert not (users / "__").exists()
    assert (users / ".owners" / "x---e5-bc-a0-e4-b8-89").read_text() == "张三"
    # the shared group folder: one for the group, linked into both homes
    link = "x---4d-4c-5f-43ourse"
    assert (Path(zhang.home_dir) / "projects" / link).resolve() == (
        Path(li.home_dir) / "projects" / link
    ).resolve()


def test_an_old_home_named_after_its_user_moves_over_and_a_shared_one_stays(
    tmp_path: Path,
) -> None:
    users = tmp_path / "users"
    (users / "Alice").mkdir(parents=True)
    (users / "Alice" / "work.ipynb").write_text("{}")
    (users / "__").mkdir()  # what 张三 and 李四 shared
    (users / "__" / "张三的.txt").write_text("?")
    (users / "alice").mkdir()
    (users / "alice" / "keep.txt").write_text("alice")

    assert hubspawner.settle_home(users, "Alice") == users / "x---41lice"
    assert (users / "x---41lice" / "work.ipynb").read_text() == "{}"
    assert not (users / "Alice").exists()
    assert (hubspawner.settle_home(users, "alice") / "keep.txt").read_text() == "alice"
    zhang = hubspawner.settle_home(users, "张三")
    assert list(zhang.iterdir()) == [] and (users / "__" / "张三的.txt").exists()
    assert hubspawner.settle_home(users, "Alice") == users / "x---41lice"  # settled


def test_a_home_that_is_someone_elses_is_never_handed_out(tmp_path: Path) -> None:
    users = tmp_path / "users"
    # before the new naming, a user was literally named like 张三's new home
    (users / "x---e5-bc-a0-e4-b8-89").mkdir(parents=True)
    with pytest.raises(hubspawner.CubeError, match="another account's files"):
        hubspawner.settle_home(users, "张三")
    # that user moves out to their own escaped home; 张三 still does not get theirs
    moved = hubspawner.settle_home(users, "x---e5-bc-a0-e4-b8-89")
    assert moved.name == "x--x-2d-2d-2de5-2dbc-2da0-2de4-2db8-2d89"
    assert hubspawner.settle_home(users, "张三").name == "x---e5-bc-a0-e4-b8-89"
    assert list((users / "x---e5-bc-a0-e4-b8-89").iterdir()) == []
    # a home recorded for another user (a hash collision, or tampering) is refused
    (users / ".owners" / "bob").write_text("someone")
    with pytest.raises(hubspawner.CubeError, match="recorded for another user"):
        hubspawner.settle_home(users, "bob")


def test_an_old_project_folder_named_after_its_group_moves_over(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    (projects / "ML_Course").mkdir(parents=True)
    (projects / "ML_Course" / "data.csv").write_text("x")
    folder = hubspawner.settle_project_folder(projects, "ML_Course")
    assert folder.name == "x---4d-4c-5f-43ourse"
    assert (folder / "data.csv").read_text() == "x"
    assert hubspawner.settle_project_folder(projects, "vision") == projects / "vision"


# -- personal projects ---------------------------------------------------------------------


def personal(ws: Any, username: str) -> str:
    with ws.store.read() as s:
        return s.scalar(
            select(Project.name).where(Project.kind == "personal", Project.created_by == username)
        )


def test_two_chinese_users_get_distinct_personal_projects(ws: Any) -> None:
    zhang, li = Caller("张三"), Caller("李四")
    assert [p.name for p in ws.projects.list(zhang)] == ["x---e5-bc-a0-e4-b8-89"]
    assert [p.name for p in ws.projects.list(li)] == ["x---e6-9d-8e-e5-9b-9b"]
    # the names are reserved for them as any user's is
    with pytest.raises(hubspawner.CubeError, match="not available"):
        ws.projects.create(li, "x---e5-bc-a0-e4-b8-89")
    assert ws.projects.list(Caller("Alice"))[0].name == "x---41lice"
    assert ws.projects.list(Caller("alice"))[0].name == "alice"


def test_personal_projects_from_the_old_naming_are_renamed_on_arrival(ws: Any) -> None:
    """Before, 张三 got "user" and 李四 "user-2"; "Alice" kept "Alice"."""
    with ws.store.write() as s:
        for name, user in (("user", "张三"), ("user-2", "李四"), ("Alice", "Alice")):
            p = Project(name=name, kind="personal", description="", created_by=user)
            p.members.append(ProjectMember(username=user, role="owner"))
            s.add(p)
    for user in ("张三", "李四", "Alice"):
        ws.projects.list(Caller(user))
    assert [personal(ws, u) for u in ("张三", "李四", "Alice")] == [
        "x---e5-bc-a0-e4-b8-89", "x---e6-9d-8e-e5-9b-9b", "x---41lice"
    ]  # fmt: skip
    fresh = ProjectService(ws.store)
    assert [p.name for p in fresh.list(Caller("张三"))] == ["x---e5-bc-a0-e4-b8-89"]
    # and the old name is free for the user it now belongs to
    assert ws.projects.list(Caller("user"))[0].name == "user"


# -- pods: KubeSpawner ---------------------------------------------------------------------


@pytest.fixture
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubespawner.spawner, "load_config", lambda **kwargs: None)
    monkeypatch.setattr(kubespawner.spawner, "shared_client", lambda *args, **kwargs: None)


def test_chinese_users_get_distinct_pods_volumes_and_labels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_cluster: None
) -> None:
    from kubernetes_asyncio import client as k8s

    from cube_lab.hub import kubernetes as hubk8s
    from cube_lab.hub.config import configure

    settings_file = shipped_settings(tmp_path, monkeypatch, "kubernetes")
    group = Group("ML_Course", {"cube_lab": {"profiles": ["cpu"]}})

    async def render(name: str, uid: int) -> dict[str, Any]:
        c = Config()
        configure(c, load(settings_file))
        sp = hubk8s.CubeKubeSpawner(config=c, user=User(name, [group], id=uid), _mock=True)
        sp.user_options = {"profile": "cpu"}
        await sp.run_pre_spawn_hook()
        await sp.load_user_options()
        pod = await sp.get_pod_manifest()
        await sp.run_post_stop_hook()
        return k8s.ApiClient().sanitize_for_serialization(pod)

    pods = [asyncio.run(render(n, i)) for i, n in enumerate(("张三", "李四", "Alice", "alice"))]
    pod_names = [p["metadata"]["name"] for p in pods]
    assert len(set(pod_names)) == 4 and all(is_valid_object_name(n) for n in pod_names)
    claims = [
        next(
            v["persistentVolumeClaim"]["claimName"]
            for v in p["spec"]["volumes"]
            if v["name"] == "user-volume"
        )
        for p in pods
    ]
    assert len(set(claims)) == 4
    user_labels = [p["metadata"]["labels"]["hub.jupyter.org/username"] for p in pods]
    assert len(set(user_labels)) == 4
    homes = [p["spec"]["containers"][0]["workingDir"] for p in pods]
    assert len(set(homes)) == 4
    # the project group's volume: one claim for the group, mounted where the local shape
    # puts it, and the group's claim name escaped the same way
    mounts = {m["mountPath"]: m["name"] for m in pods[0]["spec"]["containers"][0]["volumeMounts"]}
    assert mounts["/mnt/projects/x---4d-4c-5f-43ourse"] == ("cube-project-x---4d-4c-5f-43ourse")
    assert hubk8s.project_namespace("ML_Course") != hubk8s.project_namespace("ml-course")
