"""``%cube_kb``: knowledge bases from a notebook, thin callers of ``cl.kb`` (the same API).

``%cube_kb list [--project P]``
``%cube_kb create NAME [--project P] [--chunking tokens|headings|pages] [--chunk-size N]``
``%cube_kb add NAME PATH... [--project P] [--wait]``
    starts the ingest and shows its live view (files done of total, each file's outcome);
    ``--wait`` blocks and fails the cell when a file failed.
``%cube_kb search NAME "query" [-k N] [--mode hybrid|vector|keyword] [--project P]``
``%cube_kb chat NAME "question" (--deployment D | --base-url U --model M) [-k N] [--project P]``
    prints the answer, then its numbered citations (source, page or heading).
``search`` and ``chat`` take ``--rerank MODEL[/VERSION] [--rerank-top-n N]``: a cross-encoder
registered in the project reorders the chunks (each line then shows its rerank score).
"""

from __future__ import annotations

import shlex
from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class

from .errors import InvalidInput
from .locale.messages import _t
from .magics import CubeFailed, _cube_errors, _parse, _parser
from .sdk.views import tr

COMMANDS = ("list", "create", "add", "search", "chat")


def _kb_parser() -> Any:
    p = _parser("%cube_kb", "Knowledge bases: list, create, add, search, chat.")
    p.add_argument("command", choices=COMMANDS)
    p.add_argument("name", nargs="?")
    p.add_argument("rest", nargs="*", help="paths to add, or the query / question")
    p.add_argument("--project")
    p.add_argument("--chunking", choices=["tokens", "headings", "pages"])
    p.add_argument("--chunk-size", type=int)
    p.add_argument("--wait", action="store_true")
    p.add_argument("-k", type=int, default=5)
    p.add_argument("--mode", default="hybrid", choices=["hybrid", "vector", "keyword", "bm25"])
    p.add_argument("--deployment")
    p.add_argument("--base-url")
    p.add_argument("--model")
    p.add_argument("--rerank")
    p.add_argument("--rerank-top-n", type=int)
    return p


def _rerank(args: Any) -> dict[str, Any] | None:
    if not args.rerank:
        if args.rerank_top_n is not None:
            raise InvalidInput(
                _t("--rerank-top-n needs --rerank MODEL"),
                _t("e.g. --rerank my-reranker --rerank-top-n 20"),
            )
        return None
    rerank: dict[str, Any] = {"model": args.rerank}
    if args.rerank_top_n is not None:
        rerank["top_n"] = args.rerank_top_n
    return rerank


def hits_lines(hits: list[dict[str, Any]], width: int = 100) -> list[str]:
    """One line per chunk found: rank, score, source (and heading), the text's start."""
    lines = []
    for i, hit in enumerate(hits, 1):
        where = hit.get("source", "")
        if hit.get("heading"):
            where += f" > {hit['heading']}"
        where = where or "-"
        text = " ".join(str(hit.get("text", "")).split())
        score = f"{hit.get('score', 0):.3f}"
        if hit.get("rerank") is not None:
            score = f"{hit['rerank']:.3f} ({tr(_t('rerank'))}; {score})"
        lines.append(f"{i:>2}. {score}  {where}: {text[:width]}")
    return lines


def citation_lines(answer: dict[str, Any]) -> list[str]:
    """``[n] source, page N`` (or ``> heading``) for each citation of a kb chat answer."""
    out = []
    for c in answer.get("citations", []):
        where = str(c.get("source", ""))
        if c.get("page") is not None:
            where += tr(_t(", page {page}", page=c["page"]))
        elif c.get("heading"):
            where += f" > {c['heading']}"
        out.append(f"[{c['number']}] {where}")
    return out


@magics_class
class KbMagics(Magics):
    @line_magic
    @_cube_errors
    def cube_kb(self, line: str) -> None:
        """``%cube_kb add docs notes/ --wait``, ``%cube_kb search docs "refund policy"``,
        ``%cube_kb chat docs "How long do refunds take?" --deployment my-llm``."""
        from . import kb

        args = _parse(_kb_parser(), shlex.split(line))
        if args.command == "list":
            for found in kb.list(args.project):
                print(repr(found))
            return
        if not args.name:
            raise InvalidInput(
                _t("%cube_kb {command} needs a knowledge base's NAME", command=args.command),
                _t("e.g. %cube_kb {command} docs ...", command=args.command),
            )
        if args.command == "create":
            options = {"chunking": args.chunking, "chunk_size": args.chunk_size}
            given = {k: v for k, v in options.items() if v}
            print(repr(kb.create(args.name, args.project, **given)))
            return
        base = kb.get(args.name, args.project)
        if args.command == "add":
            self._add(base, args.rest, args.wait)
        elif args.command == "search":
            hits = base.search(" ".join(args.rest), k=args.k, mode=args.mode, rerank=_rerank(args))
            print("\n".join(hits_lines(hits)) or tr(_t("(nothing found)")))
        else:
            answer = base.chat(
                " ".join(args.rest),
                deployment=args.deployment,
                base_url=args.base_url,
                model=args.model,
                k=args.k,
                mode=args.mode,
                rerank=_rerank(args),
            )
            print(answer["answer"])
            if answer.get("answered"):
                print("\n".join(["", *citation_lines(answer)]))

    @staticmethod
    def _add(base: Any, paths: list[str], wait: bool) -> None:
        from .sdk import views

        if not paths:
            raise InvalidInput(
                _t("%cube_kb add NAME PATH...: give the files or folders to add"),
                _t("e.g. %cube_kb add docs notes/ handbook.pdf --wait"),
            )
        ingest = base.add(*paths)
        shown = views.show(ingest)
        if not wait:
            return
        ingest.wait()
        views.settle(ingest, shown)
        if ingest.status != "succeeded" or ingest.failed:
            failed = "; ".join(f"{f['source']}: {f.get('error')}" for f in ingest.failed)
            said = _t("ingest {id} {status}", id=ingest.id, status=ingest.status)
            raise CubeFailed(f"cube-lab: {tr(said)}" + (f". {failed}" if failed else ""))
