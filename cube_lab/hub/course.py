"""Courses on the hub (issue 24): a course is a project group (its quota and profiles as any
group's) marked with ``COURSE_PROPERTY``, whose roster (``roster.ROSTER_PROPERTY``) gives each
member a role: teacher, assistant or student (a member the roster does not name is a student).

Plain Python: the cube-admin service's handlers (``course_api``) are thin over it. It runs on
the hub's side, never in a user's server: it reads a teacher's starter folder and writes into
each student's space (hand-out), and reads each student's assignment folder and writes the
snapshot into the teacher's space (collection), through ``course_files`` (no link followed).

Where things are, for a course ``C`` and a hand-out ``H`` (folders relative to each home):

- a student's copy: ``course/C/H/`` (``mode: copy``: theirs to edit; a second hand-out copies
  only the files they do not have, so their edits are never overwritten; ``mode: readonly``:
  read-only files the service owns, brought up to date by each hand-out);
- the submissions: ``course/C/H/submissions/<student>/`` in the space of the teacher who
  handed it out, with ``submissions/manifest.json`` (who, what: files, sizes, SHA-256 hashes,
  mtimes; when; late or not);
- the service's own record (hand-outs, deadlines, manifests): ``<hub_dir>/courses/C.json``.

A hand-out's deadline is kept by the service: at the deadline (the cube-admin service checks
every ``--collect-interval`` seconds, and on each read of the course) the folders of the
students who have not submitted are collected; a submission after the deadline is marked late.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import Conflict, CubeError, InvalidInput, NotFound
from ..locale.messages import _t
from ..names import folder_name
from . import course_files as files
from .course_refs import parse_refs
from .material_client import Material
from .roster import ROLES, roster_of
from .spawner import settle_home

log = logging.getLogger("cube-admin")
COURSE_PROPERTY = "cube_lab_course"
STAFF = ("teacher", "assistant")
MODES = ("copy", "readonly")
HANDOUT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
# a folder collected this long after the deadline (the timer's interval and then some) is still
# the deadline's snapshot; later ones (an admin's collection days after) are marked late
COLLECT_GRACE_S = 300.0
KEEP: Any = object()  # hand_out(deadline=KEEP): a second hand-out keeps the deadline it had
RUNS_FOLDER = "cube-lab-runs"  # in a snapshot: the records and log tails of its runs
RUN_FIELDS = ("kind", "id", "name", "status")  # of each run, in a submission's entry


def is_course(group: dict[str, Any]) -> bool:
    return COURSE_PROPERTY in (group.get("properties") or {})


def role_of(group: dict[str, Any], user: str) -> str | None:
    """The member's role in the course, None for someone not in it."""
    if user not in (group.get("users") or ()):
        return None
    role = (roster_of(group).get(user) or {}).get("role") or "student"
    return role if role in ROLES else "student"


def members(group: dict[str, Any]) -> list[dict[str, str]]:
    """The course's members with their display names and roles: teachers first."""
    roster = roster_of(group)
    out = []
    for name in group.get("users") or ():
        entry = roster.get(name) or {}
        out.append(
            {
                "name": name,
                "display_name": entry.get("display_name") or "",
                "email": entry.get("email") or "",
                "role": role_of(group, name) or "student",
            }
        )
    order = {r: i for i, r in enumerate(ROLES)}
    return sorted(out, key=lambda m: (order[m["role"]], m["name"]))


def students(group: dict[str, Any]) -> list[str]:
    return [m["name"] for m in members(group) if m["role"] == "student"]


def check_handout_name(value: Any) -> str:
    if not isinstance(value, str) or not HANDOUT_RE.match(value):
        raise InvalidInput(
            _t("invalid hand-out name {value!r}", value=value),
            _t("Use letters, digits, '.', '_' and '-' (at most 64), e.g. lab1."),
        )
    return value


def parse_deadline(value: Any) -> float | None:
    """Seconds since the epoch from a number or an ISO 8601 time with its zone; None: none."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise InvalidInput(_t("deadline must be a time"))
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            when = None
        if when is not None and when.tzinfo is not None:
            return when.timestamp()
    raise InvalidInput(
        _t("deadline {value!r} is not a time with its zone", value=value),
        _t("Give ISO 8601 with the zone, e.g. 2026-12-20T23:59:00+08:00."),
    )


class CourseBook:
    """The service's record of each course's hand-outs and submissions: one JSON file each,
    replaced atomically; one lock per course in this process (the service is one process)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._locks: dict[str, threading.RLock] = {}
        self._guard = threading.Lock()

    def lock(self, course: str) -> threading.RLock:
        with self._guard:
            return self._locks.setdefault(course, threading.RLock())

    def path(self, course: str) -> Path:
        return self.root / f"{folder_name(course)}.json"

    def load(self, course: str) -> dict[str, Any]:
        try:
            return json.loads(self.path(course).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"handouts": {}}

    def save(self, course: str, record: dict[str, Any]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        temp = self.path(course).with_suffix(".tmp")
        temp.write_text(json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8")
        temp.replace(self.path(course))


@dataclass
class Courses:
    """Hand-outs and collections of the courses; ``clock`` is a test's to replace.
    ``material``: the store's side (models, datasets, runs); None where no store is run."""

    users_dir: Path
    book: CourseBook
    clock: Callable[[], float] = time.time
    material: Material | None = None

    # -- where --------------------------------------------------------------------------

    def home(self, user: str) -> Path:
        return settle_home(self.users_dir, user)

    @staticmethod
    def folder(course: str, handout: str) -> list[str]:
        return ["course", folder_name(course), handout]

    # -- hand-outs ----------------------------------------------------------------------

    def handouts(self, course: str) -> list[dict[str, Any]]:
        record = self.book.load(course)
        return [summary(h) for _, h in sorted(record["handouts"].items())]

    def mine(self, course: str, student: str) -> list[dict[str, Any]]:
        """What one student sees of the course's hand-outs: each one's folder in their space,
        deadline and their own last submission (None before the first), nobody else's."""
        record = self.book.load(course)
        out = []
        for _, h in sorted(record["handouts"].items()):
            entry = (h.get("submissions") or {}).get(student)
            out.append(
                {
                    "name": h["name"],
                    "mode": h["mode"],
                    "deadline": h.get("deadline"),
                    "folder": "/".join(self.folder(course, h["name"])) if h["source"] else None,
                    "models": h.get("models") or [],
                    "datasets": h.get("datasets") or [],
                    "handed_out": student in (h.get("students") or {}),
                    "submission": None
                    if entry is None
                    else {
                        "at": entry["at"],
                        "late": entry["late"],
                        "how": entry["how"],
                        "files": len(entry.get("files") or ()),
                        "models": len(entry.get("models") or ()),
                        "runs": len(entry.get("runs") or ()),
                    },
                }
            )
        return out

    def get(self, course: str, name: str) -> dict[str, Any]:
        found = self.book.load(course)["handouts"].get(name)
        if found is None:
            raise NotFound(
                _t("hand-out {name!r} not found in course {course}", name=name, course=course),
                _t("See GET api/courses/{course}/handouts.", course=course),
            )
        return found

    def hand_out(
        self,
        group: dict[str, Any],
        *,
        name: str,
        source: str | None = None,
        mode: str | None = None,
        deadline: float | None = KEEP,
        owner: str,
        models: Any = None,
        datasets: Any = None,
    ) -> dict[str, Any]:
        """Copy (or share read-only) ``owner``'s folder ``source`` into every student's space,
        and put ``owner``'s ``models`` and ``datasets`` (``course_refs``) into the course's
        project as read-only course material. Again with the same name: students who lack the
        folder (e.g. added since) get it; those who have it get only the files they are
        missing (read-only: the teacher's changes); the folder and the material it had are
        kept unless given anew. ``mode`` defaults to copy (an assignment) with a folder."""
        course = group["name"]
        name = check_handout_name(name)
        if role_of(group, owner) not in STAFF:
            raise InvalidInput(
                _t("{user} is not a teacher or assistant of {course}", user=owner, course=course),
                _t("Give the teacher whose folder it is (the roster's role column)."),
            )
        refs = {"models": parse_refs(models, _t("models")),
                "datasets": parse_refs(datasets, _t("datasets"))}  # fmt: skip
        if (refs["models"] or refs["datasets"]) and self.material is None:
            raise InvalidInput(
                _t("models and datasets are handed out by the cube-lab service, not run here"),
                _t("Put their files in the hand-out's folder instead."),
            )
        with self.book.lock(course):
            record = self.book.load(course)
            existing = record["handouts"].get(name)
            if not source and existing:
                source = existing["source"]
            mode = mode or (existing["mode"] if existing else "copy" if source else "readonly")
            self._check_mode(name, mode, source, existing)
            if not source and not existing and not (refs["models"] or refs["datasets"]):
                raise InvalidInput(
                    _t("give a folder, models or datasets to hand out"),
                    _t('e.g. {{"name": "lab1", "source": "lab1-starter"}}'),
                )
            parts = files.check_relative(source, _t("source")) if source else None
            tree = self._read_source(owner, parts) if parts else files.Tree()
            material = {"models": [], "datasets": []}
            if refs["models"] or refs["datasets"]:
                assert self.material is not None
                material = self.material.hand_out(
                    teacher=owner, course=course, handout=name,
                    models=[r.given for r in refs["models"]],
                    datasets=[r.given for r in refs["datasets"]],
                )  # fmt: skip
            now = self.clock()
            handout = existing or {
                "name": name,
                "created": now,
                "students": {},
                "submissions": {},
                "collected": None,
            }
            if deadline is KEEP:
                deadline = handout.get("deadline")
            elif existing and existing.get("deadline") != deadline:
                handout["collected"] = None  # a new deadline is collected again
            handout.update(
                {
                    "source": "/".join(parts) if parts else None,
                    "mode": mode,
                    "owner": owner,
                    "deadline": deadline,
                    "updated": now,
                }
            )
            for kind, rows in material.items():
                kept = [m for m in handout.get(kind) or () if m["ref"] not in
                        {r["ref"] for r in rows}]  # fmt: skip
                handout[kind] = kept + [{"ref": r["ref"], **r["to"]} for r in rows]
            report = []
            for student in students(group) if source else ():
                report.append(self._copy_to(student, course, name, tree, mode))
                if report[-1]["status"] != "error":
                    handout["students"][student] = {
                        "at": now,
                        **{k: len(report[-1][k]) for k in ("copied", "updated", "kept")},
                    }
            record["handouts"][name] = handout
            self.book.save(course, record)
        return {
            "handout": summary(handout),
            "files": [f.path for f in tree.files],
            "skipped": tree.skipped,
            "students": report,
            **material,
        }

    @staticmethod
    def _check_mode(
        name: str, mode: str, source: str | None, existing: dict[str, Any] | None
    ) -> None:
        if mode not in MODES:
            raise InvalidInput(
                _t("mode must be 'copy' or 'readonly'"),
                _t("copy: each student edits their own copy; readonly: shared to read."),
            )
        if existing and existing["mode"] != mode:
            raise Conflict(
                _t(
                    "hand-out {name} is already handed out as {mode}",
                    name=name,
                    mode=existing["mode"],
                ),
                _t("Keep its mode, or hand it out under another name."),
            )
        if mode == "copy" and not source:
            raise InvalidInput(
                _t("an assignment (mode copy) needs a folder for the students to work in"),
                _t("Give its source folder, or hand the models and datasets out as readonly."),
            )

    def _read_source(self, owner: str, parts: list[str]) -> files.Tree:
        source = "/".join(parts)
        try:
            fd = files.open_dir(self.home(owner), parts)
        except FileNotFoundError:
            raise InvalidInput(
                _t("{source} is not a folder in {user}'s space", source=source, user=owner),
                _t("Give a folder relative to the home folder, e.g. lab1-starter."),
            ) from None
        with files.opened(fd):
            tree = files.read_tree(fd)
        if not tree.files:
            raise InvalidInput(
                _t("{source} holds no files to hand out", source=source),
                _t("Put the notebooks and files in it first."),
            )
        return tree

    def _copy_to(
        self, student: str, course: str, name: str, tree: files.Tree, mode: str
    ) -> dict[str, Any]:
        out: dict[str, Any] = {"student": student, "copied": [], "updated": [], "kept": []}
        try:
            done = files.write_tree(
                self.home(student),
                self.folder(course, name),
                tree.files,
                overwrite=mode == "readonly",
                read_only=mode == "readonly",
            )
        except (CubeError, OSError) as exc:
            out.update(
                status="error",
                error=getattr(exc, "error", None) or str(exc),
                detail=getattr(exc, "detail", None),
            )
            return out
        out.update(copied=done.copied, updated=done.updated, kept=done.kept)
        out["status"] = "copied" if done.copied or done.updated else "up to date"
        return out

    # -- submissions --------------------------------------------------------------------

    def submit(
        self, group: dict[str, Any], name: str, student: str, *, how: str = "submit"
    ) -> dict[str, Any]:
        """Snapshot ``student``'s ``course/C/H/`` into the teacher's space, now; after the
        deadline a submission is marked late. A later snapshot replaces an earlier one."""
        course = group["name"]
        with self.book.lock(course):
            record = self.book.load(course)
            handout = self.get(course, name)
            if handout["mode"] != "copy":
                raise InvalidInput(
                    _t(
                        "hand-out {name} is shared read-only: there is nothing to submit", name=name
                    ),
                    _t("Hand out assignments with mode copy."),
                )
            entry = self._snapshot(group, handout, student, how)
            if entry["status"] == "missing":
                raise InvalidInput(
                    _t(
                        "{student} has no folder {folder}",
                        student=student,
                        folder="/".join(self.folder(course, name)),
                    ),
                    _t("Work in the handed-out folder, or ask the teacher to hand it out again."),
                )
            handout["submissions"][student] = entry
            record["handouts"][name] = handout
            self._write_manifest(course, handout)
            self.book.save(course, record)
        return entry

    def collect(self, group: dict[str, Any], name: str, *, auto: bool = False) -> dict[str, Any]:
        """Snapshot every student's folder who has not submitted (a student's own submission
        is kept). ``auto``: the deadline's collection."""
        course = group["name"]
        with self.book.lock(course):
            record = self.book.load(course)
            handout = self.get(course, name)
            if handout["mode"] != "copy":
                raise InvalidInput(
                    _t(
                        "hand-out {name} is shared read-only: there is nothing to collect",
                        name=name,
                    ),
                    _t("Hand out assignments with mode copy."),
                )
            report = []
            for student in students(group):
                previous = handout["submissions"].get(student)
                if previous and previous["how"] == "submit":
                    report.append(
                        {
                            "student": student,
                            "status": "submitted",
                            "at": previous["at"],
                            "late": previous["late"],
                        }
                    )
                    continue
                try:
                    entry = self._snapshot(group, handout, student, "collect")
                except (CubeError, OSError) as exc:
                    report.append(
                        {
                            "student": student,
                            "status": "error",
                            "error": getattr(exc, "error", None) or str(exc),
                            "detail": getattr(exc, "detail", None),
                        }
                    )
                    continue
                if entry["status"] == "missing":
                    report.append({"student": student, "status": "missing"})
                    continue
                handout["submissions"][student] = entry
                report.append(
                    {
                        "student": student,
                        "status": "collected",
                        "at": entry["at"],
                        "late": entry["late"],
                        "files": len(entry["files"]),
                    }
                )
            if auto:
                handout["collected"] = self.clock()
            record["handouts"][name] = handout
            self._write_manifest(course, handout)
            self.book.save(course, record)
        return {"handout": summary(handout), "students": report}

    def collect_due(self, groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Collect every hand-out whose deadline has passed and that is not collected yet."""
        done = []
        now = self.clock()
        for group in groups:
            if not is_course(group):
                continue
            for h in self.book.load(group["name"])["handouts"].values():
                due = h.get("deadline") is not None and h["deadline"] <= now
                if due and h.get("collected") is None and h["mode"] == "copy":
                    done.append(
                        {"course": group["name"], **self.collect(group, h["name"], auto=True)}
                    )
        return done

    def submissions(self, group: dict[str, Any], name: str) -> dict[str, Any]:
        """Per student: submitted (when, on time or late, the files) or missing."""
        handout = self.get(group["name"], name)
        roster = roster_of(group)
        rows = []
        for student in students(group):
            entry = handout["submissions"].get(student)
            display = (roster.get(student) or {}).get("display_name") or ""
            if entry is None:
                rows.append({"student": student, "display_name": display, "status": "missing"})
            else:
                rows.append(
                    {
                        **entry,
                        "display_name": display,
                        "status": "late" if entry["late"] else "on time",
                    }
                )
        return {"handout": summary(handout), "submissions": rows}

    def _snapshot(
        self, group: dict[str, Any], handout: dict[str, Any], student: str, how: str
    ) -> dict[str, Any]:
        course, name = group["name"], handout["name"]
        folder = self.folder(course, name)
        try:
            fd = files.open_dir(self.home(student), folder)
        except FileNotFoundError:
            return {"status": "missing"}
        with files.opened(fd):
            tree = files.read_tree(fd)
        at = self.clock()
        deadline = handout.get("deadline")
        grace = 0.0 if how == "submit" else COLLECT_GRACE_S
        late = deadline is not None and at > deadline + grace
        found, problem = self._references(course, handout, student, "/".join(folder))
        where = [*folder, "submissions", folder_name(student)]
        records = run_files(found["runs"], found["logs"], at)
        files.replace_tree(self.home(handout["owner"]), where, tree.files + records)
        entry = {
            "status": "ok",
            "student": student,
            "how": how,
            "at": at,
            "late": late,
            "folder": "/".join(where),
            "files": [
                {"path": f.path, "size": f.size, "sha256": f.sha256, "mtime": f.mtime}
                for f in tree.files
            ],
            "skipped": tree.skipped,
            "models": found["models"],
            "runs": [{k: run.get(k) for k in RUN_FIELDS} for run in found["runs"]],
        }
        if problem is not None:
            entry["references_error"] = problem
        return entry

    def _references(
        self, course: str, handout: dict[str, Any], student: str, folder: str
    ) -> tuple[dict[str, Any], str | None]:
        """The runs and models the student's folder references (``course_material.collect``);
        a store that cannot answer costs those, never the snapshot of the files."""
        none: dict[str, Any] = {"runs": [], "models": [], "logs": {}}
        if self.material is None:
            return none, None
        try:
            return self.material.collect(
                student=student, teacher=handout["owner"], course=course,
                handout=handout["name"], folder=folder,
            ), None  # fmt: skip
        except CubeError as exc:
            log.warning("the runs and models of %s's %s: %s", student, folder, exc.error)
            return none, exc.error

    def _write_manifest(self, course: str, handout: dict[str, Any]) -> None:
        manifest = {
            "course": course,
            "handout": handout["name"],
            "deadline": handout.get("deadline"),
            "written": self.clock(),
            "submissions": handout["submissions"],
        }
        data = json.dumps(manifest, ensure_ascii=False, indent=1).encode()
        item = files.SourceFile.of("manifest.json", data, self.clock())
        where = [*self.folder(course, handout["name"]), "submissions"]
        files.write_tree(self.home(handout["owner"]), where, [item], overwrite=True)


def run_files(
    runs: list[dict[str, Any]], logs: dict[str, str], at: float
) -> list[files.SourceFile]:
    """The records of a snapshot's runs (``runs.json``) and their log tails, as files of the
    snapshot under ``RUNS_FOLDER``."""
    if not runs:
        return []
    out = {"runs.json": json.dumps(runs, ensure_ascii=False, indent=1).encode()}
    out.update({path: text.encode() for path, text in logs.items()})
    return [files.SourceFile.of(f"{RUNS_FOLDER}/{path}", data, at) for path, data in out.items()]


def summary(handout: dict[str, Any]) -> dict[str, Any]:
    subs = handout.get("submissions") or {}
    return {
        "name": handout["name"],
        "source": handout["source"],
        "mode": handout["mode"],
        "owner": handout["owner"],
        "deadline": handout.get("deadline"),
        "created": handout["created"],
        "updated": handout["updated"],
        "collected": handout.get("collected"),
        "students": len(handout.get("students") or {}),
        "submitted": len(subs),
        "late": sum(1 for s in subs.values() if s.get("late")),
        "models": handout.get("models") or [],
        "datasets": handout.get("datasets") or [],
    }
