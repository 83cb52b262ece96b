"""Reading a ``.pipeline`` file (or text, or a parsed document) into a ``Pipeline``."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from ...locale.messages import _t
from ..model import CUBE_KEY, Pipeline
from .common import PipelineFormatError, expect
from .flatten import flatten, parameters_of
from .migrate import upgrade


def load(path: Path) -> Pipeline:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PipelineFormatError(
            _t("pipeline file {value!r} not found", value=str(path))
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PipelineFormatError(_t("cannot read {name}", name=path.name), str(exc)) from None
    return loads(text, path)


def loads(text: str, path: Path | None = None) -> Pipeline:
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise PipelineFormatError(_t("the pipeline file is not valid JSON"), str(exc)) from None
    return _from_own_document(expect(doc, dict, "the pipeline document"), path)


def from_document(doc: Any, path: Path | None = None) -> Pipeline:
    """A pipeline from a parsed document; the document itself is left as it was."""
    return _from_own_document(copy.deepcopy(expect(doc, dict, "the pipeline document")), path)


def _from_own_document(doc: dict[str, Any], path: Path | None) -> Pipeline:
    """Like from_document, but takes over ``doc`` (migration edits it in place)."""
    if doc.get("doc_type", "pipeline") != "pipeline":
        raise PipelineFormatError(
            _t("doc_type is {value!r}, not 'pipeline'", value=doc.get("doc_type"))
        )
    pipelines = expect(doc.get("pipelines"), list, "pipelines")
    if not pipelines:
        raise PipelineFormatError(
            _t("pipelines is empty"), _t("A .pipeline file holds one pipeline.")
        )
    primary_id = doc.get("primary_pipeline")
    index = next(
        (
            i
            for i, p in enumerate(pipelines)
            if isinstance(primary_id, str) and isinstance(p, dict) and p.get("id") == primary_id
        ),
        0,
    )
    primary = expect(pipelines[index], dict, f"pipelines[{index}]")
    app_data = expect(primary.setdefault("app_data", {}), dict, "pipelines[0].app_data")
    migrated_from = upgrade(app_data, primary, doc)
    properties = expect(app_data.setdefault("properties", {}), dict, "app_data.properties")
    defaults = expect(properties.get("pipeline_defaults") or {}, dict, "pipeline_defaults")
    cube = expect(properties.get(CUBE_KEY) or {}, dict, f"properties.{CUBE_KEY}")
    name = properties.get("name")
    if not isinstance(name, str) or not name:  # Elyra before 3.x kept it in app_data
        name = app_data.get("name")
    if not isinstance(name, str) or not name:
        name = path.stem if path else "pipeline"
    nodes = flatten(doc, index).nodes
    params = parameters_of(properties.get("pipeline_parameters") or [])
    return Pipeline(name, nodes, params, defaults, cube, doc, path, migrated_from, index)
