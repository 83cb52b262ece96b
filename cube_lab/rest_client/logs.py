"""A job's log through the cube-lab service (``<where>/log`` answers chunks from an offset):
read whole, or printed and followed until its writer is done."""

from __future__ import annotations

import sys
import time
from typing import Any

from .client import ServiceClient

LOG_POLL_S = 0.5


def read_log(client: ServiceClient, where: str) -> str:
    text, offset = "", 0
    while True:
        chunk = client.get(f"{where}/log", offset=offset)
        text += chunk["text"]
        if chunk["done"] or chunk["offset"] == offset or chunk["offset"] >= chunk["size"]:
            return text
        offset = chunk["offset"]


def follow_log(client: ServiceClient, where: str, follow: bool, out: Any = None) -> None:
    """Print a log from the start: what there is now, or with ``follow`` until its writer is
    done."""
    stream = out or sys.stdout
    offset = 0
    while True:
        chunk = client.get(f"{where}/log", offset=offset)
        stream.write(chunk["text"])
        stream.flush()
        moved = chunk["offset"] != offset
        offset = chunk["offset"]
        if chunk["done"] or (not follow and (not moved or offset >= chunk["size"])):
            return
        if not moved:
            time.sleep(LOG_POLL_S)
