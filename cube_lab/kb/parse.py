"""Files to sections of text: plain text, Markdown, HTML, CSV / JSONL rows and notebooks.

A section is a stretch of text under one heading path (Markdown/HTML headings, a notebook's
Markdown headings) or one row of a table. ``parse_file`` raises ``ParseError`` saying what is
wrong with the file; a caller ingesting many files catches it per file, so a corrupt file
fails alone. PDF and DOCX are not parsed yet (their parsers, pypdf and python-docx, are not
dependencies); such files get a ``ParseError`` that says so.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

MARKDOWN = {".md", ".markdown"}
HTML = {".html", ".htm"}
TEXT = {".txt", ".text", ".rst", ".log"}
SUFFIXES = MARKDOWN | HTML | TEXT | {".csv", ".jsonl", ".ipynb"}
NOT_YET = {".pdf": "pypdf", ".docx": "python-docx"}
TEXT_KEYS = ("text", "content", "body", "passage")
QUESTION_KEYS = ("question", "q", "query", "prompt")
ANSWER_KEYS = ("answer", "a", "response", "completion")


class ParseError(Exception):
    """A file that cannot be parsed: ``error`` says why, ``detail`` how to fix it."""

    def __init__(self, error: str, detail: str = "") -> None:
        super().__init__(error)
        self.error = error
        self.detail = detail


@dataclass(frozen=True)
class Section:
    text: str
    heading_path: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Document:
    source: str
    kind: str  # text | markdown | html | rows | notebook
    sections: list[Section]


def supported(path: Path) -> bool:
    return path.suffix.lower() in SUFFIXES


def parse_file(path: Path, source: str | None = None) -> Document:
    """Parse one file by its suffix. ``source`` (default: the path) names it in metadata."""
    suffix = path.suffix.lower()
    name = source or str(path)
    if suffix in NOT_YET:
        raise ParseError(
            f"{path.name}: {suffix} files are not supported yet",
            f"Install {NOT_YET[suffix]} support (not in this release) or convert it to text.",
        )
    if suffix not in SUFFIXES:
        raise ParseError(
            f"{path.name}: unknown file type {suffix or '(none)'}",
            f"Supported: {', '.join(sorted(SUFFIXES))}.",
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ParseError(f"{path.name}: cannot be read: {exc.strerror or exc}") from exc
    return parse_bytes(data, suffix, name)


def parse_bytes(data: bytes, suffix: str, source: str) -> Document:
    label = Path(source).name
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParseError(
            f"{label}: not UTF-8 text (byte {exc.start} is {data[exc.start]:#04x})",
            "Save the file as UTF-8.",
        ) from exc
    if "\x00" in text:
        raise ParseError(f"{label}: holds NUL bytes; it is binary, not text")
    if suffix in MARKDOWN:
        return Document(source, "markdown", markdown_sections(text))
    if suffix in HTML:
        return Document(source, "html", html_sections(text, label))
    if suffix == ".csv":
        return Document(source, "rows", csv_sections(text, label))
    if suffix == ".jsonl":
        return Document(source, "rows", jsonl_sections(text, label))
    if suffix == ".ipynb":
        return Document(source, "notebook", notebook_sections(text, label))
    stripped = text.strip()
    return Document(source, "text", [Section(stripped)] if stripped else [])


# -- Markdown ------------------------------------------------------------------------------

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def markdown_sections(text: str, base: tuple[str, ...] = ()) -> list[Section]:
    """One section per heading (ATX ``#`` headings; none inside code fences), each with the
    path of headings above it."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    lines: list[str] = []
    fenced = False

    def flush() -> None:
        body = "\n".join(lines).strip()
        if body:
            sections.append(Section(body, base + tuple(t for _, t in path)))
        lines.clear()

    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        match = None if fenced else _HEADING.match(line)
        if match is None:
            lines.append(line)
            continue
        flush()
        level, title = len(match.group(1)), match.group(2).strip()
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
    flush()
    return sections


# -- HTML ----------------------------------------------------------------------------------

_BLOCK = {"p", "div", "li", "br", "tr", "td", "th", "pre", "blockquote", "section", "article"}
_SKIP = {"script", "style", "noscript", "template", "head"}


class _HTMLSections(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[Section] = []
        self.path: list[tuple[int, str]] = []
        self.parts: list[str] = []
        self.heading: list[str] | None = None
        self.heading_level = 0
        self.skip = 0

    def flush(self) -> None:
        body = re.sub(r"[ \t]+", " ", "".join(self.parts))
        body = re.sub(r"\s*\n\s*", "\n", body).strip()
        if body:
            self.sections.append(Section(body, tuple(t for _, t in self.path)))
        self.parts.clear()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skip += 1
        elif re.fullmatch(r"h[1-6]", tag):
            self.flush()
            self.heading, self.heading_level = [], int(tag[1])
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif re.fullmatch(r"h[1-6]", tag) and self.heading is not None:
            title = " ".join("".join(self.heading).split())
            while self.path and self.path[-1][0] >= self.heading_level:
                self.path.pop()
            if title:
                self.path.append((self.heading_level, title))
            self.heading = None
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        (self.heading if self.heading is not None else self.parts).append(data)


def html_sections(text: str, label: str = "") -> list[Section]:
    parser = _HTMLSections()
    try:
        parser.feed(text)
        parser.close()
    except Exception as exc:  # html.parser is lenient; anything it raises is a broken file
        raise ParseError(f"{label}: not readable as HTML: {exc}") from exc
    parser.flush()
    return parser.sections


# -- rows ----------------------------------------------------------------------------------


def _row_section(row: dict[str, Any], number: int) -> Section | None:
    """A row as text: question + answer rows as "Q: ... A: ...", a row with a text column as
    that text, any other as "key: value" lines. The other fields go to metadata."""
    lowered = {str(k).strip().lower(): k for k in row}
    question = next((lowered[k] for k in QUESTION_KEYS if k in lowered), None)
    answer = next((lowered[k] for k in ANSWER_KEYS if k in lowered), None)
    used: set[Any]
    if question is not None and answer is not None:
        text = f"Q: {row[question]}\nA: {row[answer]}"
        used = {question, answer}
    elif (key := next((lowered[k] for k in TEXT_KEYS if k in lowered), None)) is not None:
        text, used = str(row[key] if row[key] is not None else ""), {key}
    else:
        text = "\n".join(f"{k}: {v}" for k, v in row.items() if v not in (None, ""))
        used = set(row)
    if not text.strip():
        return None
    meta = {str(k): v for k, v in row.items() if k not in used and isinstance(v, str | int | float)}
    return Section(text.strip(), (), {"row": number, **meta})


def csv_sections(text: str, label: str = "") -> list[Section]:
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if not reader.fieldnames:
            return []
        rows = list(reader)
    except csv.Error as exc:
        raise ParseError(f"{label}: not valid CSV: {exc}") from exc
    out = []
    for number, row in enumerate(rows, start=1):
        if None in row:  # more cells than the header has columns
            raise ParseError(
                f"{label}: row {number} has more cells than the header's "
                f"{len(reader.fieldnames)} columns",
                "Quote cells that contain commas.",
            )
        section = _row_section(row, number)
        if section is not None:
            out.append(section)
    return out


def jsonl_sections(text: str, label: str = "") -> list[Section]:
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ParseError(
                f"{label}: line {number} is not JSON: {exc.msg}", "Write one JSON object a line."
            ) from exc
        if isinstance(value, str):
            value = {"text": value}
        if not isinstance(value, dict):
            raise ParseError(f"{label}: line {number} is not a JSON object or string")
        section = _row_section(value, number)
        if section is not None:
            out.append(section)
    return out


# -- notebooks -----------------------------------------------------------------------------


def notebook_sections(text: str, label: str = "") -> list[Section]:
    """Markdown cells and code cells (as fenced code) in order, split at the Markdown
    headings, so a code cell sits under the heading it follows. Outputs are left out."""
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"{label}: not a notebook (invalid JSON: {exc.msg})") from exc
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ParseError(f"{label}: not a notebook (no cells list)", "Save it with Jupyter.")
    kernelspec = (nb.get("metadata") or {}).get("kernelspec") or {}
    language = str(kernelspec.get("language") or "python")
    parts = []
    for number, cell in enumerate(cells):
        if not isinstance(cell, dict):
            raise ParseError(f"{label}: cell {number} is not an object")
        source = cell.get("source", "")
        body = "".join(source) if isinstance(source, list) else str(source)
        if not body.strip():
            continue
        if cell.get("cell_type") == "markdown":
            parts.append(body.strip())
        elif cell.get("cell_type") == "code":
            parts.append(f"```{language}\n{body.strip()}\n```")
    return markdown_sections("\n\n".join(parts))
