"""Files to sections of text: plain text, Markdown, HTML, CSV / JSONL rows, notebooks, PDF
(its text layer) and DOCX.

A section is a stretch of text under one heading path (Markdown/HTML/DOCX headings, a
notebook's Markdown headings), one page of a PDF (``meta["page"]``, from 1) or one row of a
table. ``parse_file`` raises ``ParseError`` saying what is wrong with the file; a caller
ingesting many files catches it per file, so a corrupt file fails alone. PDFs are read with
pypdf and DOCX with python-docx (both in the ``kb`` extra), imported when such a file comes.
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
BINARY = {".pdf", ".docx"}  # parsed from their bytes, not decoded as text
SUFFIXES = MARKDOWN | HTML | TEXT | BINARY | {".csv", ".jsonl", ".ipynb"}
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
    kind: str  # text | markdown | html | rows | notebook | pdf | docx
    sections: list[Section]


def supported(path: Path) -> bool:
    return path.suffix.lower() in SUFFIXES


def parse_file(path: Path, source: str | None = None) -> Document:
    """Parse one file by its suffix. ``source`` (default: the path) names it in metadata."""
    suffix = path.suffix.lower()
    name = source or str(path)
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
    if suffix == ".pdf":
        return Document(source, "pdf", pdf_sections(data, label))
    if suffix == ".docx":
        return Document(source, "docx", docx_sections(data, label))
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


# -- PDF (the text layer) -------------------------------------------------------------------


def pdf_sections(data: bytes, label: str = "") -> list[Section]:
    """One section per page that has text (``meta["page"]`` from 1). A PDF that pypdf cannot
    open, an encrypted one and one without any text layer (a scan) are ``ParseError``s."""
    import logging

    try:
        from pypdf import PdfReader
        from pypdf.errors import FileNotDecryptedError, PyPdfError
    except ImportError as exc:  # pragma: no cover - an install without the kb extra
        raise ParseError(
            f"{label}: PDF support is not installed", "pip install 'cube-lab[kb]' (pypdf)."
        ) from exc
    if not data.lstrip()[:5].startswith(b"%PDF-"):
        raise ParseError(
            f"{label}: not a PDF (it does not start with %PDF-)", "Give the PDF file itself."
        )
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its repair warnings are noise here
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise ParseError(
                f"{label}: the PDF is encrypted with a password", "Save an unencrypted copy."
            )
        sections = []
        for number, page in enumerate(reader.pages, start=1):
            text = _tidy(page.extract_text() or "")
            if text:
                sections.append(Section(text, (), {"page": number}))
        pages = len(reader.pages)
    except ParseError:
        raise
    except FileNotDecryptedError as exc:
        raise ParseError(
            f"{label}: the PDF is encrypted with a password", "Save an unencrypted copy."
        ) from exc
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ParseError(
            f"{label}: not a readable PDF ({type(exc).__name__}: {exc})",
            "The file is damaged or truncated; export it again.",
        ) from exc
    if pages and not sections:
        raise ParseError(
            f"{label}: the PDF has no text layer ({pages} page(s) of images?)",
            "Run OCR on it first (e.g. ocrmypdf) or add a text version.",
        )
    return sections


def _tidy(text: str) -> str:
    """Trailing spaces off each line, runs of blank lines to one."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


# -- DOCX ----------------------------------------------------------------------------------

_DOCX_HEADING = re.compile(r"heading\s*([1-9])", re.IGNORECASE)


def _docx_level(paragraph: Any) -> int | None:
    """A heading paragraph's level (Title is 0, Heading N is N); None for body text."""
    style = paragraph.style
    for name in (getattr(style, "name", None), getattr(style, "style_id", None)):
        if not name:
            continue
        if name.lower() == "title":
            return 0
        match = _DOCX_HEADING.fullmatch(name.strip())
        if match:
            return int(match.group(1))
    return None


def docx_sections(data: bytes, label: str = "") -> list[Section]:
    """Paragraphs and tables (rows as ``cell | cell`` lines) in document order, one section
    per heading (Title, Heading 1-9 styles) with the path of headings above it."""
    import zipfile

    try:
        import docx
        from docx.opc.exceptions import PackageNotFoundError
        from docx.table import Table
    except ImportError as exc:  # pragma: no cover - an install without the kb extra
        raise ParseError(
            f"{label}: DOCX support is not installed", "pip install 'cube-lab[kb]' (python-docx)."
        ) from exc
    try:
        document = docx.Document(io.BytesIO(data))
        blocks = list(document.iter_inner_content())
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise ParseError(
            f"{label}: not a readable DOCX ({type(exc).__name__}: {exc})",
            "Save it again as a Word document (.docx), not .doc or another format.",
        ) from exc
    except Exception as exc:  # lxml's errors for a broken document.xml, and the like
        raise ParseError(
            f"{label}: not a readable DOCX ({type(exc).__name__}: {exc})",
            "The file is damaged; save it again from Word or LibreOffice.",
        ) from exc
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    lines: list[str] = []

    def flush() -> None:
        body = _tidy("\n".join(lines))
        if body:
            sections.append(Section(body, tuple(t for _, t in path)))
        lines.clear()

    for block in blocks:
        if isinstance(block, Table):
            for row in block.rows:
                cells: list[str] = []
                for cell in row.cells:  # a merged cell repeats: keep it once
                    text = " ".join(cell.text.split())
                    if not cells or cells[-1] != text:
                        cells.append(text)
                if any(cells):
                    lines.append(" | ".join(cells))
            continue
        text = block.text.strip()
        level = _docx_level(block)
        if level is None:
            lines.append(text)
            continue
        if not text:
            continue
        flush()
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, " ".join(text.split())))
    flush()
    return sections
