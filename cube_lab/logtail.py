"""Reading a growing log file in pieces, so an API client can follow it live."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

LOG_CHUNK = 64 * 1024


@dataclass(frozen=True)
class LogChunk:
    text: str
    offset: int  # pass it back to read on from here
    size: int
    done: bool  # the writer has finished and everything was read: no more will come


def read_chunk(path: Path, offset: int, limit: int, finished: bool) -> LogChunk:
    """The log from ``offset``; a first look (offset 0) at a long log shows its tail."""
    if not path.exists():
        return LogChunk("", 0, 0, finished)
    size = path.stat().st_size
    if offset == 0 and size > limit:
        offset = size - limit
    with open(path, "rb") as fh:
        fh.seek(min(offset, size))
        data = fh.read(min(limit, LOG_CHUNK * 4))
    end = offset + len(data)
    return LogChunk(data.decode("utf-8", "replace"), end, size, finished and end >= size)
