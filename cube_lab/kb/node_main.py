"""What a pipeline's kb-ingest node runs: one ``sync_folder`` of a knowledge base, its values.

The spec comes in ``$CUBE_KB_INGEST_SPEC`` (written by ``KbIngestKind.command``); the data
dir, database and user come from the environment every node gets. Each file's outcome is
logged. Exit status 0: synced (files that failed are logged and counted in ``failed``); 1:
files were found and none could be read; 2: bad input or the knowledge base is missing.

Under the hub (a node the cube-lab service started, with its job token) the sync runs at the
service (``POST /kb/{project}/{kb}/sync``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from ..config import local_username
from ..errors import CubeError
from ..identity import Caller
from ..jobtemplates.contract import ENV_VALUES_FILE
from .nodekind import ENV_SPEC


def main() -> int:
    try:
        spec = json.loads(os.environ[ENV_SPEC])
    except (KeyError, json.JSONDecodeError) as exc:
        print(f"cube-lab: no valid kb-ingest spec in ${ENV_SPEC}: {exc}", file=sys.stderr)
        return 2
    from ..rest_client import ServiceClient

    try:
        client = ServiceClient.from_env()
        summary = _remote(client, spec) if client is not None else _local(spec)
    except CubeError as exc:
        print(f"cube-lab: error: {exc.error}\n  {exc.detail or ''}", file=sys.stderr)
        return 2
    return _done(summary)


def _local(spec: dict[str, Any]) -> dict[str, Any]:
    from ..workspace import default_workspace

    ws = default_workspace()
    folder = Path(spec["folder"])

    def progress(done: int, total: int, result: Any) -> None:
        name = _short(result.source, folder)
        if result.status == "failed":
            detail = f" ({result.detail})" if result.detail else ""
            print(f"[{done}/{total}] {name}: FAILED: {result.error}{detail}", flush=True)
        else:
            print(f"[{done}/{total}] {name}: {result.status}, {result.chunks} chunk(s)", flush=True)

    try:
        return ws.kb.sync_folder(
            Caller(local_username()),
            spec.get("project"),
            spec["kb"],
            folder,
            patterns=spec.get("patterns") or None,
            delete_missing=bool(spec.get("delete_missing", True)),
            options=spec.get("options") or None,
            boundary=Path(spec["root"]),
            progress=progress,
        )
    finally:
        ws.close()


def _remote(client: Any, spec: dict[str, Any]) -> dict[str, Any]:
    from ..rest_client import personal_project, relative, segment

    project = spec.get("project") or personal_project(client)
    body = {
        "folder": relative(spec["folder"], "folder"),
        "patterns": spec.get("patterns") or None,
        "delete_missing": bool(spec.get("delete_missing", True)),
        **(spec.get("options") or {}),
    }
    where = f"kb/{segment(project)}/{segment(spec['kb'])}/sync"
    summary = client.post(where, {k: v for k, v in body.items() if v is not None})
    for f in summary["failed"]:
        print(f"{f['source']}: FAILED: {f['error']}", flush=True)
    return summary


def _short(source: str, folder: Path) -> str:
    path = Path(source)
    return path.relative_to(folder).as_posix() if path.is_relative_to(folder) else source


def _done(summary: dict[str, Any]) -> int:
    values = {
        "kb": summary["kb"],
        "project": summary["project"],
        "added": len(summary["added"]),
        "changed": len(summary["replaced"]),
        "unchanged": len(summary["unchanged"]),
        "removed": len(summary["removed"]),
        "failed": len(summary["failed"]),
        "chunks": summary["chunks"],
        "chunks_added": summary["chunks_added"],
        "chunks_removed": summary["chunks_removed"],
    }
    for source in summary["removed"]:
        print(f"removed {source}", flush=True)
    values_file = os.environ.get(ENV_VALUES_FILE)
    if values_file:
        with open(values_file, "w") as f:
            json.dump(values, f)
    read = values["added"] + values["changed"] + values["unchanged"]
    print(
        f"cube-lab: knowledge base {values['project']}/{values['kb']}: {values['added']} added, "
        f"{values['changed']} changed, {values['unchanged']} unchanged, {values['removed']} "
        f"removed, {values['failed']} failed; {values['chunks']} chunk(s) in all",
        flush=True,
    )
    if values["failed"] and not read:
        print("cube-lab: error: no file of the folder could be read", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
