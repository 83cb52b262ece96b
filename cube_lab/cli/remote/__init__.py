"""The ``cube-lab`` commands under the hub: the same commands, through the cube-lab service.

A lab server under JupyterHub has no store (``$CUBE_LAB_SERVICE_URL`` names the service that
owns it), so ``cli._run`` hands each command here instead of opening a ``Workspace``. Every
command is one thin call of the REST API with the user's hub token (``rest_client``) and
prints what the local command prints (its module's ``show_*``); ``--json`` prints the REST JSON.
Identity is the token's: ``$CUBE_LAB_USER`` means nothing here. Paths on the command line
are resolved against the current folder and sent relative to the user's home (the lab
server's root, ``$CUBE_LAB_ROOT_DIR``), the only folder the service reads for them.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ... import cli
from ...errors import InvalidInput
from ...locale.messages import _t
from ...rest_client import ServiceClient
from . import labeling, models, pipelines, projects, serving, training, tuning
from .common import Command

# the local commands' modules whose functions REMOTE answers for, by name
LOCAL = tuple(
    f"cube_lab.cli.{m}" for m in ("models", "projects", "pipelines", "training", "serving")
)


# -- dispatch ----------------------------------------------------------------------------

# by the local command's name
REMOTE: dict[str, Command] = {
    "model_register": models.model_register,
    "model_list": models.model_list,
    "model_show": models.model_show,
    "model_alias": models.model_alias,
    "model_compare": models.model_compare,
    "model_archive": models.model_archive,
    "model_delete": models.model_delete,
    "model_download": models.model_download,
    "project_list": projects.project_list,
    "project_create": projects.project_create,
    "project_member": projects.project_member,
    "project_invitations": projects.project_invitations,
    "project_accept": projects.project_accept,
    "project_decline": projects.project_decline,
    "pipeline_validate": pipelines.pipeline_validate,
    "pipeline_run": pipelines.pipeline_run,
    "pipeline_runs": pipelines.pipeline_runs,
    "pipeline_logs": pipelines.pipeline_logs,
    "pipeline_cancel": pipelines.pipeline_cancel,
    "pipeline_compile": pipelines.pipeline_compile,
    "pipeline_schedule": pipelines.pipeline_schedule,
    "pipeline_schedules": pipelines.pipeline_schedules,
    "pipeline_unschedule": pipelines.pipeline_unschedule,
    "train_run": training.train_run,
    "training_list": training.training_list,
    "training_logs": training.training_logs,
    "training_stop": training.training_stop,
    "training_metrics": training.training_metrics,
    "training_register": training.training_register,
    "deployments_list": serving.deployments_list,
    "deploy": serving.deploy,
    "undeploy": serving.undeploy,
    "deployment_action": serving.deployment_action,
    "deployment_keys": serving.deployment_keys,
    "deployment_access": serving.deployment_access,
}
TUNING: dict[str, Command] = {
    "tune": tuning.tune,
    "tuning_list": tuning.tuning_list,
    "tuning_show": tuning.tuning_show,
    "tuning_stop": tuning.tuning_stop,
    "tuning_resume": tuning.tuning_resume,
    "tuning_register": tuning.tuning_register,
    "tuning_log": tuning.tuning_log,
}


LABELING: dict[str, Command] = {
    "dataset_create": labeling.dataset_create,
    "dataset_list": labeling.dataset_list,
    "dataset_show": labeling.dataset_show,
    "label_create": labeling.label_create,
    "label_list": labeling.label_list,
    "label_show": labeling.label_show,
    "label_assign": labeling.label_assign,
    "label_import": labeling.label_import,
    "label_export": labeling.label_export,
    "label_prelabel": labeling.label_prelabel,
}


def _remote(local: Any) -> Command | None:
    """The remote implementation of a local command function of ``cube_lab.cli``."""
    module, name = getattr(local, "__module__", None), getattr(local, "__name__", "")
    if module == "cube_lab.cli.tuning":
        return TUNING.get(name)
    if module == "cube_lab.cli.labeling":
        return LABELING.get(name)
    if module == "cube_lab.cli.finetune":
        from ..finetune import REMOTE as FINETUNE

        return FINETUNE.get(name)
    if module == "cube_lab.cli.kb":
        from ..kb import REMOTE as KB

        return KB.get(name)
    if module == "cube_lab.cli.alerts":
        from ..alerts import REMOTE as ALERTS

        return ALERTS.get(name)
    if module == "cube_lab.cli.chat":
        from ..chat import REMOTE as CHAT

        return CHAT.get(name)
    if module not in LOCAL:
        return None
    return REMOTE.get(name)


def command_name(a: argparse.Namespace) -> str:
    words = [a.group, getattr(a, "command", None), getattr(a, "keys_command", None)]
    return " ".join(w for w in words if w)


def _names() -> list[str]:
    parser = cli.build_parser()
    found: list[str] = []

    def walk(p: argparse.ArgumentParser, prefix: list[str]) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for word, sub in action.choices.items():
                    if _remote(sub.get_default("fn")) is not None:
                        found.append(" ".join([*prefix, word]))
                    walk(sub, [*prefix, word])

    walk(parser, [])
    return found


def run(client: ServiceClient, a: argparse.Namespace) -> None:
    """Run the parsed command ``a`` through the service; errors are ``CubeError``s."""
    if os.environ.get("CUBE_LAB_USER"):
        print(
            "cube-lab: note: $CUBE_LAB_USER is ignored under the hub; you act as the owner of "
            "$JUPYTERHUB_API_TOKEN",
            file=sys.stderr,
        )
    fn = _remote(a.fn)
    if fn is None:
        raise InvalidInput(
            _t("`cube-lab {value}` does not work under the hub yet", value=command_name(a)),
            "Under the hub these commands reach the cube-lab service: "
            + ", ".join(_names())
            + ". Use the cube-lab panels for the rest.",
        )
    fn(client, a)
