"""Serves the OpenAPI document that describes every cube-lab route."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml
from tornado import web

from .base import CubeHandler

SPEC = Path(__file__).with_name("openapi.yaml")


@functools.cache
def openapi_document() -> dict[str, Any]:
    return yaml.safe_load(SPEC.read_text())


class OpenAPIHandler(CubeHandler):
    @web.authenticated
    async def get(self) -> None:
        self.reply(openapi_document())
