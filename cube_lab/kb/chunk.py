"""Sections to chunks: by tokens with overlap, by headings (one chunk per Markdown/HTML/DOCX
section, split by tokens only where a section is longer than the chunk size) or by pages (one
chunk per PDF page, split likewise; a document without pages is chunked by tokens). Rows
(CSV / JSONL, question-answer pairs) stay one chunk each.

A token here is a run of non-space characters: close enough to a word-piece count for
sizing chunks, and free of any tokenizer download. Each chunk keeps its source, its heading
path and the section's metadata (row number, PDF page, ...); a chunk by tokens takes those of
the section it starts in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .parse import Document, Section

STRATEGIES = ("tokens", "headings", "pages")
_TOKEN = re.compile(r"\S+")


@dataclass(frozen=True)
class Chunk:
    text: str
    source: str
    position: int  # order within the source
    heading_path: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def heading(self) -> str:
        return " > ".join(self.heading_path)


def check_sizes(size: int, overlap: int) -> None:
    if not isinstance(size, int) or size < 8:
        raise ValueError(f"chunk size must be an integer of at least 8 tokens, not {size!r}")
    if not isinstance(overlap, int) or not 0 <= overlap < size:
        raise ValueError(f"overlap must be an integer from 0 to chunk size - 1, not {overlap!r}")


def split_tokens(text: str, size: int, overlap: int) -> list[str]:
    """Windows of ``size`` tokens, each starting ``size - overlap`` tokens after the last;
    the text between tokens (newlines, indentation) is kept as it was."""
    spans = [m.span() for m in _TOKEN.finditer(text)]
    if not spans:
        return []
    if len(spans) <= size:
        return [text[spans[0][0] : spans[-1][1]]]
    out = []
    step = size - overlap
    start = 0
    while True:
        end = min(start + size, len(spans))
        out.append(text[spans[start][0] : spans[end - 1][1]])
        if end == len(spans):
            return out
        start += step


def chunk_document(
    doc: Document, strategy: str = "tokens", size: int = 200, overlap: int = 40
) -> list[Chunk]:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown chunking {strategy!r}; use one of {list(STRATEGIES)}")
    check_sizes(size, overlap)
    pieces: list[tuple[str, Section]] = []
    paged = any("page" in section.meta for section in doc.sections)
    if doc.kind == "rows" or strategy == "headings" or (strategy == "pages" and paged):
        for section in doc.sections:
            pieces += [(t, section) for t in split_tokens(section.text, size, overlap)]
    else:
        # by tokens across the whole document; a chunk takes the heading path of the
        # section it starts in
        joined: list[str] = []
        starts: list[tuple[int, Section]] = []
        offset = 0
        for section in doc.sections:
            starts.append((offset, section))
            joined.append(section.text)
            offset += len(_TOKEN.findall(section.text))
        text = "\n\n".join(joined)
        windows = split_tokens(text, size, overlap)
        step = size - overlap
        for i, window in enumerate(windows):
            first = i * step
            owner = next(s for o, s in reversed(starts) if o <= first) if starts else Section("")
            pieces.append((window, owner))
    return [
        Chunk(text, doc.source, n, section.heading_path, dict(section.meta))
        for n, (text, section) in enumerate(pieces)
    ]
