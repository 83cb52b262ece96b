"""The command line in the reader's language: ``LC_ALL`` / ``LC_MESSAGES`` / ``LANG``.

``--help`` (descriptions, argument helps, argparse's own headings and parse errors) and the
error lines ``cube-lab`` prints come from the ``cube_lab`` catalog (cube_lab/locale); a text
without an entry stays English. scripts/extract_strings.py takes the help texts from the
parser itself (:func:`parser_texts`) and argparse's words from :data:`ARGPARSE_TEXTS`.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
from collections.abc import Iterator
from typing import Any

from ..locale import catalog
from ..locale.messages import _t, env_locale

# argparse's own words a user reads (Python 3.11's msgids, its gettext domain's texts).
ARGPARSE_TEXTS = [
    "usage: ",
    "positional arguments",
    "options",
    "show this help message and exit",
    "the following arguments are required: %s",
    "unrecognized arguments: %s",
    "invalid choice: %(value)r (choose from %(choices)s)",
    "invalid %(type)s value: %(value)r",
    "argument %(argument_name)s: %(message)s",
    "expected one argument",
    "ambiguous option: %(option)s could match %(matches)s",
    "%(prog)s: error: %(message)s\n",
    "show program's version number and exit",
]


class Parser(argparse.ArgumentParser):
    """argparse's parser that, for a mistyped subcommand or choice, names the closest one."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        try:
            super()._check_value(action, value)  # type: ignore[misc]
        except argparse.ArgumentError as exc:
            close = difflib.get_close_matches(str(value), [str(c) for c in action.choices or ()], 1)
            if not close:
                raise
            hint = _t("did you mean {value!r}?", value=close[0]).translated(env_locale())
            raise argparse.ArgumentError(action, f"{exc.message} - {hint}") from None


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for sub in action.choices.values():
                if id(sub) not in seen:  # an alias names the same parser
                    seen.add(id(sub))
                    yield from _parsers(sub)


def _texts(parser: argparse.ArgumentParser) -> Iterator[tuple[Any, str]]:
    """(object, attribute) of every text of ``parser`` and its subcommands."""
    for p in _parsers(parser):
        yield p, "description"
        yield p, "epilog"
        for action in p._actions:
            yield action, "help"
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:  # the subcommands' one-line helps
                    yield choice, "help"


def parser_texts(parser: argparse.ArgumentParser) -> list[str]:
    """Every help text, description and epilog of ``parser`` and its subcommands."""
    out: list[str] = []
    for obj, attr in _texts(parser):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value.strip() and value != argparse.SUPPRESS:
            out.append(value)
    return list(dict.fromkeys(out))


def translate_parser(parser: argparse.ArgumentParser, locale: str) -> None:
    """Put ``parser``'s texts in ``locale`` (those with a catalog entry)."""
    if locale == "en":
        return
    lookup = catalog(locale).gettext
    for obj, attr in _texts(parser):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value.strip() and value != argparse.SUPPRESS:
            setattr(obj, attr, lookup(value))


@contextlib.contextmanager
def argparse_words(locale: str) -> Iterator[None]:
    """argparse's headings and errors in ``locale`` while the block runs (build and parse
    inside it); argparse's gettext is put back afterwards."""
    if locale == "en":
        yield
        return
    lookup, before = catalog(locale).gettext, argparse._  # type: ignore[attr-defined]
    argparse._ = lookup  # type: ignore[attr-defined]
    try:
        yield
    finally:
        argparse._ = before  # type: ignore[attr-defined]
