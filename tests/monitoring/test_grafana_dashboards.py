"""deploy/grafana: every dashboard is well-formed Grafana dashboard JSON (the fields Grafana's
dashboard JSON model requires, checked here by hand) and every PromQL expression names only
metrics that cube-lab's own exporters emit (read from the real code), or DCGM exporter
metrics in panels marked as such, or series recorded by cube-lab-dcgm-rules.yml (checked
further in test_dcgm_rules.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from cube_lab.monitoring import report
from cube_lab.serving.metrics import Metrics

FOLDER = Path(__file__).resolve().parents[2] / "deploy" / "grafana"
DASHBOARDS = sorted(FOLDER.glob("*.json"))
PANEL_TYPES = {"timeseries", "stat", "gauge", "table", "bargauge", "text", "row"}
PROMQL_WORDS = {
    "sum", "max", "min", "avg", "count", "by", "without", "rate", "irate", "increase",
    "histogram_quantile", "label_values", "on", "ignoring", "group_left", "group_right",
    "and", "or", "unless", "offset", "bool", "topk", "bottomk", "le", "Inf",
}  # fmt: skip


def _exported() -> set[str]:
    """Sample names the real exporters produce (cube-lab's /metrics and a deployment's)."""
    names = {name for name, _, _ in report.COUNTED}
    names |= {family.name for family in report._live_families([])}
    router = Metrics("d")
    router.observe("v1", 500, 0.01)
    router.observe_shadow("v1", 200, 0.01)
    for family in text_string_to_metric_families(router.render()):
        names |= {sample.name for sample in family.samples}
    return names


def _panels(dash: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for panel in dash["panels"]:
        out.append(panel)
        out += panel.get("panels", [])
    return out


def _metric_names(expr: str) -> set[str]:
    expr = re.sub(r'"[^"]*"', '""', expr)  # label values
    expr = re.sub(r"\{[^}]*\}", "", expr)  # matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges
    expr = re.sub(r"label_values\(([^,]+),\s*\w+\)", r"(\1)", expr)  # the label argument
    expr = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", expr)  # grouping labels
    words = set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", expr))
    return {w for w in words if w not in PROMQL_WORDS}


def test_there_are_the_five_dashboards() -> None:
    assert {p.stem for p in DASHBOARDS} == {
        "cube-lab-cluster",
        "cube-lab-project",
        "cube-lab-user",
        "cube-lab-gpus",
        "cube-lab-deployments",
    }


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_dashboard_model(path: Path) -> None:
    dash = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(dash["title"], str) and dash["title"]
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,40}", dash["uid"])
    assert isinstance(dash["schemaVersion"], int) and dash["schemaVersion"] >= 36
    assert set(dash["time"]) == {"from", "to"}
    assert isinstance(dash["templating"]["list"], list)
    assert isinstance(dash["annotations"]["list"], list)
    variables = {v["name"] for v in dash["templating"]["list"]}
    assert "datasource" in variables
    ids = [p["id"] for p in _panels(dash)]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in _panels(dash):
        assert panel["type"] in PANEL_TYPES
        grid = panel["gridPos"]
        assert set(grid) >= {"h", "w", "x", "y"}
        assert all(isinstance(grid[k], int) and grid[k] >= 0 for k in "hwxy")
        assert grid["w"] >= 1 and grid["x"] + grid["w"] <= 24, panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)) and refs
        for target in panel["targets"]:
            assert target["datasource"]["type"] == "prometheus"
            assert target["expr"].count("(") == target["expr"].count(")")
            for var in re.findall(r"\$(\w+)", target["expr"]):
                assert var in variables, f"{path.name}: ${var} is not a dashboard variable"


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_expressions_name_exported_metrics_only(path: Path) -> None:
    exported = _exported()
    rules = yaml.safe_load((FOLDER / "cube-lab-dcgm-rules.yml").read_text(encoding="utf-8"))
    recorded = {r["record"] for g in rules["groups"] for r in g["rules"]}
    dash = json.loads(path.read_text(encoding="utf-8"))
    exprs: list[tuple[str, str]] = []
    for panel in _panels(dash):
        exprs += [(panel["title"], t["expr"]) for t in panel["targets"]]
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            exprs.append((var["name"], var["query"]["query"]))
    assert exprs
    for title, expr in exprs:
        for name in _metric_names(expr):
            if name.startswith("DCGM_FI_"):
                assert title.startswith("[DCGM exporter]"), f"{title}: DCGM metric not marked"
                continue
            if name.startswith("cube:"):  # recorded by cube-lab-dcgm-rules.yml
                assert title.startswith("[DCGM by object]"), f"{title}: recorded, not marked"
                assert name in recorded, f"{path.name} / {title}: {name} is recorded by no rule"
                continue
            assert name in exported, f"{path.name} / {title}: {name} is not exported"


def test_the_name_check_can_fail() -> None:
    assert _metric_names('sum by (user) (cube_nonexistent{a="b"}[5m]) / 100') == {
        "cube_nonexistent"
    }
    assert "cube_nonexistent" not in _exported()


def test_scrape_example_parses() -> None:
    config = yaml.safe_load((FOLDER / "prometheus.yml").read_text(encoding="utf-8"))
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["cube-lab"]["metrics_path"] == "/cube/api/v1/metrics"
    assert "credentials_file" in jobs["cube-lab"]["authorization"]
