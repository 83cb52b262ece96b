"""`cube-lab model ...` under the hub."""

from __future__ import annotations

import argparse
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from ...errors import InvalidInput
from ...locale.messages import _t
from ...rest_client import ServiceClient, relative, segment
from ..args import output_target, parse_pairs, print_json, print_table, split_ref
from ..models import show_model, show_models, show_registered
from .common import emit, project_of


def _model(project: str, name: str) -> str:
    return f"projects/{segment(project)}/models/{segment(name)}"


def model_register(client: ServiceClient, a: argparse.Namespace) -> None:
    body: dict[str, Any] = {
        "name": a.name,
        "path": relative(a.path),
        "project": a.project,
        "flavor": a.flavor,
        "description": a.description,
        "metrics": parse_pairs(a.metric, "metric", numeric=True),
        "params": parse_pairs(a.param, "param"),
        "tags": parse_pairs(a.tag, "tag"),
        "aliases": a.alias,
        "source": a.source,
        "pipeline_run_id": a.pipeline_run,
        "training_job_id": a.training_job,
    }
    v = client.post("models", {k: val for k, val in body.items() if val is not None})
    emit(a, v, show_registered)


def model_list(client: ServiceClient, a: argparse.Namespace) -> None:
    models: list[dict[str, Any]] = []
    while True:
        page = client.get(
            "models",
            q=a.search,
            project=a.project,
            include_archived=a.all,
            limit=500,
            offset=len(models),
        )
        models.extend(page["models"])
        if len(models) >= page["total"] or not page["models"]:
            break
    emit(a, models, show_models)


def model_show(client: ServiceClient, a: argparse.Namespace) -> None:
    detail = client.get(_model(project_of(client, a), a.name))
    emit(a, detail, show_model)


def model_alias(client: ServiceClient, a: argparse.Namespace) -> None:
    where = f"{_model(project_of(client, a), a.name)}/aliases/{segment(a.alias)}"
    if a.remove:
        detail = client.delete(where)
        message = f"Removed alias {a.alias} from {a.name}"
    else:
        if a.version is None:
            raise InvalidInput(
                _t("give the version to point the alias at"),
                _t("cube-lab model alias NAME ALIAS VERSION"),
            )
        detail = client.put(where, {"version": a.version})
        message = f"{a.name}@{a.alias} -> v{a.version}"
    if a.json:
        print_json(detail)
    else:
        print(message)


def model_download(client: ServiceClient, a: argparse.Namespace) -> None:
    name, ref = split_ref(a.ref)
    where = f"{_model(project_of(client, a), name)}/versions/{segment(ref)}"
    version = client.get(where)
    with client.stream(f"{where}/download") as answer:
        filename = Path(version["artifact_name"]).name or answer.filename or name
        is_dir = answer.headers.get("Content-Type", "").startswith("application/zip")
        output = output_target(
            a.output, what=f"model {name}:{ref} (a folder)", single=None if is_dir else filename
        )
        with tempfile.TemporaryDirectory(prefix="cube-download-") as tmp:
            received = Path(tmp) / "received"
            answer.save(received)
            source = received
            if is_dir:  # the folder comes as a zip holding it under its own name
                unpacked = Path(tmp) / "unpacked"
                with zipfile.ZipFile(received) as archive:
                    archive.extractall(unpacked)
                inside = list(unpacked.iterdir())
                source = inside[0] if len(inside) == 1 and inside[0].is_dir() else unpacked
            else:
                source = received.rename(Path(tmp) / filename)
            written = output.deliver(source)
    if a.json:
        print_json({"model": name, "version": version["version"], "output": str(written.resolve())})
    else:
        print(f"Downloaded {name}:{ref} to {written}")


def model_compare(client: ServiceClient, a: argparse.Namespace) -> None:
    cmp = client.get(
        f"{_model(project_of(client, a), a.name)}/compare", versions=",".join(a.versions)
    )
    if a.json:
        print_json(cmp)
        return
    versions = cmp["versions"]
    header = ["", *[f"v{v['version']}" for v in versions]]
    rows = [
        [f"metric {m}", *[str(v["metrics"].get(m, "")) for v in versions]] for m in cmp["metrics"]
    ]
    rows += [
        [f"param {p}", *[str(v["params"].get(p, "")) for v in versions]] for p in cmp["params"]
    ]
    print_table(rows, header)


def model_archive(client: ServiceClient, a: argparse.Namespace) -> None:
    name, ref = a.ref.partition(":")[0], a.ref.partition(":")[2]
    where = _model(project_of(client, a), name)
    if ref:
        where += f"/versions/{segment(ref)}"
    view = client.patch(where, {"archived": not a.undo})
    if a.json:
        print_json(view)
    else:
        print(f"{'Restored' if a.undo else 'Archived'} {a.ref}")


def model_delete(client: ServiceClient, a: argparse.Namespace) -> None:
    name, ref = a.ref.partition(":")[0], a.ref.partition(":")[2]
    project = project_of(client, a)
    if not a.yes:
        raise InvalidInput(
            _t("deleting {ref} removes its artifacts for good", ref=a.ref),
            _t("Add --yes to confirm."),
        )
    where = _model(project, name)
    client.delete(f"{where}/versions/{segment(ref)}" if ref else where)
    if a.json:
        print_json({"deleted": a.ref, "project": project})
    else:
        print(f"Deleted {a.ref}")
