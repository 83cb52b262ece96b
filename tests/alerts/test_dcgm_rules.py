"""deploy/grafana/cube-lab-dcgm-rules.yml: the recording rules that join dcgm-exporter's GPU
series to cube-lab's objects by the pod labels of cube_lab/k8s/pod_labels.py.

Static checks always run: the file parses as Prometheus rule groups, every ``label_*`` name in
the rules and the dashboard is kube-state-metrics' name of a label in the vocabulary (computed
from the module), the join carries the whole vocabulary, every ``cube:`` series a panel reads is
recorded, and prometheus.yml loads the rules and shows the allowlist flag of
``pod_labels.allowlist()``. With ``promtool`` on PATH (or ``$PROMTOOL``) the rules, the config
and a unit test of synthetic series (pods labelled by the real ``pod_labels`` functions) run
through Prometheus' own rule engine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from cube_lab.k8s import pod_labels

FOLDER = Path(__file__).resolve().parents[2] / "deploy" / "grafana"
RULES = FOLDER / "cube-lab-dcgm-rules.yml"
DASHBOARD = FOLDER / "cube-lab-gpus.json"
PROMETHEUS = FOLDER / "prometheus.yml"
# dcgm-exporter's pod-mapping labels (its transformation code: podAttribute "pod",
# namespaceAttribute "namespace", containerAttribute "container")
DCGM_POD_LABELS = ("namespace", "pod")


def _rules() -> list[dict[str, Any]]:
    data = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    return [rule for group in data["groups"] for rule in group["rules"]]


def _labels_used(expr: str) -> set[str]:
    return set(re.findall(r"\blabel_[A-Za-z0-9_]+", expr))


def _series_used(expr: str) -> set[str]:
    return set(re.findall(r"\bcube:[A-Za-z0-9_:]+", expr))


def _panel_exprs() -> list[tuple[str, str]]:
    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [(p["title"], t["expr"]) for p in dash["panels"] for t in p.get("targets", [])]


def _promtool() -> str | None:
    return os.environ.get("PROMTOOL") or shutil.which("promtool")


def test_rules_parse_as_rule_groups() -> None:
    data = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    assert set(data) == {"groups"}
    names = [g["name"] for g in data["groups"]]
    assert len(names) == len(set(names))
    records = [r["record"] for r in _rules()]
    assert len(records) == len(set(records)), "a series recorded twice"
    for rule in _rules():
        assert set(rule) <= {"record", "expr", "labels"}, rule
        # Prometheus' naming convention for recorded series: level:metric:operations
        assert re.fullmatch(r"cube:[a-z0-9_]+:[a-z0-9_]+", rule["record"]), rule["record"]
        assert isinstance(rule["expr"], str) and rule["expr"].count("(") == rule["expr"].count(")")


def test_every_label_is_a_sanitised_pod_label() -> None:
    vocabulary = {pod_labels.prometheus_name(k) for k in pod_labels.ALL_LABELS}
    assert vocabulary == pod_labels.PROMETHEUS_LABELS
    assert "label_cube_lab_io_project" in vocabulary  # the sanitising itself
    used: set[str] = set()
    for rule in _rules():
        used |= _labels_used(rule["expr"])
    for _, expr in _panel_exprs():
        used |= _labels_used(expr)
    legends = json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]
    for panel in legends:
        for target in panel.get("targets", []):
            used |= _labels_used(target.get("legendFormat", ""))
    assert used, "the rules use no pod label"
    assert used <= vocabulary, f"not in pod_labels.py: {sorted(used - vocabulary)}"


def test_the_label_check_can_fail() -> None:
    assert _labels_used("x * on (pod) group_left (label_cube_lab_io_projekt) y") == {
        "label_cube_lab_io_projekt"
    }
    assert "label_cube_lab_io_projekt" not in pod_labels.PROMETHEUS_LABELS


def test_the_join_carries_the_whole_vocabulary_on_dcgm_pod_labels() -> None:
    joins = [r for r in _rules() if "kube_pod_labels" in r["expr"]]
    assert {r["record"] for r in joins} == {
        "cube:dcgm_gpu_util:by_pod",
        "cube:dcgm_fb_used_mib:by_pod",
    }
    for rule in joins:
        expr = " ".join(rule["expr"].split())
        on = re.search(r"\bon \(([^)]*)\)", expr)
        assert on and [x.strip() for x in on.group(1).split(",")] == list(DCGM_POD_LABELS)
        kept = re.search(r"group_left \(([^)]*)\)", expr)
        assert kept
        assert {x.strip() for x in kept.group(1).split(",")} == pod_labels.PROMETHEUS_LABELS
        assert re.match(r"DCGM_FI_DEV_[A-Z_]+\{pod!=\"\"\}", expr)


def test_panels_read_recorded_series() -> None:
    records = {r["record"] for r in _rules()}
    read: set[str] = set()
    for title, expr in _panel_exprs():
        names = _series_used(expr)
        if names:
            assert title.startswith("[DCGM by object]"), title
        missing = names - records
        assert not missing, f"{title}: {sorted(missing)} is recorded by no rule"
        read |= names
    assert read, "no panel reads the recorded series"
    # the aggregates are each on a panel (the by_pod series are their inputs)
    assert {r for r in records if ":by_pod" not in r} <= read | {"cube:dcgm_gpus:count_by_object"}
    for rule in _rules():  # rules read only what earlier rules record
        assert _series_used(rule["expr"]) <= records


def test_prometheus_config_loads_the_rules_and_shows_the_allowlist() -> None:
    text = PROMETHEUS.read_text(encoding="utf-8")
    config = yaml.safe_load(text)
    assert [FOLDER / f for f in config["rule_files"]] == [RULES]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["dcgm"]["honor_labels"] is True
    assert f"--metric-labels-allowlist={pod_labels.allowlist()}" in text


def _unit_test_file(tmp: Path) -> Path:
    """A promtool unit test: three GPU pods labelled by the real vocabulary, a foreign pod and
    an idle GPU; two kube-state-metrics replicas report the job's pod."""
    ns_a, ns_b = "cube-team-a", "cube-team-b"
    job = pod_labels.job("team-a", "alice", "20261203-101500-ab12cd")
    dep = pod_labels.deployment("Team B", "bob", "d-42")  # a project name that gets escaped
    name = pod_labels.prometheus_name

    def sel(metric: str, labels: dict[str, str]) -> str:
        inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
        return f"{metric}{{{inner}}}"

    def ksm(ns: str, pod: str, labels: dict[str, str], instance: str) -> dict[str, str]:
        return {
            "series": sel(
                "kube_pod_labels",
                {
                    "namespace": ns,
                    "pod": pod,
                    "uid": "u-" + pod,
                    "instance": instance,
                    **{name(k): v for k, v in labels.items()},
                },
            ),
            "values": "1x20",
        }

    def dcgm(metric: str, gpu: str, ns: str, pod: str, value: int) -> dict[str, str]:
        labels = {"gpu": gpu, "UUID": f"GPU-{gpu}", "Hostname": "node-1",
                  "modelName": "NVIDIA H100", "namespace": ns, "pod": pod,
                  "container": "main" if pod else ""}  # fmt: skip
        return {"series": sel(metric, labels), "values": f"{value}x20"}

    series = [
        ksm(ns_a, "job-w0", job, "ksm-0"),
        ksm(ns_a, "job-w0", job, "ksm-1"),
        ksm(ns_b, "dep-p0", dep, "ksm-0"),
        {
            "series": sel(
                "kube_pod_labels",
                {
                    "namespace": "x",
                    "pod": "other",
                    "uid": "u",
                    "instance": "ksm-0",
                    "label_app": "web",
                },
            ),
            "values": "1x20",
        },
    ]
    for metric, a0, a1, b, other, idle in (
        ("DCGM_FI_DEV_GPU_UTIL", 60, 40, 90, 100, 0),
        ("DCGM_FI_DEV_FB_USED", 1000, 3000, 500, 7000, 0),
    ):
        series += [
            dcgm(metric, "0", ns_a, "job-w0", a0),
            dcgm(metric, "1", ns_a, "job-w0", a1),
            dcgm(metric, "2", ns_b, "dep-p0", b),
            dcgm(metric, "3", "x", "other", other),
            dcgm(metric, "4", "", "", idle),
        ]
    project_key = name(pod_labels.PROJECT)
    assert job[pod_labels.PROJECT] == "team-a" and dep[pod_labels.PROJECT] != "Team B"

    def obj(ns: str, labels: dict[str, str]) -> str:
        return "{" + ",".join(
            [f'namespace="{ns}"'] + [f'{name(k)}="{v}"' for k, v in sorted(labels.items())]
        ) + "}"  # fmt: skip

    def project(value: str) -> str:
        return f'{{{project_key}="{value}"}}'

    def samples(record: str, rows: list[tuple[str, float]]) -> dict[str, Any]:
        return {
            "expr": record,
            "eval_time": "5m",
            "exp_samples": [{"labels": record + labels, "value": v} for labels, v in rows],
        }

    gpu0 = {"gpu": "0", "UUID": "GPU-0", "Hostname": "node-1", "modelName": "NVIDIA H100",
            "namespace": ns_a, "pod": "job-w0", "container": "main",
            **{name(k): v for k, v in job.items()}}  # fmt: skip
    gpu0_sel = "{" + ",".join(f'{k}="{v}"' for k, v in gpu0.items()) + "}"
    dep_project = dep[pod_labels.PROJECT]
    tests = [
        samples(
            "cube:dcgm_gpu_util:avg_by_project",
            [(project("team-a"), 50), (project(dep_project), 90)],
        ),
        samples(
            "cube:dcgm_fb_used_mib:sum_by_project",
            [(project("team-a"), 4000), (project(dep_project), 500)],
        ),
        samples(
            "cube:dcgm_gpus:count_by_project",
            [(project("team-a"), 2), (project(dep_project), 1)],
        ),
        samples(
            "cube:dcgm_gpu_util:avg_by_object",
            [(obj(ns_a, job), 50), (obj(ns_b, dep), 90)],
        ),
        samples(
            "cube:dcgm_fb_used_mib:sum_by_object",
            [(obj(ns_a, job), 4000), (obj(ns_b, dep), 500)],
        ),
        samples("cube:dcgm_gpus:count_by_object", [(obj(ns_a, job), 2), (obj(ns_b, dep), 1)]),
        {
            "expr": 'cube:dcgm_gpu_util:by_pod{gpu="0"}',
            "eval_time": "5m",
            "exp_samples": [{"labels": "cube:dcgm_gpu_util:by_pod" + gpu0_sel, "value": 60}],
        },
    ]
    spec = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "30s",
        "tests": [{"interval": "30s", "input_series": series, "promql_expr_test": tests}],
    }
    path = tmp / "dcgm-rules.test.yml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    tool = _promtool()
    assert tool
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=120)


needs_promtool = pytest.mark.skipif(_promtool() is None, reason="promtool is not on PATH")


@needs_promtool
def test_promtool_checks_the_rules() -> None:
    out = _run("check", "rules", str(RULES))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in out.stdout


@needs_promtool
def test_promtool_checks_the_config(tmp_path: Path) -> None:
    # the example's token files do not exist here: point them at empty files of tmp_path
    text = PROMETHEUS.read_text(encoding="utf-8")
    for token in set(re.findall(r"credentials_file: (\S+)", text)):
        local = tmp_path / Path(token).name
        local.write_text("t\n", encoding="utf-8")
        text = text.replace(token, str(local))
    (tmp_path / "prometheus.yml").write_text(text, encoding="utf-8")
    shutil.copy(RULES, tmp_path / RULES.name)
    out = _run("check", "config", str(tmp_path / "prometheus.yml"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in out.stdout


@needs_promtool
def test_promtool_unit_test_proves_the_join(tmp_path: Path) -> None:
    out = _run("test", "rules", str(_unit_test_file(tmp_path)))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


@needs_promtool
def test_promtool_unit_test_can_fail(tmp_path: Path) -> None:
    path = _unit_test_file(tmp_path)
    path.write_text(path.read_text(encoding="utf-8").replace("value: 50", "value: 51"))
    out = _run("test", "rules", str(path))
    assert out.returncode != 0
