"""``import cube_lab as cl`` is light, and every capability is ``cl.<name>`` after it alone.

Each check runs in a fresh interpreter (the test process has imported half of cube-lab).
Today ``import cube_lab`` imports nothing outside the standard library: none of torch,
transformers, pandas, sqlalchemy, tornado or jupyter_server (nor numpy or yaml), and of
cube-lab itself only the package's ``__init__`` (and ``_version``); the first ``cl.<name>``
imports that name's package. (Before, it imported ``cube_lab.datasets`` and
``cube_lab.locale``, and ``cl.registry`` was an AttributeError.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

# What a user reaches as cl.<name> (README, docs/sdk.md): the capability packages, the modules
# a notebook reaches for, and the SDK's calls.
PACKAGES = (
    "registry", "datasets", "pipelines", "training", "tuning", "finetune", "labeling", "kb",
    "chat", "alerts", "serving", "projects", "monitoring", "sdk", "errors", "hub",
)  # fmt: skip
SDK_NAMES = (
    "models", "train", "tune", "deploy", "deployments", "connect", "disconnect", "CubeError",
)  # fmt: skip
# not imported by ``import cube_lab`` (each is today; see the module's docstring)
HEAVY = (
    "torch", "transformers", "pandas", "sqlalchemy", "tornado", "jupyter_server", "numpy",
    "yaml",
)  # fmt: skip


def _fresh(code: str) -> Any:
    """Run ``code`` in a new interpreter; what it prints last, as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_import_cube_lab_imports_nothing_heavy() -> None:
    loaded = _fresh(
        """
        import json, sys
        import cube_lab
        print(json.dumps(sorted(sys.modules)))
        """
    )
    assert [m for m in HEAVY if m in loaded] == []
    # _version: written by the build (an installed or built checkout), absent in a bare one
    assert {m for m in loaded if m.startswith("cube_lab")} <= {"cube_lab", "cube_lab._version"}


def test_every_capability_is_an_attribute_after_a_bare_import() -> None:
    found = _fresh(
        f"""
        import importlib, json, sys
        import cube_lab

        seen = {{}}
        for name in {PACKAGES!r}:
            # the package's own __getattr__ (an earlier one may have imported it already)
            value = cube_lab.__getattr__(name)
            seen[name] = value is sys.modules["cube_lab." + name] is getattr(cube_lab, name)
        for name in {SDK_NAMES!r}:
            value = cube_lab.__getattr__(name)
            seen[name] = value is getattr(cube_lab, name) and value is not None
        print(json.dumps({{"seen": seen, "dir": dir(cube_lab)}}))
        """
    )
    assert found["seen"] == dict.fromkeys([*PACKAGES, *SDK_NAMES], True)
    # tab completion offers them all
    assert set(PACKAGES) | set(SDK_NAMES) | {"report", "__version__"} <= set(found["dir"])


def test_the_readme_call_and_the_first_use_of_each_name() -> None:
    """``cube_lab.registry.register(...)`` as the README writes it, with nothing but
    ``import cube_lab`` before (it raised AttributeError until ``import cube_lab.registry``)."""
    found = _fresh(
        """
        import json
        import cube_lab

        print(json.dumps([callable(cube_lab.registry.register), callable(cube_lab.finetune),
                          callable(cube_lab.datasets.load), callable(cube_lab.train)]))
        """
    )
    assert found == [True, True, True, True]


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    found = _fresh(
        """
        import json
        import cube_lab

        try:
            cube_lab.no_such_thing
        except AttributeError as exc:
            print(json.dumps([str(exc), hasattr(cube_lab, "registri")]))
        """
    )
    assert found == ["module 'cube_lab' has no attribute 'no_such_thing'", False]
