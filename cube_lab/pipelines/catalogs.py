"""Elyra component catalogs: the KFP components a pipeline node's ``<catalog>:<hash>`` op names.

Elyra keeps each catalog as a JSON file in ``<jupyter data dir>/metadata/component-catalogs/``
(``schema_name`` ``local-directory-catalog``, ``local-file-catalog`` or ``url-catalog``,
``metadata.paths``, ``base_path``, ``include_subdirs``, ``runtime_type``). cube-lab reads the same
files, in the same folders (``ELYRA_METADATA_PATH``, the user's data dir, the system and
environment data dirs), and gives each component the op id Elyra gives it: the catalog's schema
name and the first 12 hex digits of the SHA-256 of the entry's ``path`` (file catalogs: as
written; directory catalogs: relative to the directory) or ``url``, so pipelines written by
Elyra's editor resolve unchanged.

Only Kubeflow Pipelines component YAML is read (``runtime_type: KUBEFLOW_PIPELINES``); catalogs of
Apache Airflow operators are listed with an error saying so.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .. import containment
from ..errors import CubeError
from ..locale.messages import _t
from .model import Node

SCHEMAS = ("local-directory-catalog", "local-file-catalog", "url-catalog")
KFP = "KUBEFLOW_PIPELINES"
AIRFLOW = "APACHE_AIRFLOW"
URL_TIMEOUT_S = 10.0
CACHE_S = 5.0  # URL catalogs are fetched again after this many seconds at most

# An op as Elyra's catalogs write it: <schema name>:<12 hex digits>[:<Airflow class>]
CATALOG_OP = re.compile(r"^[A-Za-z0-9_.-]+:[0-9a-f]{12}(:[A-Za-z_][A-Za-z0-9_]*)?\Z")

# KFP type name -> JSON type (as Elyra's parser maps them)
_JSON_TYPES = {
    "string": "string", "str": "string", "integer": "integer", "int": "integer",
    "float": "number", "double": "number", "bool": "boolean", "boolean": "boolean",
    "dict": "object", "jsonobject": "object", "list": "array", "jsonarray": "array",
}  # fmt: skip


@dataclass
class ComponentInput:
    name: str  # as in the component YAML
    ref: str  # the key in the node's component_parameters (Elyra: lower case, _ for spaces)
    type: str  # the KFP type as written ("String" when none)
    json_type: str  # string | integer | number | boolean | object | array
    default: Any = None
    optional: bool = False
    description: str = ""
    path: bool = False  # an inputPath: takes a parent node's output file


@dataclass
class ComponentOutput:
    name: str
    ref: str  # "output_<name>" as Elyra names it
    type: str = ""
    description: str = ""


@dataclass
class CatalogComponent:
    op: str
    name: str
    description: str
    catalog: str  # the catalog's display name (the palette's category)
    catalog_name: str  # its metadata file's name
    schema_name: str
    categories: list[str]
    source: dict[str, Any]  # the entry reference (path / url), as in Elyra's component_source
    inputs: list[ComponentInput]
    outputs: list[ComponentOutput]
    definition: str  # the component YAML as read
    spec: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def image(self) -> str:
        return str(self.container.get("image") or "")

    @property
    def container(self) -> dict[str, Any]:
        impl = self.spec.get("implementation")
        container = impl.get("container") if isinstance(impl, dict) else None
        return container if isinstance(container, dict) else {}

    def input(self, ref: str) -> ComponentInput | None:
        return next((i for i in self.inputs if i.ref == ref), None)

    def default_parameters(self) -> dict[str, Any]:
        """component_parameters for a new node: each value input with its default, in the
        ``{"widget", "value"}`` form Elyra's editor writes."""
        out: dict[str, Any] = {}
        for item in self.inputs:
            if item.path:
                continue
            out[item.ref] = {"widget": item.json_type, "value": item.default}
        return out

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("spec")
        data.pop("definition")
        data["image"] = self.image
        data["default_parameters"] = self.default_parameters()
        return data


@dataclass
class CatalogError:
    catalog: str
    location: str
    message: str


@dataclass
class Catalogs:
    components: list[CatalogComponent]
    errors: list[CatalogError]
    names: dict[str, str]  # schema_name -> display names of configured catalogs, for messages

    def get(self, op: str) -> CatalogComponent | None:
        return next((c for c in self.components if c.op == op), None)


def metadata_dirs() -> list[Path]:
    """Where Elyra looks for component-catalog files, first wins (Elyra's order)."""
    import jupyter_core.paths as jp

    paths: list[str] = []
    if os.environ.get("ELYRA_METADATA_PATH"):
        paths += [p.rstrip(os.sep) for p in os.environ["ELYRA_METADATA_PATH"].split(os.pathsep)]
    paths.append(jp.jupyter_data_dir())
    paths += list(jp.SYSTEM_JUPYTER_PATH)
    paths += [p for p in jp.ENV_JUPYTER_PATH if p not in jp.SYSTEM_JUPYTER_PATH]
    return [Path(p) / "metadata" / "component-catalogs" for p in paths]


def components_dir() -> Path:
    """Where Elyra resolves relative catalog paths: ``<sys.prefix>/share/jupyter/components``."""
    import jupyter_core.paths as jp

    return Path(jp.ENV_JUPYTER_PATH[0]) / "components"


def entry_id(schema_name: str, reference: dict[str, Any], keys: tuple[str, ...]) -> str:
    """Elyra's op id of a catalog entry (CatalogEntry.compute_unique_id)."""
    text = ":".join(str(reference[k]) for k in keys if reference.get(k))
    return f"{schema_name}:{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def _instances(dirs: list[Path]) -> list[tuple[str, Path, dict[str, Any] | None, str]]:
    """(name, file, metadata or None, why not) per catalog; a name in an earlier folder wins."""
    found: dict[str, tuple[str, Path, dict[str, Any] | None, str]] = {}
    for folder in reversed(dirs):  # later folders first, so earlier ones replace them
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.json")):
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
                if not isinstance(doc, dict):
                    raise ValueError("not a JSON object")
                found[path.stem] = (path.stem, path, doc, "")
            except (OSError, ValueError) as exc:
                found[path.stem] = (path.stem, path, None, f"unreadable: {exc}")
    return sorted(found.values(), key=lambda item: item[0])


def _entries(schema: str, meta: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """(entry reference, where to read it) per entry, as Elyra's connectors list them."""
    paths = [str(p) for p in meta.get("paths") or [] if isinstance(p, str)]
    if schema == "url-catalog":
        return [({"url": url}, url) for url in paths]
    home = components_dir()
    out: list[tuple[dict[str, Any], str]] = []
    if schema == "local-file-catalog":
        base = str(meta.get("base_path") or "")
        base = _absolute(base, home) if base else ""
        for raw in paths:
            path = os.path.expanduser(raw)
            if not base and not os.path.isabs(path):
                base = str(home)
            out.append(({"base_dir": base, "path": path}, os.path.join(base, path)))
        return out
    pattern = "**/*.yaml" if meta.get("include_subdirs") else "*.yaml"
    for raw in paths:
        base = _absolute(raw, home)
        if not os.path.isdir(base):
            raise FileNotFoundError(f"directory {base!r} not found")
        cut = len(base.split("/"))  # Elyra drops as many leading parts as the base has
        for found in sorted(Path(base).glob(pattern)):
            rel = "/".join(str(found).split("/")[cut:])
            out.append(({"base_dir": base, "path": rel}, str(found)))
    return out


def _absolute(path: str, home: Path) -> str:
    path = os.path.expanduser(path)
    return path if os.path.isabs(path) else str(home / path)


def _read(location: str, schema: str, meta: dict[str, Any]) -> str:
    if schema != "url-catalog":
        return Path(location).read_text(encoding="utf-8")
    request = urllib.request.Request(location)
    if meta.get("auth_id") and meta.get("auth_password"):
        import base64

        token = base64.b64encode(f"{meta['auth_id']}:{meta['auth_password']}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=URL_TIMEOUT_S) as response:
            return str(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise OSError(f"{location} answered HTTP {exc.code}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise OSError(f"{location} is not reachable ({reason})") from None


def parse_component(
    text: str,
) -> tuple[dict[str, Any], list[ComponentInput], list[ComponentOutput]]:
    """A KFP component YAML: the document, its inputs and outputs (Elyra's property ids)."""
    spec = yaml.safe_load(text)
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise ValueError("not a Kubeflow Pipelines component (no 'name')")
    impl = spec.get("implementation")
    container = impl.get("container") if isinstance(impl, dict) else None
    if not isinstance(container, dict) or not container.get("image"):
        raise ValueError("no implementation.container.image")
    args = [*(container.get("command") or []), *(container.get("args") or [])]
    path_names = set(_path_names(args))
    inputs: list[ComponentInput] = []
    for item in spec.get("inputs") or []:
        if not isinstance(item, dict) or not item.get("name"):
            raise ValueError("an input without a name")
        name = str(item["name"])
        kind = str(item.get("type") or "String")
        is_path = name in path_names
        default = item.get("default")
        inputs.append(
            ComponentInput(
                name=name,
                ref=name.lower().replace(" ", "_"),
                type=kind,
                json_type="string" if is_path else _JSON_TYPES.get(kind.lower(), "string"),
                default=_typed(default, kind) if default is not None else None,
                optional=item.get("optional") is True,
                description=str(item.get("description") or ""),
                path=is_path,
            )
        )
    outputs = [
        ComponentOutput(
            name=str(o["name"]),
            ref="output_" + str(o["name"]).lower().replace(" ", "_"),
            type=str(o.get("type") or ""),
            description=str(o.get("description") or ""),
        )
        for o in spec.get("outputs") or []
        if isinstance(o, dict) and o.get("name")
    ]
    return spec, inputs, outputs


def _path_names(items: list[Any]) -> list[str]:
    found: list[str] = []
    for item in items:
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "inputPath":
                    found.append(str(value))
                elif isinstance(value, list):
                    found += _path_names(value)
                elif isinstance(value, dict):
                    found += _path_names([value])
    return found


def _typed(value: Any, kind: str) -> Any:
    """A default written as text in the YAML, as the input's type."""
    json_type = _JSON_TYPES.get(kind.lower(), "string")
    try:
        if json_type == "integer" and not isinstance(value, bool):
            return int(value)
        if json_type == "number" and not isinstance(value, bool):
            return float(value)
        if json_type == "boolean" and isinstance(value, str):
            return value.strip().lower() == "true"
        if json_type in ("object", "array") and isinstance(value, str):
            return json.loads(value)
    except (TypeError, ValueError):
        return value
    return value if json_type != "string" else str(value)


def load_catalogs(dirs: list[Path] | None = None) -> Catalogs:
    """Every configured catalog's components, and what could not be read (never raises)."""
    components: list[CatalogComponent] = []
    errors: list[CatalogError] = []
    names: dict[str, str] = {}
    for name, path, doc, why in _instances(dirs if dirs is not None else metadata_dirs()):
        if doc is None:
            errors.append(CatalogError(name, str(path), why))
            continue
        schema = str(doc.get("schema_name") or "")
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        display = str(doc.get("display_name") or name)
        if schema not in SCHEMAS:
            errors.append(
                CatalogError(
                    display,
                    str(path),
                    f"catalog type {schema!r} is not read by "
                    f"cube-lab; it reads {', '.join(SCHEMAS)}",
                )
            )
            continue
        names.setdefault(schema, display)
        if meta.get("runtime_type") != KFP:
            errors.append(
                CatalogError(
                    display,
                    str(path),
                    f"runtime_type {meta.get('runtime_type')!r}: cube-lab reads Kubeflow "
                    f"Pipelines component catalogs ({KFP}) only",
                )
            )
            continue
        try:
            entries = _entries(schema, meta)
        except OSError as exc:
            errors.append(CatalogError(display, str(path), str(exc)))
            continue
        keys = ("url",) if schema == "url-catalog" else ("path",)
        for reference, location in entries:
            try:
                text = _read(location, schema, meta)
                spec, inputs, outputs = parse_component(text)
            except (OSError, ValueError, yaml.YAMLError) as exc:
                errors.append(CatalogError(display, location, str(exc)))
                continue
            description = " ".join(str(spec.get("description") or "").split())
            components.append(
                CatalogComponent(
                    op=entry_id(schema, reference, keys),
                    name=str(spec["name"]),
                    description=description,
                    catalog=display,
                    catalog_name=name,
                    schema_name=schema,
                    categories=[str(c) for c in meta.get("categories") or []],
                    source=reference,
                    inputs=inputs,
                    outputs=outputs,
                    definition=text,
                    spec=spec,
                )
            )
    return Catalogs(components, errors, names)


_lock = threading.Lock()
_cache: dict[tuple[Any, ...], tuple[float, Catalogs]] = {}


def catalogs() -> Catalogs:
    """:func:`load_catalogs`, kept a few seconds (validation asks once per node)."""
    dirs = metadata_dirs()
    stamp: list[Any] = []
    for folder in dirs:
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                stamp.append((str(path), path.stat().st_mtime_ns))
            except OSError:
                continue
    key = tuple(stamp)
    with _lock:
        hit = _cache.get(key)
        if hit and time.monotonic() - hit[0] < CACHE_S:
            return hit[1]
    loaded = load_catalogs(dirs)
    with _lock:
        _cache.clear()
        _cache[key] = (time.monotonic(), loaded)
    return loaded


def clear_cache() -> None:
    with _lock:
        _cache.clear()


# -- the node kind ----------------------------------------------------------------------------

HOW_TO_ADD = _t(
    "Add the catalog that holds it: a JSON file in <jupyter data dir>/metadata/component-catalogs/ "
    "(as Elyra writes it, e.g. `elyra-metadata create component-catalogs --schema_name="
    "local-directory-catalog --display_name=My components --runtime_type=KUBEFLOW_PIPELINES "
    "--paths=\"['/path/to/components']\"`)."
)


def _value(entry: Any) -> tuple[str | None, Any]:
    """(widget, value) of one component parameter; a bare value (older files) is a value."""
    if isinstance(entry, dict) and "widget" in entry:
        return entry.get("widget"), entry.get("value")
    return None, entry


def _type_ok(value: Any, json_type: str) -> bool:
    if json_type == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if json_type == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if json_type == "boolean":
        return isinstance(value, bool)
    if json_type == "string":
        return isinstance(value, str | int | float) and not isinstance(value, bool)
    return True  # objects and arrays may be JSON text or the value itself


class CatalogKind:
    """A node whose op is a catalog component's id (one instance serves every such op)."""

    name = "catalog"
    display_name = "Catalog component"
    ops: tuple[str, ...] = ()

    def component(self, op: str) -> CatalogComponent | None:
        return catalogs().get(op)

    def check(self, node: Node, ctx: Any) -> list[Any]:
        from .nodekinds import Problem

        found = catalogs()
        component = found.get(node.op)
        if component is None:
            schema = node.op.split(":", 1)[0]
            where = (
                _t(
                    "the configured {schema} catalogs ({names})",
                    schema=schema,
                    names=found.names[schema],
                )
                if schema in found.names
                else _t("no configured catalog of type {schema!r}", schema=schema)
            )
            return [
                Problem(
                    node.id,
                    "op",
                    _t(
                        "component {op!r} is not in any component catalog ({where}). {how}",
                        op=node.op,
                        where=where,
                        how=HOW_TO_ADD,
                    ),
                    node.label,
                )
            ]
        problems: list[Problem] = []
        for item in component.inputs:
            widget, value = _value(node.params.get(item.ref))
            if value is None or (value == "" and widget == "inputpath"):
                if not item.optional:
                    problems.append(
                        Problem(
                            node.id,
                            item.ref,
                            _t("required input {name!r} has no value", name=item.name),
                            node.label,
                        )
                    )
                continue
            if widget == "inputpath":
                if not (isinstance(value, dict) and {"value", "option"} <= set(value)):
                    problems.append(
                        Problem(
                            node.id,
                            item.ref,
                            _t(
                                "input {name!r} takes a parent's output as "
                                "{{'value': <node id>, 'option': 'output_<name>'}}",
                                name=item.name,
                            ),
                            node.label,
                        )
                    )
                continue
            if widget == "parameter":
                if not isinstance(value, str) or not value:
                    problems.append(
                        Problem(node.id, item.ref, _t("names no pipeline parameter"), node.label)
                    )
                continue
            if widget == "file":
                try:
                    containment.resolve(
                        ctx.root,
                        value,
                        base=ctx.root,
                        absolute="refuse",
                        what=item.ref,
                        where="the project",
                    )
                except containment.PathRefused as exc:
                    problems.append(Problem(node.id, item.ref, exc.error, node.label))
                continue
            if item.path:
                problems.append(
                    Problem(
                        node.id,
                        item.ref,
                        _t(
                            "input {name!r} is a file (inputPath): "
                            "link a parent node's output to it",
                            name=item.name,
                        ),
                        node.label,
                    )
                )
            elif not _type_ok(value, item.json_type):
                problems.append(
                    Problem(
                        node.id,
                        item.ref,
                        _t(
                            "input {name!r} is a {type}, got {value!r}",
                            name=item.name,
                            type=item.type,
                            value=value,
                        ),
                        node.label,
                    )
                )
        return problems

    # -- local runs -------------------------------------------------------------------------

    def command(self, node: Node, ctx: Any) -> Any:
        from .nodekinds import NodeCommand
        from .runner import node_folder

        component = self.component(node.op)
        if component is None:
            raise CubeError(
                _t("component {op!r} is not in any component catalog", op=node.op), HOW_TO_ADD
            )
        assert ctx.run_dir is not None
        outputs = ctx.run_dir / "outputs"

        def value_of(name: str) -> Any:
            item = next(i for i in component.inputs if i.name == name)
            widget, value = _value(node.params.get(item.ref))
            if widget == "parameter":
                value = ctx.params.get(value, item.default)
            elif widget == "file" and value:
                value = containment.resolve(
                    ctx.root,
                    value,
                    base=ctx.root,
                    absolute="refuse",
                    what=item.ref,
                    where="the project",
                ).read_text()
            if value is None or value == "":
                value = item.default
            return value

        def path_of(name: str) -> str:
            item = next(i for i in component.inputs if i.name == name)
            _, ref = _value(node.params.get(item.ref))
            if not isinstance(ref, dict):
                raise CubeError(_t("input {name!r} has no parent output linked", name=name))
            option = str(ref.get("option", "")).removeprefix("output_")
            parent = ctx.run_dir.parent / node_folder(str(ref.get("value"))) / "outputs"
            for candidate in sorted(parent.glob("*")) if parent.is_dir() else []:
                if candidate.name.lower().replace(" ", "_") == option:
                    return str(candidate)
            raise CubeError(
                _t(
                    "input {name!r}: the parent's output {option!r} was not produced",
                    name=name,
                    option=option,
                )
            )

        def out_path(name: str) -> str:
            outputs.mkdir(parents=True, exist_ok=True)
            return str(outputs / name)

        def expand(item: Any) -> list[str]:
            if not isinstance(item, dict):
                return [str(item)]
            ((key, arg),) = item.items()
            if key == "inputValue":
                value = value_of(str(arg))
                if value is None:
                    return []
                if isinstance(value, dict | list):
                    return [json.dumps(value)]
                return ["true" if value is True else "false" if value is False else str(value)]
            if key == "inputPath":
                return [path_of(str(arg))]
            if key == "outputPath":
                return [out_path(str(arg))]
            if key == "concat":
                return ["".join(s for part in arg for s in expand(part))]
            if key == "if":
                cond = arg.get("cond")
                present = (
                    isinstance(cond, dict) and value_of(str(cond.get("isPresent"))) is not None
                )
                chosen = arg.get("then" if present or cond is True or cond == "true" else "else")
                return [s for part in chosen or [] for s in expand(part)]
            raise CubeError(
                _t(
                    "component {name!r}: placeholder {key!r} is not supported",
                    name=component.name,
                    key=key,
                )
            )

        container = component.container
        argv = [
            s
            for part in [*(container.get("command") or []), *(container.get("args") or [])]
            for s in expand(part)
        ]
        if not argv:
            raise CubeError(
                _t("component {name!r} has no container command", name=component.name),
                _t(
                    (
                        "It runs its image's entry point ({image}); run the pipeline on "
                        "Kubeflow Pipelines."
                    ),
                    image=component.image,
                ),
            )
        program = shutil.which(argv[0])
        if program is None:
            raise CubeError(
                _t(
                    (
                        "component {name!r} runs {value!r} in the container image {image!r}, "
                        "and {value!r} is not on this machine"
                    ),
                    name=component.name,
                    value=argv[0],
                    image=component.image,
                ),
                _t(
                    "Local runs start a component's command directly, without a container"
                    " runtime. Run the pipeline on a Kubeflow Pipelines cluster (Export "
                    "for Kubeflow Pipelines), or install the command here."
                ),
            )
        env = {"CUBE_COMPONENT_IMAGE": component.image}
        return NodeCommand([program, *argv[1:]], ctx.run_dir, env=env)

    def inputs(self, node: Node, ctx: Any) -> list[Path]:
        return []


CATALOG_KIND = CatalogKind()


def kind_for(op: str) -> CatalogKind | None:
    """The catalog kind for an op that looks like a catalog component's id."""
    return CATALOG_KIND if CATALOG_OP.match(op) else None
