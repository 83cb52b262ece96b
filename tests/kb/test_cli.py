"""`cube-lab kb ...`: in this process and through a real server's REST API (as under the hub),
with per-file progress, a table or ``--json``, and exit codes: 0 done, 1 a file failed or
something is not found, 2 bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from server_util import TOKEN

from cube_lab import sdk
from cube_lab.cli import main
from cube_lab.identity import Caller
from tests.kb.test_service import DOCS, RARE, make_docs
from tests.sdk.test_sdk import server  # noqa: F401  (fixture)

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any) -> Any:
    monkeypatch.setenv("CUBE_LAB_USER", "alice")
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def test_kb_commands_in_this_process(cli: Any, ws: Any, tmp_path: Path) -> None:
    docs = make_docs(tmp_path / "docs")
    (docs / "broken.ipynb").write_text('{"cells": [')
    code, out, _ = cli("kb", "create", "docs", "--chunking", "headings", "--chunk-size", "64")
    assert (code, out.strip()) == (0, "Created knowledge base alice/docs")

    code, out, err = cli("kb", "add", "docs", "docs")
    assert code == 1  # one file failed; the others are in
    assert "[1/7] " in err and "[7/7] " in err and "broken.ipynb: FAILED" in err
    assert "invalid JSON" in err
    assert "7/7 file(s) (6 added, 1 failed), 6 chunk(s) added" in out

    code, out, err = cli("kb", "add", "docs", *(f"docs/{n}" for n in DOCS), "--json")
    record = json.loads(out)
    assert code == 0 and record["status"] == "succeeded" and record["chunks"] == 0
    assert {f["status"] for f in record["files"]} == {"unchanged"}

    code, out, _ = cli("kb", "list")
    assert code == 0 and out.splitlines()[0].split() == [
        "PROJECT",
        "NAME",
        "SOURCES",
        "CHUNKS",
        "CHUNKING",
        "OWNER",
    ]
    assert out.splitlines()[1].split() == ["alice", "docs", "6", "6", "headings", "alice"]
    code, out, _ = cli("kb", "show", "docs")
    assert code == 0 and out.startswith("alice/docs: 6 source(s), 6 chunk(s)")
    assert str(docs / "garden.md") in out

    code, out, _ = cli("kb", "search", "docs", RARE, "-k", "2", "--json")
    answer = json.loads(out)
    assert code == 0 and answer["hits"][0]["source"] == str(docs / "garden.md")
    assert answer["hits"] == ws.kb.query(Caller("alice"), None, "docs", RARE, k=2, mode="hybrid")
    code, out, _ = cli("kb", "search", "docs", RARE, "--mode", "bm25")
    assert code == 0 and out.startswith(" 1. ") and "garden.md #0 (Garden notes)" in out

    (tmp_path / "q.jsonl").write_text(
        json.dumps({"question": RARE, "source": str(docs / "garden.md")}) + "\n"
    )
    code, out, _ = cli("kb", "eval", "docs", "q.jsonl", "-k", "1", "--mode", "keyword")
    assert (code, out.strip()) == (0, "1 question(s): recall@1 1.000, MRR 1.000, nDCG@10 1.000")

    code, out, _ = cli("kb", "remove", "docs", "docs/shipping.txt")
    assert code == 0 and "(1 chunk(s))" in out

    # errors: a message on stderr and a non-zero exit
    (tmp_path / "report.pptx").write_bytes(b"%PDF-1.4")
    for args, exit_code, message in (
        (("kb", "remove", "docs", "docs/shipping.txt"), 1, "has no source"),
        (("kb", "search", "docs", "x", "-k", "0"), 2, "k must be an integer from 1 to 100"),
        (("kb", "add", "docs", "nowhere"), 2, "does not exist"),
        (("kb", "add", "docs", "report.pptx"), 2, "unsupported file type .pptx"),
        (("kb", "create", "docs"), 1, "already exists"),
        (("kb", "show", "nothing"), 1, "knowledge base 'nothing' not found"),
        (("kb", "eval", "docs", "missing.jsonl"), 2, "does not exist"),
    ):
        code, _, err = cli(*args)
        assert code == exit_code and err.startswith("cube-lab: error: "), (args, err)
        assert message in err.splitlines()[0], (args, err)
    code, out, _ = cli("kb", "search", "docs", "x", "-k", "0", "--json")
    assert code == 2 and json.loads(out)["error"].startswith("k must be")

    code, out, _ = cli("kb", "delete", "docs")
    assert (code, out.strip()) == (0, "Deleted knowledge base docs")
    code, out, _ = cli("kb", "list")
    assert out.startswith("No knowledge bases yet")


def test_kb_commands_through_a_server(
    cli: Any,
    server: tuple[str, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ``$CUBE_LAB_SERVICE_URL`` set (as under the hub) every command is a REST call;
    paths go relative to the root, sources come back as the client names them."""
    url, root = server
    monkeypatch.setenv("CUBE_LAB_SERVICE_URL", url)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", TOKEN)
    monkeypatch.setenv("CUBE_LAB_ROOT_DIR", str(root))
    monkeypatch.delenv("CUBE_LAB_USER")
    monkeypatch.chdir(root)
    make_docs(root / "docs")
    sdk.disconnect()

    code, out, err = cli("kb", "create", "docs", "--chunk-size", "64", "--overlap", "8")
    assert (code, out.strip()) == (0, "Created knowledge base alice/docs"), err
    code, out, err = cli("kb", "add", "docs", "docs")
    assert code == 0, err
    assert f"[{len(DOCS)}/{len(DOCS)}] docs/" in err
    assert f"({len(DOCS)} added), {len(DOCS)} chunk(s) added" in out
    code, out, _ = cli("kb", "search", "docs", RARE, "-k", "1", "--json")
    assert code == 0 and json.loads(out)["hits"][0]["source"] == "docs/garden.md"
    code, out, _ = cli("kb", "show", "docs", "--json")
    listed = json.loads(out)
    assert listed["chunks"] == len(DOCS)
    assert sorted(s["source"] for s in listed["source_list"]) == sorted(f"docs/{n}" for n in DOCS)
    (root / "q.json").write_text(json.dumps([{"question": RARE, "source": "docs/garden.md"}]))
    code, out, _ = cli("kb", "eval", "docs", "q.json", "-k", "1", "--json")
    assert code == 0 and json.loads(out)["recall_at_k"] == 1.0
    code, out, _ = cli("kb", "remove", "docs", "docs/garden.md")
    assert code == 0 and "Removed docs/garden.md" in out
    code, out, _ = cli("kb", "list")
    left = str(len(DOCS) - 1)
    assert out.splitlines()[1].split()[:4] == ["alice", "docs", left, left]

    (root / "report.pptx").write_bytes(b"%PDF-1.4")
    for args, exit_code, message in (
        (("kb", "search", "docs", "x", "-k", "500"), 2, "k must be an integer from 1 to 100"),
        (("kb", "add", "docs", "report.pptx"), 2, "unsupported file type .pptx"),
        (("kb", "add", "docs", "/"), 2, "outside your home"),
        (("kb", "show", "nothing"), 1, "knowledge base 'nothing' not found"),
    ):
        code, _, err = cli(*args)
        assert code == exit_code and err.startswith("cube-lab: error: "), (args, err)
        assert message in err.splitlines()[0], (args, err)
    code, out, _ = cli("kb", "delete", "docs")
    assert code == 0
    code, out, _ = cli("kb", "list", "--json")
    assert json.loads(out) == []
