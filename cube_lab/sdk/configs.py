"""A config the SDK is given as a YAML/JSON file or a dict, and the folder its relative paths
start at (``cl.tune``, ``cl.finetune``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t


def read_config(
    config: str | os.PathLike[str] | dict[str, Any],
    base_dir: str | os.PathLike[str] | None,
    what: str,
) -> tuple[dict[str, Any], Path]:
    """(fields, folder): the file's folder (or ``base_dir``) for a file, else ``base_dir``
    or the current folder."""
    import yaml

    if isinstance(config, str | os.PathLike):
        path = Path(config).expanduser()
        try:
            data = yaml.safe_load(path.read_text())
        except FileNotFoundError:
            raise InvalidInput(_t("config file {value!r} not found", value=str(path))) from None
        except yaml.YAMLError as exc:
            raise InvalidInput(
                _t("config file {value!r} is not YAML", value=str(path)), str(exc)
            ) from None
        folder = Path(base_dir).expanduser() if base_dir else path.absolute().parent
    elif isinstance(config, dict):
        data, folder = dict(config), Path(base_dir or ".").expanduser().absolute()
    else:
        raise InvalidInput(
            _t("config must be a YAML/JSON file or a dict"),
            _t("got {kind}", kind=type(config).__name__),
        )
    if not isinstance(data, dict):
        raise InvalidInput(
            _t("the config must be a mapping, not {kind}", kind=type(data).__name__),
            _t("Check the {what} config's file or dict.", what=what),
        )
    return data, folder
