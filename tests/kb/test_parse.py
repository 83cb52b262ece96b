"""Knowledge bases without a model: each format parses (PDFs made here with fpdf2, DOCX with
python-docx), corrupt files say why, chunking by tokens, by headings and by pages, the BM25
index persists, and the metrics match hand computation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cube_lab.kb.chunk import chunk_document, split_tokens
from cube_lab.kb.evaluate import Question, Retrieved, score
from cube_lab.kb.index import KnowledgeIndex, NewChunk, rrf
from cube_lab.kb.parse import ParseError, parse_file


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_each_format_parses(tmp_path: Path) -> None:
    txt = parse_file(write(tmp_path / "a.txt", "  plain words here \n"))
    assert (txt.kind, [s.text for s in txt.sections]) == ("text", ["plain words here"])

    md = parse_file(
        write(
            tmp_path / "b.md",
            "intro\n# Guide\nstart\n## Install\npip it\n```\n# not a heading\n```\n"
            "## Use\nrun it\n# Other\nend\n",
        )
    )
    assert [(s.heading_path, s.text.splitlines()[0]) for s in md.sections] == [
        ((), "intro"),
        (("Guide",), "start"),
        (("Guide", "Install"), "pip it"),
        (("Guide", "Use"), "run it"),
        (("Other",), "end"),
    ]
    assert "# not a heading" in md.sections[2].text

    html = parse_file(
        write(
            tmp_path / "c.html",
            "<html><head><title>t</title><style>p{}</style></head><body><h1>Top</h1>"
            "<p>first &amp; para</p><script>var x=1</script><h2>Sub <b>part</b></h2>"
            "<ul><li>one</li><li>two</li></ul></body></html>",
        )
    )
    assert [(s.heading_path, s.text) for s in html.sections] == [
        (("Top",), "first & para"),
        (("Top", "Sub part"), "one\ntwo"),
    ]

    csv_doc = parse_file(
        write(tmp_path / "d.csv", 'question,answer,topic\nWhat is X?,"X is, well, Y",faq\n')
    )
    assert csv_doc.kind == "rows"
    assert csv_doc.sections[0].text == "Q: What is X?\nA: X is, well, Y"
    assert csv_doc.sections[0].meta == {"row": 1, "topic": "faq"}

    jsonl = parse_file(write(tmp_path / "e.jsonl", '{"text": "row one", "id": 7}\n\n"row two"\n'))
    assert [(s.text, s.meta) for s in jsonl.sections] == [
        ("row one", {"row": 1, "id": 7}),
        ("row two", {"row": 3}),
    ]

    nb = {
        "cells": [
            {"cell_type": "markdown", "source": ["# Analysis\n", "load data"]},
            {"cell_type": "code", "source": "df = load()", "outputs": [{"text": "OUTPUT"}]},
            {"cell_type": "markdown", "source": "## Plot"},
            {"cell_type": "code", "source": ["plot(df)"]},
        ],
        "metadata": {"kernelspec": {"language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    notebook = parse_file(write(tmp_path / "f.ipynb", json.dumps(nb)))
    assert [s.heading_path for s in notebook.sections] == [("Analysis",), ("Analysis", "Plot")]
    assert "```python\ndf = load()\n```" in notebook.sections[0].text
    assert "OUTPUT" not in notebook.sections[0].text
    assert "plot(df)" in notebook.sections[1].text


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        ("bad.txt", b"ok \xff\xfe broken", "not UTF-8"),
        ("bad.ipynb", b'{"cells": [', "invalid JSON"),
        ("bad2.ipynb", b'{"nbformat": 4}', "no cells"),
        ("bad.jsonl", b'{"text": "a"}\n{oops\n', "line 2 is not JSON"),
        ("bad.csv", b"text\nfine\n1,2\n", "row 2 has more cells"),
        ("bin.txt", b"a\x00b", "binary"),
        ("doc.pdf", b"%PDF-1.4", "not a readable PDF"),
        ("fake.pdf", b"just text", "not a PDF"),
        ("doc.docx", b"PK\x03\x04 broken zip", "not a readable DOCX"),
        ("old.docx", b"\xd0\xcf\x11\xe0 a .doc renamed", "not a readable DOCX"),
        ("x.xyz", b"?", "unknown file type"),
    ],
)
def test_corrupt_files_say_why(tmp_path: Path, name: str, data: bytes, says: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_file(write(tmp_path / name, data))
    assert says in err.value.error and name in err.value.error


def make_pdf(pages: list[str]) -> bytes:
    """A PDF with a text layer: one page per item (an empty item is a page without text)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 8, text)
    return bytes(pdf.output())


def make_docx(path: Path) -> Path:
    import docx

    d = docx.Document()
    d.add_heading("Handbook", 0)
    d.add_paragraph("Welcome to the handbook.")
    d.add_heading("Refunds", 1)
    d.add_paragraph("Items may be returned within thirty days.")
    d.add_heading("Cards", 2)
    d.add_paragraph("Card refunds take five business days.")
    table = d.add_table(rows=2, cols=2)
    for (r, c), text in {
        (0, 0): "code",
        (0, 1): "meaning",
        (1, 0): "R7",
        (1, 1): "refunded",
    }.items():
        table.cell(r, c).text = text
    d.add_heading("Shipping", 1)
    d.add_paragraph("Parcels ship in two days.")
    d.save(path)
    return path


def test_pdf_pages_and_docx_headings(tmp_path: Path) -> None:
    pages = ["Tomatoes need sun and water.", "The pump fault ZQX4741 stalls it.", "", "The end."]
    pdf = parse_file(write(tmp_path / "r.pdf", make_pdf(pages)), source="r.pdf")
    assert pdf.kind == "pdf"
    assert [(s.text, s.meta) for s in pdf.sections] == [
        ("Tomatoes need sun and water.", {"page": 1}),
        ("The pump fault ZQX4741 stalls it.", {"page": 2}),
        ("The end.", {"page": 4}),  # page 3 has no text
    ]
    by_pages = chunk_document(pdf, "pages", 8, 2)
    assert [(c.text, c.meta["page"], c.position) for c in by_pages] == [
        ("Tomatoes need sun and water.", 1, 0),
        ("The pump fault ZQX4741 stalls it.", 2, 1),
        ("The end.", 4, 2),
    ]
    long = parse_file(write(tmp_path / "l.pdf", make_pdf([" ".join(f"w{i}" for i in range(20))])))
    assert [c.meta["page"] for c in chunk_document(long, "pages", 8, 2)] == [1, 1, 1]
    by_tokens = chunk_document(pdf, "tokens", 8, 2)  # each chunk: the page it starts on
    assert [c.meta["page"] for c in by_tokens] == [1, 2]
    assert by_tokens[1].text.startswith("pump fault ZQX4741")

    docx_doc = parse_file(make_docx(tmp_path / "h.docx"), source="h.docx")
    assert docx_doc.kind == "docx"
    assert [(s.heading_path, s.text) for s in docx_doc.sections] == [
        (("Handbook",), "Welcome to the handbook."),
        (("Handbook", "Refunds"), "Items may be returned within thirty days."),
        (("Handbook", "Refunds", "Cards"),
         "Card refunds take five business days.\ncode | meaning\nR7 | refunded"),
        (("Handbook", "Shipping"), "Parcels ship in two days."),
    ]  # fmt: skip
    chunks = chunk_document(docx_doc, "headings", 50, 5)
    assert chunks[2].heading == "Handbook > Refunds > Cards"
    # pages on a document without pages: by tokens
    assert len(chunk_document(docx_doc, "pages", 50, 5)) == 1


def test_pdf_without_text_layer_says_so(tmp_path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.rect(10, 10, 50, 50)  # a drawing, no text: as a scan would be
    with pytest.raises(ParseError) as err:
        parse_file(write(tmp_path / "scan.pdf", bytes(pdf.output())))
    assert "no text layer" in err.value.error and "OCR" in err.value.detail
    truncated = make_pdf(["some text here"])[:200]
    with pytest.raises(ParseError, match="not a readable PDF"):
        parse_file(write(tmp_path / "cut.pdf", truncated))


def test_chunking_by_tokens_and_by_headings(tmp_path: Path) -> None:
    words = " ".join(f"w{i}" for i in range(25))
    assert split_tokens(words, 10, 3) == [
        " ".join(f"w{i}" for i in range(0, 10)),
        " ".join(f"w{i}" for i in range(7, 17)),
        " ".join(f"w{i}" for i in range(14, 24)),
        " ".join(f"w{i}" for i in range(21, 25)),
    ]
    doc = parse_file(
        write(tmp_path / "g.md", "# A\n" + words + "\n# B\nshort part\n"), source="g.md"
    )
    by_heading = chunk_document(doc, "headings", 10, 3)
    assert [(c.heading_path, c.position) for c in by_heading] == [
        (("A",), 0), (("A",), 1), (("A",), 2), (("A",), 3), (("B",), 4),
    ]  # fmt: skip
    assert by_heading[-1].text == "short part" and by_heading[0].source == "g.md"
    by_tokens = chunk_document(doc, "tokens", 10, 3)
    assert len(by_tokens) == 4  # 27 tokens across both sections
    assert by_tokens[-1].text.endswith("short part") and by_tokens[-1].heading_path == ("A",)
    rows = parse_file(write(tmp_path / "h.jsonl", '"one"\n"two"\n'))
    assert [c.text for c in chunk_document(rows, "tokens", 10, 3)] == ["one", "two"]
    with pytest.raises(ValueError, match="overlap"):
        chunk_document(doc, "tokens", 10, 10)


def test_metrics_match_hand_computed_values() -> None:
    questions = [
        Question("q1", sources=("a",)),
        Question("q2", chunks=(7, 9)),
        Question("q3", sources=("z",)),
    ]
    rankings = [
        [Retrieved(1, "b"), Retrieved(2, "a"), Retrieved(3, "a"), Retrieved(4, "c")],
        [Retrieved(7, "x"), Retrieved(1, "x"), Retrieved(2, "x"), Retrieved(9, "x")],
        [Retrieved(5, "y")],
    ]
    result = score(questions, rankings, k=3)
    # q1: first "a" at rank 2 -> recall@3 1, RR 1/2, nDCG (1/log2 3) / 1 = 0.63093
    # q2: 7 at 1, 9 at 4 -> recall@3 1/2, RR 1, nDCG (1 + 1/log2 5) / (1 + 1/log2 3)
    #     = 1.43068 / 1.63093 = 0.87722
    # q3: nothing -> 0, 0, 0
    assert [p["ranks"] for p in result.per_question] == [[2], [1, 4], [None]]
    assert result.per_question[0]["ndcg_at_10"] == pytest.approx(0.63093, abs=1e-5)
    assert result.per_question[1]["ndcg_at_10"] == pytest.approx(0.87722, abs=1e-5)
    assert result.recall_at_k == pytest.approx(0.5)
    assert result.mrr == pytest.approx(0.5)
    assert result.ndcg_at_10 == pytest.approx((0.63093 + 0.87722) / 3, abs=1e-5)
    assert Question.of({"question": "x", "source": "a"}).sources == ("a",)
    with pytest.raises(ValueError, match="no expected"):
        Question.of({"question": "x"})


def test_rrf_fuses_ranks() -> None:
    fused = rrf([[1, 2, 3], [3, 4]], (1.0, 1.0), k=60)
    assert [i for i, _ in fused] == [3, 1, 2, 4]
    assert fused[0][1] == pytest.approx(1 / 63 + 1 / 61)


def test_index_persists_and_removes(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((6, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    texts = ["alpha beta", "beta gamma", "gamma delta", "delta alpha", "omega", "omega omega"]
    index = KnowledgeIndex(tmp_path / "kb", 8)
    index.add([NewChunk(t, f"s{i % 2}", i) for i, t in enumerate(texts[:4])], vecs[:4])
    index.add([NewChunk(t, "s2", i) for i, t in enumerate(texts[4:])], vecs[4:])
    assert [i for i, _ in index.keyword_ids("omega", 5)] == [5, 4]  # tf 2 ranks first
    index.close()
    index = KnowledgeIndex(tmp_path / "kb", 8)  # reopened from its files
    assert len(index) == 6
    assert [i for i, _ in index.keyword_ids("alpha", 5)] == [0, 3]  # a tie: by id
    assert index.vector_ids(vecs[2], 1)[0][0] == 2
    assert index.remove_source("s0") == 2  # chunks 0 and 2
    assert [i for i, _ in index.keyword_ids("alpha", 5)] == [3]
    assert all(i not in (0, 2) for i, _ in index.vector_ids(vecs[2], 6))
    index.close()
    index = KnowledgeIndex(tmp_path / "kb", 8)
    assert len(index) == 4 and [i for i, _ in index.keyword_ids("gamma", 5)] == [1]
    hits = index.search("hybrid", 2, text="omega", vector=vecs[1])
    assert ({h.id for h in hits} <= {1, 4, 5} and hits[0].keyword_rank) or hits[0].vector_rank
    index.close()


def test_graph_search_above_the_exact_limit(tmp_path: Path) -> None:
    from cube_lab.kb import index as index_module

    n = index_module.EXACT_BELOW + 500
    rng = np.random.default_rng(5)
    vecs = rng.standard_normal((n, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index = KnowledgeIndex(tmp_path / "kb", 16)
    assert index._hnsw is not None  # usearch is installed: the graph proposes candidates
    index.add([NewChunk("x", f"s{i % 3}") for i in range(n)], vecs)
    for i in (0, 1234, n - 1):
        best, cosine = index.vector_ids(vecs[i], 3)[0]
        assert best == i and cosine == pytest.approx(1.0, abs=1e-5)  # exact rescoring
    index.close()  # the graph is saved and loaded, not rebuilt
    index = KnowledgeIndex(tmp_path / "kb", 16)
    assert index._hnsw_dirty is False and len(index._hnsw) == n
    index.remove_source("s0")
    found = index.vector_ids(vecs[0], 10)
    assert found and all(i % 3 for i, _ in found)
    index.close()
