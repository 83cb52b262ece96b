"""The "finetune" node kind: found through its entry point, bad configs are Problems on the
right field, and a real run fine-tunes a tiny model, registers it, and hands ``model_ref`` to
the next node, which loads the registered version."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pipeline_util import node, script, write_pipeline

from cube_lab.finetune import tiny
from cube_lab.finetune.nodekind import OP_FINETUNE
from cube_lab.identity import Caller
from cube_lab.pipelines.nodekinds import node_kinds
from cube_lab.pipelines.validation import PipelineInvalid

ALICE = Caller("alice")

CONFIG = {
    "model": "base",
    "data": {"path": "alpaca.json"},
    "lora": {"rank": 8, "alpha": 16},
    "learning_rate": 0.01,
    "max_steps": 50,  # the node overrides it
    "per_device_train_batch_size": 4,
    "logging_steps": 1,
    "cutoff_len": 128,
}

LOAD = """\
import os
from cube_lab.config import local_username
from cube_lab.finetune.service import FinetuneService
from cube_lab.identity import Caller
from cube_lab.workspace import default_workspace

name, version = os.environ["MODEL_REF"].split(":")
model, tokenizer = FinetuneService(default_workspace()).load(
    Caller(local_username()), os.environ["PROJECT"], name, int(version)
)
print("loaded", os.environ["MODEL_REF"], type(model).__name__, flush=True)
"""


def project(folder: Path, **changes: Any) -> Path:
    """The tiny base model, its data and ``ft.yaml`` in ``folder``."""
    (folder / "alpaca.json").write_text(json.dumps(tiny.alpaca_rows()))
    tiny.build(folder / "base", [json.dumps(r) for r in tiny.alpaca_rows()])
    (folder / "ft.yaml").write_text(yaml.safe_dump({**CONFIG, **changes}))
    return folder


def config_only(folder: Path) -> Path:
    """What checking reads (no model weights): ``ft.yaml``, its data, a base's config.json."""
    (folder / "alpaca.json").write_text("[]")
    (folder / "base").mkdir()
    (folder / "base" / "config.json").write_text("{}")
    (folder / "ft.yaml").write_text(yaml.safe_dump(CONFIG))
    return folder


def test_the_kind_is_registered_through_its_entry_point() -> None:
    kind = node_kinds()[OP_FINETUNE]
    assert kind.name == "finetune" and kind.display_name == "Fine-tune LLM"
    assert {"register", "nproc", "max_steps", "learning_rate"} <= set(kind.schema["properties"])


def test_the_cache_key_covers_the_data_file(tmp_path: Path) -> None:
    from cube_lab.pipelines.model import Node
    from cube_lab.pipelines.nodekinds import NodeContext

    config_only(tmp_path)
    kind = node_kinds()[OP_FINETUNE]
    ft = Node("ft", OP_FINETUNE, "ft", {"filename": "ft.yaml"}, [])
    found = kind.inputs(ft, NodeContext(tmp_path, tmp_path, None))
    assert found == [tmp_path / "ft.yaml", tmp_path / "alpaca.json"]


def test_bad_configs_are_problems_on_the_field(ws: Any, tmp_path: Path) -> None:
    config_only(tmp_path)
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({**CONFIG, "method": "magic"}))
    (tmp_path / "nomodel.yaml").write_text(yaml.safe_dump({**CONFIG, "model": "missing"}))
    path = write_pipeline(
        tmp_path,
        [
            node("method", OP_FINETUNE, filename="bad.yaml"),
            node("model", OP_FINETUNE, filename="nomodel.yaml"),
            node("lr", OP_FINETUNE, filename="ft.yaml", learning_rate=5.0),
            node("name", OP_FINETUNE, filename="ft.yaml", register="no spaces allowed"),
            node("procs", OP_FINETUNE, filename="ft.yaml", nproc=0),
            node("py", OP_FINETUNE, filename="alpaca.json.py"),
            node("good", OP_FINETUNE, filename="ft.yaml", max_steps=2, register="ok-name"),
        ],
    )
    with pytest.raises(PipelineInvalid) as caught:
        ws.pipelines.prepare(ALICE, path, tmp_path)
    found = {(p.node_id, p.field): p.message for p in caught.value.problems}
    assert "method" in found[("method", "filename")] and "bad.yaml" in found[("method", "filename")]
    assert "'missing' is neither a folder nor a registered" in found[("model", "filename")]
    assert found[("lr", "learning_rate")].startswith("learning_rate must be from 0 to 1")
    assert "invalid model name" in found[("name", "register")]
    assert ("procs", "nproc") in found
    assert ("py", "filename") in found  # not found (and not a .yaml/.yml/.json file)
    assert not [k for k in found if k[0] == "good"]
    assert ws.training.list(ALICE) == []  # nothing was launched


def test_a_finetune_node_registers_a_version_the_next_node_loads(ws: Any, tmp_path: Path) -> None:
    project(tmp_path)
    script(tmp_path, "use.py", LOAD)
    path = write_pipeline(
        tmp_path,
        [
            node("ft", OP_FINETUNE, filename="ft.yaml", register="tiny-chat", max_steps=2),
            node(
                "use",
                upstream=("ft",),
                filename="use.py",
                env_vars=[
                    {"env_var": "MODEL_REF", "value": "{{ nodes.ft.values.model_ref }}"},
                    {"env_var": "PROJECT", "value": "{{ nodes.ft.values.project }}"},
                ],
            ),
        ],
    )
    runner, recorder = ws.pipelines.prepare(ALICE, path, tmp_path)
    assert ws.pipelines.run_foreground(runner, recorder) == "succeeded"
    view = ws.pipelines.get_run(ALICE, runner.plan.run_id)
    ft = next(n for n in view.nodes if n.id == "ft")
    values = ft.values
    assert ft.kind == "finetune" and values["status"] == "succeeded"
    assert values["model_ref"] == f"tiny-chat:{values['version']}" and values["version"] == 1
    assert values["project"] == "alice" and values["model"] == "tiny-chat"
    assert isinstance(values["final_loss"], float) and "metric_loss" in values
    job = ws.training.get(ALICE, values["job_id"])  # a job of the Training panel too
    assert job.status == "succeeded" and values["output_dir"] == job.output_dir
    assert Path(job.output_dir).is_relative_to(tmp_path)  # in the run's node folder
    meta = json.loads((Path(job.output_dir) / "model" / "cube_finetune.json").read_text())
    assert meta["steps"] == 2  # the node's max_steps over the config's 50
    version = ws.registry.get_version(ALICE, "alice", "tiny-chat", 1)
    assert version.flavor == "peft" and version.lineage.training_job_id == values["job_id"]
    log = ws.pipelines.tail_log(ALICE, view.id, "use", 0).text
    assert "loaded tiny-chat:1 " in log
    ft_log = ws.pipelines.tail_log(ALICE, view.id, "ft", 0).text
    assert "registered alice/tiny-chat:1" in ft_log


async def test_under_the_hub_the_node_runs_and_registers_at_the_service(
    api: Any,
    jp_root_dir: Path,
    jp_http_port: int,
    jp_base_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A node the service started (its job token, no store) posts the config to the service
    (a real jupyter server with cube-lab), follows the job there, registers it there."""
    import asyncio
    import sys

    from cube_lab.finetune.nodekind import ENV_SPEC

    await api("alice", "GET", "whoami")  # the server is up
    work = jp_root_dir / "work"
    work.mkdir()
    project(work)
    spec = {
        "config": {**CONFIG, "max_steps": 1},
        "base_dir": str(work),
        "nproc": 1,
        "register": "hub-chat",
    }
    values = tmp_path / "values.json"
    monkeypatch.setenv(ENV_SPEC, json.dumps(spec))
    monkeypatch.setenv("CUBE_VALUES_FILE", str(values))
    monkeypatch.setenv("CUBE_LAB_SERVICE_URL", f"http://localhost:{jp_http_port}{jp_base_url}")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "alice-secret")
    monkeypatch.setenv("CUBE_LAB_ROOT_DIR", str(jp_root_dir))
    monkeypatch.delenv("CUBE_LAB_DATA_DIR", raising=False)
    child = await asyncio.create_subprocess_exec(  # as the runner starts it
        sys.executable, "-m", "cube_lab.finetune.node_main",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out = (await child.communicate())[0].decode()
    assert child.returncode == 0, out
    got = json.loads(values.read_text())
    assert got["status"] == "succeeded" and got["model_ref"] == "hub-chat:1", got
    assert got["project"] == "alice" and "final_loss" in got
    assert "registered alice/hub-chat:1" in out
    status, version = await api("alice", "GET", "projects/alice/models/hub-chat/versions/1")
    assert status == 200 and version["flavor"] == "peft"
    assert version["lineage"]["training_job_id"] == got["job_id"]
