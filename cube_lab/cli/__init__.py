"""The ``cube-lab`` command line: a thin caller of the same services as the REST API.

It opens the workspace the server uses (``$CUBE_LAB_DATA_DIR`` / ``$CUBE_LAB_DB_URL``,
exported to JupyterLab terminals), so it works with or without a running server.

One module per capability, as ``cube_lab/handlers/`` has them, holds its commands, what they
print and its subparsers (``add_commands``): models, pipelines, training, serving (kserve.py:
``--backend kubernetes``), projects, tuning, labeling (datasets too), finetune, kb, alerts.
Shared: args.py (arguments, --json, -o), output.py, i18n.py (--help in $LANG). Under the hub
the same commands go through the cube-lab service: remote/ (a module per capability as well).
"""

from __future__ import annotations

import sys

from ..locale.messages import _t

# jsonschema imports rfc3987_syntax when it is installed (jupyter-events pulls it in),
# which builds a parser for ~6 s on every start; cube-lab never checks "iri" formats.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from ..config import Settings, local_username
from ..errors import CubeError
from ..identity import Caller
from ..locale.messages import env_locale, localize
from ..workspace import Workspace
from . import (
    alerts,
    chat,
    course,
    finetune,
    kb,
    labeling,
    models,
    pipelines,
    projects,
    serving,
    training,
    tuning,
)
from .args import json_printed, json_stdout, print_json, quiet_libraries
from .i18n import Parser, argparse_words, translate_parser
from .output import _print_problems

__all__ = ["build_parser", "local_username", "main"]

# One module per capability (as cube_lab/handlers/ has them), in `cube-lab --help`'s order;
# each adds its subcommands with ``add_commands(groups, command)``.
CAPABILITIES = (
    models,
    pipelines,
    training,
    serving,
    projects,
    tuning,
    labeling,
    finetune,
    kb,
    alerts,
    chat,
    course,
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="cube-lab", description="cube-lab ML workspace")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("--data-dir", help="state folder (default: $CUBE_LAB_DATA_DIR)")
    parser.add_argument("--db-url", help="SQLAlchemy URL (default: $CUBE_LAB_DB_URL)")
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="also show libraries' logs and warnings"
    )
    groups = parser.add_subparsers(dest="group", required=True)

    def command(
        sub: Any, name: str, fn: Callable[..., None], help_: str, *, json: bool = True
    ) -> Any:
        """A subcommand; ``json=False`` for the ones whose output is a text stream (logs)."""
        p = sub.add_parser(name, help=help_, description=help_)
        p.set_defaults(fn=fn, json=False)
        p.add_argument("--project", help="project name (default: your personal project)")
        if json:
            p.add_argument(
                "--json", action="store_true", help="print one JSON document (logs to stderr)"
            )
        return p

    for capability in CAPABILITIES:
        capability.add_commands(groups, command)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cube-lab")
    except PackageNotFoundError:  # a checkout that was never installed
        return "0.0.0.dev0"


def main(argv: Sequence[str] | None = None) -> int:
    locale = env_locale()  # LC_ALL / LC_MESSAGES / LANG: --help and errors in that language
    with argparse_words(locale):
        parser = build_parser()
        translate_parser(parser, locale)
        args = parser.parse_args(argv)
    as_json = bool(getattr(args, "json", False))
    # The one place the output contract is kept: with --json stdout carries one document
    # (print_json's) and everything else goes to stderr; libraries stay quiet unless -v.
    with quiet_libraries(args.verbose), json_stdout(as_json):
        return _run(args, as_json, locale)


def _run(args: argparse.Namespace, as_json: bool, locale: str = "en") -> int:
    try:
        remote = None
        if getattr(args, "hub_admin", False):  # the hub's cube-admin service, not a store
            args.fn(None, None, args)
            return 0
        if not args.data_dir and not args.db_url:
            from ..rest_client import ServiceClient

            remote = ServiceClient.from_env()  # under the hub: the cube-lab service's store
        if remote is not None:
            from . import remote as cli_remote

            cli_remote.run(remote, args)
            return 0
        ws = Workspace(Settings.resolve(args.data_dir, args.db_url))
        try:
            args.fn(ws, Caller(local_username()), args)
        finally:
            ws.close()
    except CubeError as exc:
        print(_t("cube-lab: error: {error}", error=exc.error).translated(locale), file=sys.stderr)
        problems = getattr(exc, "problems", None)
        if problems:
            _print_problems(problems)
        elif exc.detail:
            print(f"  {localize(exc.detail, locale)}", file=sys.stderr)
        if as_json and not json_printed():  # the REST API's error body, for scripts
            print_json(localize(exc.to_json(), locale))
        return 2 if exc.status == 400 else 1
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0
