"""What the commands under the hub share: which flags were given, printing, the project."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ...rest_client import ServiceClient, personal_project
from ..args import print_json

POLL_S = 0.25
ACTIVE = ("queued", "pending", "running", "starting", "stopping")

Command = Callable[[ServiceClient, argparse.Namespace], None]

# The in-process commands' kubeconfig options. Under the hub the cube-lab service acts on the
# cluster with its own credentials, in its own namespace: a command refuses them there.
KUBE_CLIENT_FLAGS = (
    ("--namespace", "namespace"),
    ("--kubeconfig", "kubeconfig"),
    ("--kube-context", "kube_context"),
)


def given(a: argparse.Namespace, flags: tuple[tuple[str, str], ...]) -> list[str]:
    """Which of ``flags`` (``(flag, dest)`` pairs) the command line gave."""
    return [flag for flag, key in flags if getattr(a, key, None)]


def emit(a: argparse.Namespace, view: Any, show: Callable[[Any], None]) -> None:
    """``--json`` prints the service's JSON as it came; otherwise the local command's text."""
    if a.json:
        print_json(view)
    else:
        show(view)


def project_of(client: ServiceClient, a: argparse.Namespace) -> str:
    return str(a.project) if a.project else personal_project(client)
