"""The language the notebook's live views speak: the one the user chose in JupyterLab.

JupyterLab keeps Settings > Language in the user's settings folder
(``<settings dir>/@jupyterlab/translation-extension/plugin.jupyterlab-settings``, its
``locale``: "zh_CN", "en", or "default" for the browser's). A kernel runs as that user, so it
reads the same file; where it says nothing (no file, "default") the views follow ``LC_ALL`` /
``LC_MESSAGES`` / ``LANG`` as the command line does. Read at most every ``CACHE_S`` seconds:
a change in Settings reaches the views within that.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from ..locale.messages import env_locale, negotiate

SETTINGS = Path("@jupyterlab", "translation-extension", "plugin.jupyterlab-settings")
CACHE_S = 5.0
_LOCALE = re.compile(r'"locale"\s*:\s*"([^"]*)"')
_cached: tuple[float, str] | None = None


def settings_dir() -> Path:
    """JupyterLab's user settings folder (``$JUPYTERLAB_SETTINGS_DIR`` when it is set)."""
    given = os.environ.get("JUPYTERLAB_SETTINGS_DIR")
    if given:
        return Path(given)
    from jupyter_core.paths import jupyter_config_dir

    return Path(jupyter_config_dir()) / "lab" / "user-settings"


def lab_locale() -> str | None:
    """What Settings > Language says ("zh_CN"), or None (not set, or the browser's)."""
    try:
        text = (settings_dir() / SETTINGS).read_text(encoding="utf-8")
    except OSError:
        return None
    # the file is JSON with comments: a regex reads the one field without a JSON5 parser
    found = _LOCALE.search(re.sub(r"^\s*//.*$", "", text, flags=re.M))
    if not found or found.group(1) in ("", "default"):
        return None
    return found.group(1).replace("-", "_")


def view_locale() -> str:
    """The views' locale: JupyterLab's setting, else the environment's; "en" by default."""
    global _cached
    now = time.monotonic()
    if _cached is not None and now - _cached[0] < CACHE_S:
        return _cached[1]
    chosen = lab_locale()
    locale = negotiate(chosen) if chosen else env_locale()
    _cached = (now, locale)
    return locale


def forget() -> None:
    """Read the setting again at the next call (tests, a changed environment)."""
    global _cached
    _cached = None
