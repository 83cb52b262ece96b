"""``%cube_kb`` in the "Python 3 (cube-lab)" kernel: create a knowledge base, add files with
the ingest's live view (``--wait`` fails the cell when a file failed), search, and chat (here
a question nothing in the documents answers: the model is not asked); and the lines it
prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("usearch")

from kernel_util import REPO, run_in_kernel

from cube_lab.magics_kb import citation_lines, hits_lines


def text(cell: Any) -> str:
    return "\n".join(o.get("text", "") or o.get("evalue", "") for o in cell.outputs)


def test_the_lines_it_prints() -> None:
    hits = [{"score": 0.5, "source": "a.md", "heading": "Refunds", "text": "A refund\n is paid"}]
    assert hits_lines(hits) == [" 1. 0.500  a.md > Refunds: A refund is paid"]
    answer = {"citations": [{"number": 1, "source": "a.pdf", "page": 3}, {"number": 2,
              "source": "b.md", "heading": "Intro"}]}  # fmt: skip
    assert citation_lines(answer) == ["[1] a.pdf, page 3", "[2] b.md > Intro"]


def test_kb_magics_in_the_kernel(tmp_path: Path, settings: Any) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "refunds.md").write_text("# Refunds\n\nA refund is paid back within thirty days.\n")
    (docs / "shipping.md").write_text("# Shipping\n\nParcels leave the warehouse every day.\n")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    env = {
        "JUPYTER_PATH": str(REPO),
        "CUBE_LAB_DATA_DIR": str(settings.data_dir),
        "CUBE_LAB_USER": "alice",
        "CUBE_LAB_ROOT_DIR": str(tmp_path),
    }
    nb = run_in_kernel(
        [
            "%cube_kb create handbook",
            "%cube_kb add handbook docs --wait",
            '%cube_kb search handbook "when is my refund paid" -k 2',
            '%cube_kb chat handbook "what colour is the moon" --base-url http://127.0.0.1:9/v1'
            " --model m",
            "%cube_kb add handbook broken.pdf --wait",
            "%cube_kb list",
            "%cube_kb search",
        ],
        tmp_path,
        env,
    )
    created, added, found, chat, broken, listed, bad = nb.cells
    assert "<KnowledgeBase alice/handbook" in text(created), text(created)
    # the live view, as a widget (its text: the ingest's line); no other output
    (view,) = added.outputs
    assert "application/vnd.jupyter.widget-view+json" in view["data"], added.outputs
    assert "succeeded: 2/2 files" in view["data"]["text/plain"], added.outputs
    first = text(found).splitlines()[0]
    assert first.startswith(" 1.") and "refunds.md > Refunds" in first, text(found)
    assert "No answer in the documents." in text(chat), text(chat)
    assert [o["output_type"] for o in broken.outputs][-1] == "error", broken.outputs
    assert "broken.pdf" in text(broken) and "CubeFailed" in str(broken.outputs[-1]), text(broken)
    assert text(listed).startswith("<KnowledgeBase alice/handbook: 2 sources"), text(listed)
    assert "cube-lab: %cube_kb search needs a knowledge base's NAME" in text(bad), text(bad)
