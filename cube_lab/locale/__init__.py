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
from pathlib import Path
from typing import Any

DOMAIN = "cube_lab"
LOCALE_DIR = Path(__file__).resolve().parent


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
