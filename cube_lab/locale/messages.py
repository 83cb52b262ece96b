"""Server messages a person reads (REST ``error``/``detail``, CLI output), marked for translation.

A service raises in English, as before, with its texts marked::

    raise NotFound(_t("project {name!r} not found", name=name), _t("Create it first."))

``_t`` returns a :class:`Text`: a ``str`` (the English, filled in, so logs, tests and
``str(exc)`` read as before) that remembers its message id and parameters. The edge that
knows the reader's locale translates it: the REST handlers' error path by the request's
``Accept-Language`` (cube_lab/handlers/base.py), the CLI by ``LC_ALL`` / ``LC_MESSAGES`` /
``LANG`` (cube_lab/cli/), with :func:`localize`. The message id is a ``str.format`` template
with named fields (``{name}``, ``{name!r}``, ``{n:g}``); scripts/extract_strings.py extracts
every ``_t("...")`` of cube_lab/ into the catalog and ``check`` wants each one's zh-CN entry
with the same fields.
"""

from __future__ import annotations

import os
from typing import Any

from . import catalog, negotiate


class Text(str):
    """An English message that can be told again in another locale."""

    msgid: str
    params: dict[str, Any]

    def __new__(cls, msgid: str, params: dict[str, Any]) -> Text:
        self = super().__new__(cls, msgid.format(**params))
        self.msgid = msgid
        self.params = params
        return self

    def __reduce__(self) -> Any:
        return (Text, (self.msgid, self.params))

    def translated(self, locale: str) -> str:
        """This message in ``locale``; English (this string) when it has no entry there."""
        if locale == "en":
            return str(self)
        text = catalog(locale).gettext(self.msgid)
        if text == self.msgid:
            return str(self)
        params = {k: localize(v, locale) for k, v in self.params.items()}
        try:
            return text.format(**params)
        except (KeyError, IndexError, ValueError):  # a broken entry: the English, never a 500
            return str(self)


def _t(msgid: str, **params: Any) -> Text:
    """Mark ``msgid`` (a literal ``str.format`` template) for translation, filled with
    ``params``."""
    return Text(msgid, params)


def localize(value: Any, locale: str) -> Any:
    """``value`` with every :class:`Text` in it (a string, or one inside lists, tuples and
    dict values) in ``locale``; anything else as it is."""
    if isinstance(value, Text):
        return value.translated(locale)
    if isinstance(value, dict):
        return {k: localize(v, locale) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(localize(v, locale) for v in value)
    return value


def env_locale(environ: Any = None) -> str:
    """The locale a command-line user reads: the first of ``LC_ALL``, ``LC_MESSAGES`` and
    ``LANG`` that is set ("zh_CN.UTF-8" -> "zh_CN"), "en" otherwise (or for "C"/"POSIX")."""
    env = os.environ if environ is None else environ
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = (env.get(name) or "").strip()
        if value:
            tag = value.split(".", 1)[0].split("@", 1)[0]
            if tag in ("C", "POSIX"):
                return "en"
            return negotiate(tag)
    return "en"


def accept_language(locale: str) -> str:
    """The ``Accept-Language`` header that asks a server for ``locale`` ("zh_CN" -> "zh-CN")."""
    return "en" if locale == "en" else f"{locale.replace('_', '-')}, en;q=0.5"
