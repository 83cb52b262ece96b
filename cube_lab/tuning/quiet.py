"""NNI's tuners, quiet under a notebook cell."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def tuners_quiet() -> Iterator[None]:
    """NNI's tuners log INFO lines ("Using random seed ...") to stdout: in a notebook that is
    noise under the cell; their warnings and errors still show."""
    # importing it first sets the "nni" logger's level: do that before we raise it
    from nni.runtime import log  # noqa: F401

    logger = logging.getLogger("nni")
    before = logger.level
    logger.setLevel(max(before, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(before)
