"""The job template catalog: loading, parameter validation, commands and the runtime contract."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

import cube_lab
from cube_lab.errors import InvalidInput, NotFound
from cube_lab.jobtemplates import (
    CATEGORIES,
    ENV_TEMPLATE_PATH,
    JobTemplate,
    TemplateCatalog,
    default_template_dirs,
    read_values,
    run_template,
)

SHIPPED = Path(cube_lab.__file__).resolve().parents[1] / "templates"
EXPECTED = {
    "read-data",
    "split-data",
    "train-sklearn",
    "evaluate",
    "register-model",
    "batch-predict",
}

GOOD = """\
name: {name}
display_name: Echo
category: Data
description: Prints its parameters.
command: ["python", "{{template_dir}}/echo.py", "{{greeting}}"]
parameters:
  type: object
  additionalProperties: false
  required: [greeting]
  properties:
    greeting: {{type: string, title: Greeting, description: What to say}}
    times: {{type: integer, minimum: 1, default: 2, title: Times, description: How often}}
    out_path: {{type: string, format: path, default: out.txt, title: Out, description: File}}
outputs:
  - name: out
    parameter: out_path
    description: The echo.
"""

# The script behind GOOD: reports what the runner handed it, the way template code sees it.
ECHO = """\
import json, os, pathlib, sys
params = json.loads(os.environ["CUBE_PARAMS"])
pathlib.Path(params["out_path"]).write_text(" ".join([sys.argv[1]] * params["times"]))
report = {"cwd": os.getcwd(), "params": params, "run_id": os.environ.get("CUBE_RUN_ID")}
pathlib.Path(os.environ["CUBE_VALUES_FILE"]).write_text(json.dumps(report))
print("echoed")
"""


def make_template(root: Path, name: str, text: str | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "template.yaml").write_text(text if text is not None else GOOD.format(name=name))
    (folder / "echo.py").write_text(ECHO)
    return folder


@pytest.fixture
def shipped() -> TemplateCatalog:
    return TemplateCatalog([SHIPPED])


# -- shipped templates ------------------------------------------------------------------


def test_shipped_templates_load_without_errors(shipped: TemplateCatalog) -> None:
    assert shipped.errors == []
    assert set(shipped.names()) >= EXPECTED
    for template in shipped.list():
        assert template.category in CATEGORIES
        assert template.image
        script = Path(template.command({**_required_dummies(template)})[1])
        assert script.is_file(), f"{template.name}: {script} is missing"


def _required_dummies(template: JobTemplate) -> dict[str, object]:
    props = template.parameters["properties"]
    return {n: "x" for n in template.parameters.get("required", []) if props[n]["type"] == "string"}


def test_every_shipped_parameter_is_documented(shipped: TemplateCatalog) -> None:
    for template in shipped.list():
        required = set(template.parameters.get("required", []))
        for name, prop in template.parameters["properties"].items():
            where = f"{template.name}.{name}"
            assert prop.get("title") and prop.get("description"), f"{where} needs title/description"
            assert name in required or "default" in prop, f"{where} needs a default"
        for output in template.outputs:
            prop = template.parameters["properties"][output.parameter]
            assert prop.get("format") == "path", f"{template.name}: output {output.name}"


def test_train_estimator_enum_matches_the_script(shipped: TemplateCatalog) -> None:
    template = shipped.get("train-sklearn")
    spec = importlib.util.spec_from_file_location("cube_train", template.directory / "train.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    enum = template.parameters["properties"]["estimator"]["enum"]
    assert enum == list(module.ESTIMATORS)


def test_to_json_is_what_the_ui_needs(shipped: TemplateCatalog) -> None:
    data = json.loads(json.dumps(shipped.to_json()))
    assert data["errors"] == []
    split = next(t for t in data["templates"] if t["name"] == "split-data")
    assert split["display_name"] and split["category"] == "Data" and split["description"]
    assert split["parameters"]["properties"]["test_size"]["default"] == 0.2
    assert [o["name"] for o in split["outputs"]] == ["train", "test"]


# -- parameters ---------------------------------------------------------------------------


def test_validate_fills_defaults_without_touching_the_input(shipped: TemplateCatalog) -> None:
    given = {"input_path": "iris.csv"}
    params = shipped.get("split-data").validate_params(given)
    assert given == {"input_path": "iris.csv"}
    assert params == {
        "input_path": "iris.csv",
        "test_size": 0.2,
        "random_state": 42,
        "stratify": "",
        "shuffle": True,
        "train_path": "data/train.csv",
        "test_path": "data/test.csv",
    }
    params["train_path"] = "changed"
    assert shipped.get("split-data").parameters["properties"]["train_path"]["default"] != "changed"


@pytest.mark.parametrize(
    ("template", "params", "parameter", "rule"),
    [
        ("split-data", {"input_path": "a.csv", "test_size": 1.5}, "test_size", "exclusiveMaximum"),
        ("split-data", {"input_path": "a.csv", "test_size": "0.2"}, "test_size", "type"),
        ("split-data", {"input_path": "a.csv", "tset_size": 0.3}, "tset_size", "additional"),
        ("train-sklearn", {"train_path": "t.csv"}, "target", "required"),
        (
            "train-sklearn",
            {"train_path": "t.csv", "target": "y", "estimator": "xgb"},
            "estimator",
            "enum",
        ),
        ("register-model", {"model_path": "m", "name": "bad name!"}, "name", "pattern"),
        ("read-data", {"input_path": "a.csv", "columns": ["a", 3]}, "columns.1", "type"),
    ],
)
def test_bad_params_name_the_parameter_and_rule(
    shipped: TemplateCatalog, template: str, params: dict, parameter: str, rule: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        shipped.get(template).validate_params(params)
    err = info.value
    assert repr(parameter) in err.error and rule in err.error
    assert err.detail["template"] == template
    assert err.detail["problems"][0]["parameter"] == parameter
    assert err.status == 400


def test_every_broken_rule_is_listed(shipped: TemplateCatalog) -> None:
    with pytest.raises(InvalidInput) as info:
        shipped.get("split-data").validate_params({"test_size": 0, "shuffle": "yes"})
    problems = {(p["parameter"], p["rule"]) for p in info.value.detail["problems"]}
    assert problems == {
        ("input_path", "required"),
        ("test_size", "exclusiveMinimum"),
        ("shuffle", "type"),
    }
    assert "test_size" in info.value.detail["known_parameters"]


def test_params_must_be_an_object(shipped: TemplateCatalog) -> None:
    with pytest.raises(InvalidInput, match="must be an object"):
        shipped.get("read-data").validate_params(["iris.csv"])  # type: ignore[arg-type]


# -- commands, outputs, contract -----------------------------------------------------------


def test_command_substitutes_folder_parameters_and_python(tmp_path: Path) -> None:
    folder = make_template(tmp_path, "echo")
    template = TemplateCatalog([tmp_path]).get("echo")
    assert template.command({"greeting": "hi"}) == ["python", f"{folder}/echo.py", "hi"]
    argv = template.command({"greeting": "hi"}, python=sys.executable)
    assert argv[0] == sys.executable
    with pytest.raises(InvalidInput, match="'greeting'"):
        template.command({})


def test_outputs_and_inputs(shipped: TemplateCatalog) -> None:
    evaluate = shipped.get("evaluate")
    params = evaluate.validate_params({"model_path": "m.joblib", "test_path": "t.csv"})
    assert evaluate.output_paths(params) == {
        "metrics": "metrics/metrics.json",
        "plot": "metrics/confusion_matrix.png",
    }
    assert evaluate.input_parameters() == ["model_path", "test_path"]


def test_runner_contract_cwd_params_values_run_id(tmp_path: Path) -> None:
    make_template(tmp_path / "templates", "echo")
    template = TemplateCatalog([tmp_path / "templates"]).get("echo")
    pipeline_dir = tmp_path / "pipeline"
    pipeline_dir.mkdir()
    result = run_template(template, {"greeting": "hi"}, pipeline_dir, run_id="run-7")
    assert result.ok, result.stderr
    assert result.stdout.strip() == "echoed"
    assert Path(result.values["cwd"]) == pipeline_dir.resolve()
    assert result.values["params"] == {"greeting": "hi", "times": 2, "out_path": "out.txt"}
    assert result.values["run_id"] == "run-7"
    assert (pipeline_dir / "out.txt").read_text() == "hi hi"  # relative to the pipeline folder


def test_read_values_rejects_what_is_not_a_small_object(tmp_path: Path) -> None:
    path = tmp_path / "values.json"
    assert read_values(path) == {}
    path.write_text('{"accuracy": 0.9, "classes": ["a"]}')
    assert read_values(path) == {"accuracy": 0.9, "classes": ["a"]}
    for text, message in [
        ("[1, 2]", "JSON object"),
        ("{not json", "not valid JSON"),
        ('{"x": NaN}', "not valid JSON"),
        ('{"x": 1e999}', "not finite"),
        ('{"x": "' + "a" * (1 << 20) + '"}', "byte limit"),
    ]:
        path.write_text(text)
        with pytest.raises(InvalidInput, match=message):
            read_values(path)


# -- catalog --------------------------------------------------------------------------------


def test_unknown_template_lists_known_names(shipped: TemplateCatalog) -> None:
    with pytest.raises(NotFound) as info:
        shipped.get("train-sklearm")
    assert info.value.status == 404
    assert "Did you mean 'train-sklearn'?" in info.value.detail
    assert "read-data" in info.value.detail and str(SHIPPED) in info.value.detail


MALFORMED = {
    "bad-yaml": ("name: bad-yaml\ncommand: [python\n", "not valid YAML (line"),
    "not-mapping": ("- just\n- a list\n", "must be a mapping"),
    "wrong-name": (GOOD.format(name="other"), "must equal the folder name 'wrong-name'"),
    "bad-category": (GOOD.format(name="bad-category").replace("Data", "Stuff"), "'category'"),
    "no-command": (GOOD.format(name="no-command").replace("command:", "x-command:"), "'command'"),
    "typo-key": (GOOD.format(name="typo-key") + "imgae: x\n", "unknown keys ['imgae']"),
    "bad-schema": (
        GOOD.format(name="bad-schema").replace("type: integer", "type: integr"),
        "not a valid JSON Schema",
    ),
    "bad-default": (
        GOOD.format(name="bad-default").replace("default: 2", "default: 0"),
        "default of parameter 'times' is invalid",
    ),
    "bad-output": (
        GOOD.format(name="bad-output").replace("parameter: out_path", "parameter: nope"),
        "output 'out': 'parameter' must name a string parameter",
    ),
    "bad-placeholder": (
        GOOD.format(name="bad-placeholder").replace("{greeting}", "{greting}"),
        "'command' uses {greting}",
    ),
}


def test_malformed_templates_are_reported_and_skipped(tmp_path: Path) -> None:
    make_template(tmp_path, "good")
    for name, (text, _) in MALFORMED.items():
        make_template(tmp_path, name, text)
    (tmp_path / "_drafts").mkdir()  # folders without template.yaml or starting with _ are ignored
    catalog = TemplateCatalog([tmp_path])
    assert catalog.names() == ["good"]
    reported = {e.path.parent.name: " | ".join(e.problems) for e in catalog.errors}
    assert set(reported) == set(MALFORMED)
    for name, (_, expected) in MALFORMED.items():
        assert expected in reported[name], f"{name}: {reported[name]}"
    for error in catalog.errors:
        assert error.path.name == "template.yaml" and error.path.is_file()
    with pytest.raises(NotFound) as info:
        catalog.get("bad-default")
    assert "failed to load" in info.value.detail
    json.dumps([e.to_json() for e in catalog.errors])


def test_reload_picks_up_new_templates(tmp_path: Path) -> None:
    catalog = TemplateCatalog([tmp_path, tmp_path / "missing"])
    assert catalog.list() == []
    make_template(tmp_path, "late")
    catalog.reload()
    assert "late" in catalog


def test_template_path_env_comes_first_and_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = tmp_path / "mine"
    make_template(own, "read-data", GOOD.format(name="read-data"))
    monkeypatch.setenv(ENV_TEMPLATE_PATH, f"{own}{os.pathsep}{tmp_path / 'none'}")
    dirs = default_template_dirs()
    assert dirs[:2] == [own, tmp_path / "none"]
    assert SHIPPED in dirs
    catalog = TemplateCatalog()
    assert catalog.get("read-data").directory == (own / "read-data").resolve()
    assert "train-sklearn" in catalog
