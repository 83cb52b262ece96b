"""cube-lab's translations (domain ``cube_lab``), made by scripts/extract_strings.py.

- ``<lang>/LC_MESSAGES/cube_lab.json``: the front end's catalog; JupyterLab's translation
  manager serves it through the ``jupyterlab.locale`` entry point (pyproject.toml).
- ``<lang>/LC_MESSAGES/cube_lab.mo``: the same catalog for the server (Python's gettext).

JupyterLab's server translates a settings schema (``GET /lab/api/settings``) with
``translator.translate_schema``: the titles and descriptions are looked up in the domain the
schema names under ``jupyter.lab.internationalization`` (cube_lab's: schema/plugin.json). Its
bundles read ``.mo`` files from the installed language pack only, never from the package
that owns the domain, so :func:`serve_package_catalog` gives the ``cube_lab`` domain a bundle
that reads the ``.mo`` shipped here first (the language pack's, if it ever has one, after).
"""

from __future__ import annotations

import gettext
import re
from pathlib import Path
from typing import Any

DOMAIN = "cube_lab"
LOCALE_DIR = Path(__file__).resolve().parent
PLACEHOLDER = re.compile(r"%(\d+)")


def catalog(locale: str) -> gettext.NullTranslations:
    """cube-lab's server-side catalog for ``locale`` ("zh_CN"; English: the identity)."""
    return gettext.translation(
        DOMAIN, localedir=str(LOCALE_DIR), languages=(locale,), fallback=True
    )


def serve_package_catalog() -> bool:
    """Make JupyterLab's server translate the ``cube_lab`` domain from this package's
    catalogs. Returns False when jupyterlab_server is not installed (nothing to do)."""
    try:
        from jupyterlab_server.translation_utils import TranslationBundle, translator
    except ImportError:
        return False

    class PackageBundle(TranslationBundle):
        """A bundle of the ``cube_lab`` domain that reads cube_lab/locale first."""

        def update_locale(self, locale_: str) -> None:
            super().update_locale(locale_)  # the language pack's .mo, or the identity
            own = catalog(locale_)
            if type(own) is not gettext.NullTranslations:
                own.add_fallback(self._translator)
                self._translator = own

    # translator.load(domain) hands out the bundle registered under the domain's name
    bundles: dict[str, Any] = translator._TRANSLATORS
    if type(bundles.get(DOMAIN)).__name__ != PackageBundle.__name__:
        bundles[DOMAIN] = PackageBundle(DOMAIN, translator._LOCALE)
    return True


def languages() -> list[str]:
    """The locales cube-lab ships a server-side catalog for ("zh_CN"), English aside."""
    return sorted(p.parent.parent.name for p in LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.mo"))


def negotiate(accept_language: str | None) -> str:
    """The locale to answer a browser in, from its ``Accept-Language`` header: the first
    language (by q-value, then order) cube-lab has a catalog for; English ("en") otherwise.

    ``zh``, ``zh-CN``, ``zh-Hans`` and ``zh-SG`` read Simplified Chinese (zh_CN); ``zh-TW``
    and ``zh-HK`` (Traditional) get English, not a script the reader may not expect."""
    have = set(languages())
    ranked: list[tuple[float, int, str]] = []
    for index, part in enumerate((accept_language or "").split(",")):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if tag and quality > 0:
            ranked.append((-quality, index, tag.strip().lower().replace("_", "-")))
    for _, _, tag in sorted(ranked):
        if tag.startswith("en"):
            return "en"
        if tag in ("zh", "zh-cn", "zh-sg", "zh-hans", "zh-hans-cn") and "zh_CN" in have:
            return "zh_CN"
    return "en"


def translator_for(locale: str, html: bool = False) -> Any:
    """``_(msgid, *args)`` in ``locale``: the translation with ``%1``, ``%2``... filled in,
    the same placeholders as the front end's ``trans.__``.

    With ``html``, for a Jinja template: the translation and each argument are HTML-escaped
    (an argument that is already markup, ``"<code>x</code>"|safe``, is kept) and the result
    is markup, so autoescaping leaves it alone."""
    lookup = catalog(locale).gettext
    if html:
        from markupsafe import Markup, escape

        def _html(msgid: str, *args: object) -> Any:
            parts = [str(escape(a)) for a in args]
            return Markup(_fill(str(escape(lookup(msgid))), parts))  # all parts escaped

        return _html

    def _(msgid: str, *args: object) -> str:
        return _fill(lookup(msgid), [str(a) for a in args])

    return _


def _fill(text: str, args: list[str]) -> str:
    """``%1``, ``%2``... of ``text`` replaced by ``args`` in one pass (an argument's own
    ``%2`` stays); a placeholder without an argument stays as written."""
    return PLACEHOLDER.sub(
        lambda m: args[int(m.group(1)) - 1] if 0 < int(m.group(1)) <= len(args) else m.group(),
        text,
    )


def html_lang(locale: str) -> str:
    """The ``<html lang>`` of a page in ``locale`` ("zh_CN" -> "zh-CN")."""
    return locale.replace("_", "-")
