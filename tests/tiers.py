"""The suite's tiers, put on each test at collection from what it uses; no list to keep by hand.

=========  ==========================================================================
marker     a test has it when it (or a fixture it uses) ...
=========  ==========================================================================
hub        starts a real JupyterHub (``hub_util``, ``hub_kernel``)
cluster    talks to the kmock API server (``tests/k8s/``, ``k8s_mock``)
ml         trains, fine-tunes, tunes, embeds or serves a model with torch, transformers,
           PEFT, TRL, NNI or the MiniLM embedder (``tests/finetune/``, ``tests/kb/``,
           ``tests/tuning/``, ``tests/serving/llm/``, or those packages imported)
slow       starts processes a test waits for: a jupyter server or kernel in a subprocess
           (``server_util``, ``kernel_util``), model servers (``serving_util``), job
           templates or notebooks run as processes, the fuzzer, PostgreSQL
browser    drives Chromium (the Galata and hub UI suites under ``ui-tests/``; no pytest
           test does yet)
=========  ==========================================================================

"Uses" is read from the code: the globals a test function, each fixture it asks for, and the
helpers of tests/ they call name, resolved to the modules they come from.

What the code does not show, the clock does: every full run (``make test``, ``make pytest``)
writes ``tests/durations.json``, each test's seconds (setup, call and teardown) where they
were at least ``RECORD_S``, and a test that took more than ``SLOW_S`` there is ``slow`` on the
next run. A new test is judged by its uses until a full run has timed it.

A test with none of them is in the fast tier: ``make check`` runs ``-m fast``, everything
else is ``make test``. A fast test that still takes longer than ``FAST_BUDGET_S`` is named at
the end of the run, so the rule that let it through can be taught what it uses.

Under pytest-xdist, every ``hub`` test (and every test that makes system accounts) is pinned
to one worker (``xdist_group``, with ``--dist loadgroup``): hubs create OS accounts and hub
groups by name, and two of them at once would fight over them.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent
TIERS = ("hub", "cluster", "ml", "slow", "browser")
FAST_BUDGET_S = 5.0  # a fast test over this is named at the end of the run
SLOW_S = 3.0  # a test that took longer in the last full run is slow
RECORD_S = 1.0  # tests/durations.json keeps the tests that took at least this
DURATIONS = TESTS / "durations.json"

# tests/<folder>/ whose every test is in a tier
FOLDER_TIERS = {
    "k8s": "cluster",
    "finetune": "ml",
    "kb": "ml",
    "tuning": "ml",
    "serving/llm": "ml",
}
# modules a test module (or a fixture's module) imports -> tier
USES = {
    "hub": ("hub_util", "hub_kernel"),
    "cluster": ("k8s_mock",),
    "ml": (
        "torch",
        "transformers",
        "peft",
        "trl",
        "accelerate",
        "datasets",
        "tokenizers",
        "nni",
        "usearch",
        "cube_lab.finetune",
        "cube_lab.kb",
        "cube_lab.tuning",
    ),
    "slow": (
        "subprocess",  # the CLI, a script or a server as a process of its own
        "server_util",
        "kernel_util",
        "serving_util",
        "nbclient",
        "papermill",
        "schemathesis",
        "nbformat",  # a notebook made to be run (papermill, a kernel)
        "kfp",  # the KFP SDK compiles and loads pipelines: seconds per call
        "cube_lab.jobtemplates.run",
    ),
    "browser": ("playwright",),
}
# fixtures (by name) -> tier, for what a fixture starts without importing anything telling
FIXTURES = {"pg_url": "slow", "pg_ws": "slow"}
# tests that make real system accounts (useradd): one worker at a time, as the hub's do
ACCOUNT_MAKERS = ("hub/test_os_accounts.py", "serving/test_accounts.py")


def _code_names(code: types.CodeType) -> set[str]:
    """The global names a function's code (and the code nested in it) looks up."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _is_test_code(obj: Any) -> bool:
    """Whether ``obj`` was written in tests/ (a test module, a helper): its uses count too."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    path = getattr(module, "__file__", None)
    return bool(path) and Path(path).resolve().is_relative_to(TESTS)


_uses_cache: dict[Any, frozenset[str]] = {}


def uses(func: Any, depth: int = 4) -> frozenset[str]:
    """The modules ``func`` uses: those of the globals its code names, and, through the
    functions and classes of tests/ it calls, what they use (``depth`` calls deep)."""
    func = getattr(func, "__func__", func)
    code = getattr(func, "__code__", None)
    if code is None or depth == 0:
        return frozenset()
    cached = _uses_cache.get(func)
    if cached is not None:
        return cached
    _uses_cache[func] = frozenset()  # a recursive helper ends here
    found: set[str] = set()
    namespace = getattr(func, "__globals__", {})
    for name in _code_names(code):
        value = namespace.get(name)
        if value is None:
            continue
        if isinstance(value, types.ModuleType):
            found.add(value.__name__)
            continue
        owner = getattr(value, "__module__", None)
        if isinstance(owner, str):
            found.add(owner)
        if _is_test_code(value):
            members = vars(value).values() if isinstance(value, type) else (value,)
            for member in members:
                if callable(member) or isinstance(member, staticmethod | classmethod):
                    found |= uses(member, depth - 1)
    _uses_cache[func] = frozenset(found)
    return _uses_cache[func]


def _matches(refs: Iterable[str], names: tuple[str, ...]) -> bool:
    for ref in refs:
        for name in names:
            if ref == name or ref.startswith(name + ".") or ref.endswith("." + name):
                return True
    return False


def tiers_of(item: pytest.Item) -> set[str]:
    """The tiers of one collected test."""
    found = {mark.name for mark in item.iter_markers() if mark.name in TIERS}
    rel = Path(str(item.fspath)).resolve().relative_to(TESTS).as_posix()
    for folder, tier in FOLDER_TIERS.items():
        if rel.startswith(folder + "/"):
            found.add(tier)
    # what the test function uses, and what every fixture it asks for (directly or through
    # other fixtures) uses
    refs = set(uses(getattr(item, "function", None)))
    info = getattr(item, "_fixtureinfo", None)
    for name in item.fixturenames:
        if name in FIXTURES:
            found.add(FIXTURES[name])
        for fixturedef in info.name2fixturedefs.get(name, ()) if info else ():
            refs |= uses(fixturedef.func)
    for tier, names in USES.items():
        if _matches(refs, names):
            found.add(tier)
    if _recorded().get(item.nodeid, 0.0) > SLOW_S:
        found.add("slow")
    return found


_durations: dict[str, float] | None = None


def _recorded() -> dict[str, float]:
    global _durations
    if _durations is None:
        try:
            _durations = json.loads(DURATIONS.read_text())
        except (OSError, ValueError):
            _durations = {}
    return _durations


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``-m fast`` does not even import the folders whose every test is in a tier (their
    imports, transformers and PEFT among them, are most of the collection's time)."""
    if config.getoption("markexpr", "") != "fast":
        return None
    try:
        rel = collection_path.resolve().relative_to(TESTS).as_posix()
    except ValueError:
        return None
    if any(rel == folder or rel.startswith(folder + "/") for folder in FOLDER_TIERS):
        return True
    return None


def pytest_configure(config: pytest.Config) -> None:
    for tier in TIERS:
        config.addinivalue_line("markers", f"{tier}: a tier of the suite (tests/tiers.py)")
    config.addinivalue_line("markers", "fast: in none of the other tiers (tests/tiers.py)")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        found = tiers_of(item)
        marked = {mark.name for mark in item.iter_markers()}
        for tier in sorted(found - marked):
            item.add_marker(tier)
        if not found:
            item.add_marker("fast")
        rel = Path(str(item.fspath)).resolve().relative_to(TESTS).as_posix()
        if "hub" in found or rel in ACCOUNT_MAKERS:
            item.add_marker(pytest.mark.xdist_group("os-accounts"))


_slow_fast: list[tuple[float, str]] = []
_timed: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    node = re.sub(r"@[\w-]+$", "", report.nodeid)  # pytest-xdist's "@group" suffix
    _timed[node] = _timed.get(node, 0.0) + report.duration
    if report.when == "call" and "fast" in report.keywords and report.duration > FAST_BUDGET_S:
        _slow_fast.append((report.duration, report.nodeid))


def _full_run(session: pytest.Session) -> bool:
    """Whether this run collected and ran the whole suite (no -m, -k, file or node chosen)."""
    config = session.config
    if config.getoption("markexpr", "") or config.getoption("keyword", ""):
        return False
    if config.getoption("collectonly", False) or getattr(config, "workerinput", None):
        return False
    chosen = [Path(arg) for arg in config.args]
    return all(path.resolve() in (TESTS, TESTS.parent) for path in chosen)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A full run that ran every test records how long each took."""
    if not _full_run(session) or exitstatus != 0 or not _timed:
        return
    kept = {node: round(s, 1) for node, s in sorted(_timed.items()) if s >= RECORD_S}
    with contextlib.suppress(OSError):
        DURATIONS.write_text(json.dumps(kept, indent=0, ensure_ascii=False) + "\n")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _slow_fast:
        terminalreporter.section("fast-tier tests over their budget")
        for seconds, nodeid in sorted(_slow_fast, reverse=True):
            terminalreporter.write_line(
                f"{seconds:6.1f}s {nodeid}: over {FAST_BUDGET_S:g} s in the fast tier; "
                "teach tests/tiers.py what it uses, or make it faster"
            )
