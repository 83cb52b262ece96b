"""``cl.tune(config)``: start a hyperparameter search without blocking; ``Experiment``
handles, and ``cl.tuning.experiments()`` / ``cl.tuning.get(id)``."""

from __future__ import annotations

import builtins
import os
from typing import TYPE_CHECKING, Any

from ..locale.messages import _t
from . import current
from .configs import read_config
from .handle import Handle, Json

if TYPE_CHECKING:
    import pandas as pd

    from .models import ModelVersion

FINAL = ("succeeded", "failed", "stopped", "early_stopped", "cancelled")


class Experiment(Handle):
    """A tuning experiment: ``.status``, ``.wait()``, ``.trials`` (a DataFrame), ``.best``,
    ``.stop()``, ``.register(name)``; ``.data`` is the REST JSON of its last refresh."""

    kind = "experiment"

    @property
    def name(self) -> str:
        return str(self.data.get("name"))

    def refresh(self) -> Experiment:
        self.data = current().get_experiment(self.id)
        return self

    def _trial_list(self) -> builtins.list[Json]:
        if self.data.get("trials") is None:  # a listing leaves the trials out
            self.refresh()
        return builtins.list(self.data.get("trials") or [])

    @property
    def trials(self) -> pd.DataFrame:
        """One row per trial (as of the last refresh): its parameters, status, final and last
        intermediate result, duration."""
        import pandas as pd

        rows = [
            {
                "trial": t["id"],
                "seq": t["seq"],
                "status": t["status"],
                **dict(t.get("parameters") or {}),
                "final": t.get("final"),
                "intermediate": (t.get("intermediate") or [None])[-1],
                "duration_s": t.get("duration_s"),
            }
            for t in self._trial_list()
        ]
        frame = pd.DataFrame(rows)
        return frame.set_index("trial") if len(frame) else frame

    @property
    def best(self) -> Json | None:
        """The best trial so far (id, parameters, final...), or None before any result."""
        return self.data.get("best")

    def stop(self) -> Experiment:
        """Stop the experiment (every running trial is ended); self."""
        self.data = current().stop_experiment(self.id)
        return self

    def logs(self, trial: str) -> str:
        """The log of trial ``trial`` (its id) so far."""
        transport = current()
        text, offset = "", 0
        while True:
            chunk = transport.trial_log(self.id, trial, offset)
            text += chunk["text"]
            if chunk["offset"] == offset or chunk["offset"] >= chunk["size"]:
                return text
            offset = chunk["offset"]

    def register(
        self,
        name: str,
        trial: str | None = None,
        path: str | None = None,
        project: str | None = None,
        description: str = "",
    ) -> ModelVersion:
        """Register what a trial saved (``$NNI_OUTPUT_DIR``; the best trial unless ``trial``
        names one) as a new version of ``name``, with its parameters and metric."""
        from .models import ModelVersion

        body = {
            "name": name,
            "trial": trial,
            "path": path,
            "project": project,
            "description": description,
        }
        return ModelVersion(current().register_trial(self.id, body))

    def view_state(self) -> Json:
        state = super().view_state()
        state["title"] = _t("Tuning experiment {name} ({id})", name=self.name, id=self.id)
        trials = builtins.list(self.data.get("trials") or [])
        total = (self.data.get("spec") or {}).get("max_trials")
        ended = sum(1 for t in trials if t["status"] in FINAL)
        state["progress"] = (ended, total, "trials")
        best = self.best
        best_id = best["id"] if best else None
        maximize = (self.data.get("spec") or {}).get("mode", "maximize") == "maximize"
        scored = sorted(  # the best first, then the trials without a result yet
            trials,
            key=lambda t: (
                t.get("final") is None,
                -(t.get("final") or 0) if maximize else (t.get("final") or 0),
                t["seq"],
            ),
        )
        results = [(t["seq"], t.get("final")) for t in sorted(trials, key=lambda t: t["seq"])]
        state["charts"] = {"result": [(x, y) for x, y in results if y is not None]}
        state["columns"] = ["trial", "status", "final", "parameters"]
        state["rows"] = [
            [
                ("★ " if t["id"] == best_id else "") + str(t["id"]),
                t["status"],
                t.get("final"),
                ", ".join(f"{k}={v}" for k, v in sorted((t.get("parameters") or {}).items())),
            ]
            for t in scored
        ]
        return state

    def __repr__(self) -> str:
        best = self.best
        shown = (
            f" best {best['id']} final={best['final']} {best['parameters']}"
            if best and best.get("final") is not None
            else ""
        )
        count = self.data.get("trial_count", 0)
        return f"<Experiment {self.id} {self.name}: {self.status}, {count} trials{shown}>"


def tune(
    config: str | os.PathLike[str] | dict[str, Any],
    base_dir: str | os.PathLike[str] | None = None,
    project: str | None = None,
    **overrides: Any,
) -> Experiment:
    """Start an NNI-style experiment; returns at once (``.wait()`` blocks).

    ``config`` is a YAML/JSON file or a dict of NNI v2 config fields; its relative paths
    (``trialCodeDirectory``) start at ``base_dir`` (default: the file's folder, else the
    current one). ``overrides`` replace fields, e.g. ``maxTrialNumber=20``."""
    data, folder = read_config(config, base_dir, "an experiment")
    return Experiment(current().start_experiment({**data, **overrides}, folder, project))


class Tuning:
    """``cl.tuning.experiments()``, ``cl.tuning.get(id)``."""

    def experiments(self, project: str | None = None, limit: int = 50) -> builtins.list[Experiment]:
        """Recent experiments you can see, newest first (without their trials until
        refreshed)."""
        return [Experiment(e) for e in current().list_experiments(project, limit)]

    def get(self, experiment_id: str) -> Experiment:
        return Experiment(current().get_experiment(experiment_id))

    def __repr__(self) -> str:
        return "<cube-lab tuning: experiments(), get(id); cl.tune(config) starts one>"


tuning = Tuning()
