"""Labeled data in a notebook or a training script: a dataset version's path, or its contents.

::

    import cube_lab

    cube_lab.datasets.create("pets", "images/pets")    # register a folder (or a file)
    cube_lab.datasets.get("pets")["versions"]          # what it holds, its versions
    path = cube_lab.datasets.path("pets", version=2)   # pathlib.Path of the export
    df = cube_lab.datasets.load("pets")                # the newest version, loaded

``version`` None takes the newest version (an export of a labeling project writes one), or
the dataset as registered when nothing was exported yet; ``version="source"`` asks for the
registered folder or file itself. Without ``project`` the dataset is looked for in your
personal project, then in your other projects.

What ``load`` returns:

- CSV / JSONL exports and text datasets: a ``pandas.DataFrame``, one row per item. In a
  CSV export ``labels`` is split back into a list and ``boxes`` / ``spans`` parsed from JSON,
  so both formats load the same.
- COCO and YOLO exports: a ``pandas.DataFrame``, one row per image, with ``path`` (the
  image file, absolute), ``file_name``, ``width``, ``height``, ``labels`` (the label names
  on the image) and ``boxes``: COCO's in pixels ``{"label", "x", "y", "w", "h"}`` from the
  top-left corner, YOLO's normalised ``{"label", "class", "x_center", "y_center", "width",
  "height"}``. ``df.attrs`` holds the label names (``"labels"``) and the annotation file.
  The files themselves (for pycocotools or Ultralytics) are under ``path(...)``.
- Label Studio exports: the list of task dicts, as Label Studio imports them.
- An image dataset with no export: a ``pandas.DataFrame`` of ``name``, ``path``, ``width``,
  ``height``. Under the hub, when its source is a folder this process cannot read (a
  teammate's home), the images are fetched through the service into the cache
  (``.../<project>/<name>/source-<id>/``, each once) and ``path`` points there.

Under the hub (a notebook, a terminal, or a job the cube-lab service started) the dataset is
resolved by the cube-lab service, with the same rules, and the version is downloaded once
into a per-user cache (``~/.cache/cube-lab/datasets/<project>/<name>/<version>``; a version
never changes), which ``path`` returns and ``load`` reads: the same result as in-process.

Every dataset version resolved in this process is noted, and ``cube_lab.registry.register``
(and ``%cube_register``) adds them to the model's lineage. A training job launched with
``$CUBE_LAB_DATASET`` ("Train from these labels") records its dataset the same way.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .locale.messages import _t

if TYPE_CHECKING:
    from .labeling.dataset_service import DatasetRef

__all__ = ["ENV_DATASET", "create", "get", "load", "path", "used"]

ENV_DATASET = "CUBE_LAB_DATASET"  # a job's dataset version folder or file ("Train from ...")

_used: list[dict[str, Any]] = []
_lock = threading.Lock()


def create(
    name: str,
    source: str | os.PathLike[str],
    *,
    project: str | None = None,
    kind: str | None = None,
    text_field: str | None = None,
) -> dict[str, Any]:
    """Register ``source`` as dataset ``name``: a folder of images, or texts (a CSV / JSONL
    file or a folder of .txt files; ``text_field`` names the column); ``kind`` "images" or
    "texts" when it is not plain from the files. The dataset as the service answered (its
    ``versions`` start with the registered ``source``)."""
    from .errors import InvalidInput
    from .sdk import current

    if not isinstance(source, (str, os.PathLike)):
        raise InvalidInput(
            _t("a dataset's source is a path, not {name__}", name__=type(source).__name__),
            _t('e.g. cube_lab.datasets.create("reviews", "reviews.csv")'),
        )
    body = {
        "name": name,
        "path": os.fspath(source),
        "project": project,
        "kind": kind,
        "text_field": text_field,
    }
    return current().create_dataset(body)


def get(name: str, project: str | None = None) -> dict[str, Any]:
    """Dataset ``name`` (of your personal project unless ``project``), with its versions."""
    from .sdk import current

    transport = current()
    return transport.get_dataset(project or transport.personal_project(), name)


def path(name: str, version: int | str | None = None, project: str | None = None) -> Path:
    """The folder or file of dataset ``name``'s ``version`` (newest when None)."""
    return _resolve(name, version, project).path


def load(name: str, version: int | str | None = None, project: str | None = None) -> Any:
    """Dataset ``name``'s ``version`` read into Python (see the module's doc for the types)."""
    return read(_resolve(name, version, project))


def used() -> list[dict[str, Any]]:
    """The dataset versions ``path`` and ``load`` resolved in this process, as lineage
    entries ``{"project", "name", "version", "path"}``, first use first."""
    with _lock:
        return [dict(entry) for entry in _used]


def _resolve(name: str, version: int | str | None, project: str | None) -> DatasetRef:
    from .rest_client import ServiceClient

    client = ServiceClient.from_env()
    if client is not None:  # under the hub (a notebook, or a job): through the service
        ref, entry = _resolve_remote(client, name, version, project)
    else:
        from .config import local_username
        from .identity import Caller
        from .workspace import default_workspace

        caller = Caller(local_username())
        ref = default_workspace().datasets.resolve(caller, name, version, project)
        entry = ref.lineage()
    with _lock:
        if entry not in _used:
            _used.append(entry)
    return ref


# -- through the cube-lab service (under the hub) -----------------------------------------

CACHE_MARK = ".cube-lab-dataset.json"


def cache_root() -> Path:
    """Where dataset versions fetched from the service are kept, per user:
    ``$XDG_CACHE_HOME/cube-lab/datasets`` (``~/.cache/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "cube-lab" / "datasets"


def _resolve_remote(
    client: Any, name: str, version: int | str | None, project: str | None
) -> tuple[DatasetRef, dict[str, Any]]:
    """The dataset version by the in-process rules (newest, "source", personal project
    first), its files downloaded into the cache (once: a version never changes); and its
    lineage entry, as the store names it."""
    from .identity import check_name
    from .labeling.dataset_service import DatasetRef
    from .rest_client import segment

    check_name(name, "dataset name")
    view = _find_remote(client, name, project)
    row = _pick_remote_version(view, version)
    if row is None:  # the dataset as registered: a folder or file in someone's home
        source = Path(view["source"])
        entry = {"project": view["project"], "name": name, "version": None, "path": str(source)}
        if os.access(source, os.R_OK):
            pass
        elif view["kind"] == "images":  # another's home: the images through the service
            source = _fetch_images(client, view)
        else:
            from .errors import NotFound

            raise NotFound(
                _t("the source of dataset {name!r} cannot be read from here", name=name),
                _t(
                    (
                        "It is {source}, outside what this process can read; export a version"
                        " of it (a labeling project's export), which the cube-lab service "
                        "hands out."
                    ),
                    source=source,
                ),
            )
        return DatasetRef(view["project"], name, None, source, "source", view["kind"]), entry
    number = int(row["version"])
    folder = cache_root() / _safe(view["project"]) / _safe(name) / str(number)
    mark = {"dataset_id": view["id"], "version": number, "created_at": str(row["created_at"])}
    target = folder / Path(row["path"]).name
    if not _cached(folder, mark, target):
        url = (
            f"projects/{segment(view['project'])}/datasets/{segment(name)}"
            f"/versions/{number}/download"
        )
        _download(client, url, folder, target.name, mark)
    ref = DatasetRef(view["project"], name, number, target, row["format"], view["kind"])
    entry = {"project": view["project"], "name": name, "version": number, "path": row["path"]}
    return ref, entry


def _remote_items(client: Any, project: str, name: str) -> list[dict[str, Any]]:
    from .rest_client import segment

    items: list[dict[str, Any]] = client.get(
        f"projects/{segment(project)}/datasets/{segment(name)}/items"
    )["items"]
    return items


def _fetch_images(client: Any, view: dict[str, Any]) -> Path:
    """The images of a dataset whose source this process cannot read (in a teammate's home),
    fetched through the service into the cache, each once (an item's content never changes
    under its id; the folder is the dataset record's, so a dataset made again starts anew),
    at their names inside the source."""
    from . import containment
    from .rest_client import segment

    project, name = view["project"], view["name"]
    folder = cache_root() / _safe(project) / _safe(name) / f"source-{view['id']}"
    folder.mkdir(parents=True, exist_ok=True)
    base = f"projects/{segment(project)}/datasets/{segment(name)}/items"
    for item in _remote_items(client, project, name):
        target = containment.resolve(folder, item["name"], absolute="refuse", what="item name")
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.part")
        with client.stream(f"{base}/{item['id']}/content") as answer:
            answer.save(partial)
        partial.rename(target)  # whole or not at all
    return folder


def _find_remote(client: Any, name: str, project: str | None) -> dict[str, Any]:
    from .errors import InvalidInput, NotFound
    from .rest_client import segment

    if project:
        found: dict[str, Any] = client.get(f"projects/{segment(project)}/datasets/{segment(name)}")
        return found
    rows = [d for d in client.get("datasets")["datasets"] if d["name"] == name]
    if not rows:
        raise NotFound(
            _t("dataset {name!r} not found in your projects", name=name),
            _t(
                "GET /cube/api/v1/datasets (or `cube-lab label datasets`) lists the "
                "datasets you can see."
            ),
        )
    if len(rows) > 1:
        from .rest_client import personal_project

        mine = [r for r in rows if r["project"] == personal_project(client)]
        if mine:
            return mine[0]
        projects = sorted(r["project"] for r in rows)
        raise InvalidInput(
            _t(
                "dataset {name!r} is in several of your projects: {value}",
                name=name,
                value=", ".join(projects),
            ),
            _t("Say which: project={value!r}.", value=projects[0]),
        )
    return rows[0]


def _pick_remote_version(view: dict[str, Any], version: int | str | None) -> Any:
    from .errors import NotFound

    versions = sorted(view.get("versions") or [], key=lambda v: int(v["version"]))
    text = "latest" if version is None else str(version).strip().removeprefix("v")
    if text == "source":
        return None
    if text == "latest":
        return versions[-1] if versions else None
    row = next((v for v in versions if str(v["version"]) == text), None)
    if row is None:
        known = ", ".join(str(v["version"]) for v in versions) or "none yet"
        raise NotFound(
            _t("dataset {name!r} has no version {version!r}", name=view["name"], version=version),
            _t(
                (
                    "Versions: {known}. An export of a labeling project creates one; "
                    "version=None takes the newest."
                ),
                known=known,
            ),
        )
    return row


def _safe(part: str) -> str:
    """A name as one folder name of the cache."""
    import urllib.parse

    quoted = urllib.parse.quote(str(part), safe="")
    return quoted if quoted not in ("", ".", "..") else f"_{quoted}"


def _cached(folder: Path, mark: dict[str, Any], target: Path) -> bool:
    try:
        return json.loads((folder / CACHE_MARK).read_text()) == mark and target.exists()
    except (OSError, ValueError):
        return False


def _download(client: Any, url: str, folder: Path, name: str, mark: dict[str, Any]) -> None:
    """Fetch a version into ``folder/name`` (a zip of a folder is unpacked), whole or not
    at all: it is written beside, then moved into place."""
    import shutil
    import tempfile
    import zipfile

    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=folder.parent))
    try:
        with client.stream(url) as answer:
            archive = "zip" in (answer.headers.get("Content-Type") or "")
            answer.save(staging / ("download.zip" if archive else name))
        if archive:
            unpacked = staging / "unpacked"
            with zipfile.ZipFile(staging / "download.zip") as zf:
                zf.extractall(unpacked)  # names with .. or a leading / are made safe
            (staging / "download.zip").unlink()
            tops = list(unpacked.iterdir())
            (tops[0] if len(tops) == 1 and tops[0].is_dir() else unpacked).rename(staging / name)
            shutil.rmtree(unpacked, ignore_errors=True)
        (staging / CACHE_MARK).write_text(json.dumps(mark))
        if folder.exists():  # a stale copy (another dataset of that name once)
            shutil.rmtree(folder)
        try:
            staging.rename(folder)
        except OSError:  # another process fetched it meanwhile
            if not _cached(folder, mark, folder / name):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def lineage_for_register(explicit: Any = None) -> list[dict[str, Any]]:
    """What ``register`` records: the datasets given, those resolved in this process, and
    the job's ``$CUBE_LAB_DATASET`` when it is a dataset version of the caller's."""
    out: list[dict[str, Any]] = list(explicit or [])
    out += used()
    env = os.environ.get(ENV_DATASET)
    if env:
        from .config import local_username
        from .identity import Caller
        from .workspace import default_workspace

        ref = default_workspace().datasets.find_by_path(Caller(local_username()), env)
        if ref is not None:
            out.append(ref.lineage())
    unique: list[dict[str, Any]] = []
    for entry in out:
        if entry not in unique:
            unique.append(entry)
    return unique


# -- reading --------------------------------------------------------------------------------


def read(ref: DatasetRef) -> Any:
    """A resolved dataset version's contents (see the module's doc)."""
    fmt, target = ref.format, ref.path
    if fmt == "coco":
        return _read_coco(target)
    if fmt == "yolo":
        return _read_yolo(target)
    if fmt == "labelstudio":
        return json.loads(target.read_text(encoding="utf-8"))
    if fmt == "csv":
        return _decode_csv_export(_read_csv(target))
    if fmt == "jsonl":
        return _read_jsonl(target)
    if ref.kind == "texts":  # the source file of a text dataset
        return _read_jsonl(target) if target.suffix.lower() == ".jsonl" else _read_csv(target)
    return _read_images(ref)


def _frame(records: list[dict[str, Any]], columns: list[str] | None = None) -> Any:
    import pandas as pd

    return (
        pd.DataFrame.from_records(records, columns=columns)
        if records
        else pd.DataFrame(columns=columns)
    )


def _read_csv(file: Path) -> Any:
    import pandas as pd

    return pd.read_csv(file)


def _read_jsonl(file: Path) -> Any:
    with open(file, encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    return _frame(records)


def _decode_csv_export(df: Any) -> Any:
    """A CSV export's cells back into what the JSONL export holds."""

    def split(cell: Any) -> list[str]:
        return [p for p in cell.split("|") if p] if isinstance(cell, str) else []

    def parse(cell: Any) -> Any:
        return json.loads(cell) if isinstance(cell, str) and cell else []

    if "labels" in df.columns:
        df["labels"] = df["labels"].map(split)
    for column in ("boxes", "spans"):
        if column in df.columns:
            df[column] = df[column].map(parse)
    return df


def _read_coco(folder: Path) -> Any:
    annotations_file = folder / "annotations.json"
    doc = json.loads(annotations_file.read_text(encoding="utf-8"))
    images_dir = folder / ((doc.get("info") or {}).get("images_dir") or "images")
    names = {c["id"]: c["name"] for c in doc.get("categories", [])}
    per_image: dict[int, dict[str, Any]] = {}
    for image in doc.get("images", []):
        per_image[image["id"]] = {
            "file_name": image["file_name"],
            "path": str(images_dir / image["file_name"]),
            "width": image.get("width"),
            "height": image.get("height"),
            "labels": list(image.get("labels") or []),  # image-class exports
            "boxes": [],
        }
    for ann in doc.get("annotations", []):
        row = per_image.get(ann.get("image_id"))
        if row is None:
            continue
        label = names.get(ann.get("category_id"))
        if label is not None and label not in row["labels"]:
            row["labels"].append(label)
        if ann.get("bbox"):
            x, y, w, h = ann["bbox"]
            row["boxes"].append({"label": label, "x": x, "y": y, "w": w, "h": h})
    columns = ["file_name", "path", "width", "height", "labels", "boxes"]
    df = _frame(list(per_image.values()), columns)
    df.attrs.update(
        {
            "labels": [c["name"] for c in doc.get("categories", [])],
            "annotations": str(annotations_file),
        }
    )
    return df


def _read_yolo(folder: Path) -> Any:
    import yaml

    data_yaml = folder / "data.yaml"
    data = yaml.safe_load(data_yaml.read_text(encoding="utf-8")) or {}
    raw = data.get("names") or {}
    names = dict(enumerate(raw)) if isinstance(raw, list) else {int(k): v for k, v in raw.items()}
    images_dir = folder / str(data.get("train") or "images")
    labels_dir = folder / "labels"
    records = []
    for image in sorted(p for p in images_dir.rglob("*") if p.is_file()):
        relative = image.relative_to(images_dir)
        label_file = (labels_dir / relative).with_suffix(".txt")
        boxes = []
        if label_file.is_file():
            for line in label_file.read_text(encoding="utf-8").splitlines():
                parts = line.split()
                if len(parts) != 5:
                    continue
                cls = int(parts[0])
                cx, cy, w, h = (float(v) for v in parts[1:])
                boxes.append(
                    {
                        "label": names.get(cls),
                        "class": cls,
                        "x_center": cx,
                        "y_center": cy,
                        "width": w,
                        "height": h,
                    }
                )
        labels = list(dict.fromkeys(b["label"] for b in boxes))
        records.append(
            {
                "file_name": relative.as_posix(),
                "path": str(image),
                "label_file": str(label_file),
                "labels": labels,
                "boxes": boxes,
            }
        )
    df = _frame(records, ["file_name", "path", "label_file", "labels", "boxes"])
    df.attrs.update({"labels": [names[k] for k in sorted(names)], "data_yaml": str(data_yaml)})
    return df


def _read_images(ref: DatasetRef) -> Any:
    from .config import local_username
    from .identity import Caller
    from .rest_client import ServiceClient
    from .workspace import default_workspace

    client = ServiceClient.from_env()
    if client is not None:  # under the hub: the service lists them
        items = _remote_items(client, ref.project, ref.name)
    else:
        caller = Caller(local_username())
        items = default_workspace().datasets.items(caller, ref.project, ref.name)
    records = [
        {"name": i["name"], "path": str(ref.path / i["name"]), "width": i["width"],
         "height": i["height"]}
        for i in items
    ]  # fmt: skip
    return _frame(records, ["name", "path", "width", "height"])
