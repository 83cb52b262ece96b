"""`cube-lab kb create|list|show|add|sync|preview|remove|search|eval|chat|delete`: knowledge
bases from a shell (``query`` is ``search``). ``sync`` brings a knowledge base in line with a
folder (new and changed files added, gone ones removed; exit 1 when a file failed).

Each command is a thin call of ``KnowledgeBaseService`` (in this process) or of the REST API
(under the hub, ``REMOTE``), and prints the same text from the same JSON (``show_*``);
``--json`` prints the JSON. ``add`` starts an ingest and follows its progress on stderr; it
exits 1 when a file failed (the others are added), 2 on bad input, as every command does.
``chat`` asks a model (``--deployment`` or ``--base-url`` + ``--model``; the key from
``--api-key`` or ``$OPENAI_API_KEY``) with the passages retrieved, and prints its answer and
the numbered sources. ``search``, ``eval`` and ``chat`` take ``--rerank MODEL[/VERSION]``
(a cross-encoder registered in the project) and ``--rerank-top-n N``; ``create --rerank``
makes it the knowledge base's default (``--no-rerank`` turns a default off for one call).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..identity import Caller
from ..locale.messages import _t, env_locale, localize
from ..rest_client import relative
from ..serialize import to_jsonable
from .args import print_json

if TYPE_CHECKING:
    from ..rest_client import ServiceClient
    from ..workspace import Workspace

MODES = ("vector", "keyword", "bm25", "hybrid")
POLL_S = 0.2
UPLOAD = "upload:"
Json = dict[str, Any]


# -- what is printed (the same here and under the hub) -----------------------------------------


def show_kb(view: Json) -> None:
    print(
        f"{view['project']}/{view['name']}: {view['sources']} source(s), {view['chunks']} "
        f"chunk(s); {view['chunking']} chunks of {view['chunk_size']} tokens "
        f"(overlap {view['overlap']}), model {view['model']}, owner {view['owner']}"
    )


def show_kbs(views: list[Json]) -> None:
    if not views:
        print("No knowledge bases yet: cube-lab kb create NAME")
        return
    print(f"{'PROJECT':<16} {'NAME':<24} {'SOURCES':>7} {'CHUNKS':>8}  {'CHUNKING':<9} OWNER")
    for v in views:
        print(
            f"{v['project']:<16} {v['name']:<24} {v['sources']:>7} {v['chunks']:>8}  "
            f"{v['chunking']:<9} {v['owner']}"
        )


def show_sources(sources: list[Json]) -> None:
    for s in sources:
        print(f"  {s.get('chunks', 0):>6} chunk(s)  {s.get('kind', ''):<9} {s['source']}")


def show_progress(record: Json, seen: int, out: Any) -> int:
    """Print the files finished since ``seen``; how many are printed now."""
    files = record.get("files") or []
    for n, f in enumerate(files[seen:], start=seen + 1):
        what = f"{f['status']}, {f['chunks']} chunk(s)" if f["status"] != "failed" else "FAILED"
        print(f"[{n}/{record['files_total']}] {f['source']}: {what}", file=out, flush=True)
        if f["status"] == "failed":
            print(f"    {f['error']}" + (f" ({f['detail']})" if f.get("detail") else ""), file=out)
    return len(files)


def show_ingest(record: Json) -> None:
    counts: dict[str, int] = {}
    for f in record.get("files") or []:
        counts[f["status"]] = counts.get(f["status"], 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no files"
    print(
        f"Ingest {record['id']} {record['status']}: {record['files_done']}/"
        f"{record['files_total']} file(s) ({summary}), {record['chunks']} chunk(s) added"
    )
    if record.get("error"):
        print(f"  {record['error']}")


def show_hits(answer: Json) -> None:
    hits = answer["hits"]
    if not hits:
        print(f"Nothing found for {answer['query']!r} ({answer['mode']})")
        return
    for rank, h in enumerate(hits, start=1):
        where = f"{h['source']} #{h['position']}" + (f" ({h['heading']})" if h["heading"] else "")
        scores = f"{h['score']:.4f}"
        if "rerank" in h:  # reranked: the cross-encoder's score and the first-stage rank
            ranked = "-" if h["rerank"] is None else f"{h['rerank']:.4f}"
            scores = f"rerank {ranked} (fused {scores}, was #{h.get('first_rank')})"
        print(f"{rank:>2}. {scores}  {where}")
        text = " ".join(h["text"].split())
        print(f"    {text[:200]}{'...' if len(text) > 200 else ''}")


def show_scores(scores: Json) -> None:
    rerank = scores.get("rerank")
    print(
        f"{scores['questions']} question(s): recall@{scores['k']} {scores['recall_at_k']:.3f}, "
        f"MRR {scores['mrr']:.3f}, nDCG@10 {scores['ndcg_at_10']:.3f}"
        + (f" (reranked by {rerank['model']})" if rerank else "")
    )


def show_answer(result: Json) -> None:
    print(result["answer"])
    if not result["answered"]:
        print(f"  ({result.get('reason', '')})")
        return
    print()
    for c in result["citations"]:
        where = c["source"] + (f", page {c['page']}" if c.get("page") is not None else "")
        where += f", {c['heading']}" if c.get("heading") else ""
        mark = "*" if c["cited"] else " "
        print(f"{mark}[{c['number']}] {where} (chunk {c['chunk_id']})")


def filters_of(a: argparse.Namespace) -> Json | None:
    """``--source GLOB`` (repeatable), ``--page N`` or ``--page A-B``, ``--heading GLOB``."""
    filters: Json = {}
    if a.source:
        filters["source"] = a.source
    if a.page:
        low, dash, high = a.page.partition("-")
        try:
            if dash:
                filters["page"] = {
                    **({"from": int(low)} if low else {}),
                    **({"to": int(high)} if high else {}),
                }
            else:
                filters["page"] = int(low)
        except ValueError:
            raise InvalidInput(
                _t("--page takes a number or a range, not {value!r}", value=a.page),
                _t("e.g. --page 3, --page 2-5 or --page 4-"),
            ) from None
    if a.heading:
        filters["heading"] = a.heading
    return filters or None


def rerank_of(a: argparse.Namespace) -> Json | bool | None:
    """``--rerank MODEL[/VERSION]`` and ``--rerank-top-n N`` as the request's ``rerank``;
    ``--no-rerank``: False (not the knowledge base's default); none: None (its default)."""
    if getattr(a, "no_rerank", False):
        if a.rerank or a.rerank_top_n is not None:
            raise InvalidInput(
                _t("give --rerank or --no-rerank, not both"), _t("e.g. --rerank my-reranker")
            )
        return False
    if not a.rerank:
        if a.rerank_top_n is not None:
            raise InvalidInput(
                _t("--rerank-top-n needs --rerank MODEL"),
                _t("e.g. --rerank my-reranker --rerank-top-n 20"),
            )
        return None
    rerank: Json = {"model": a.rerank}
    if a.rerank_top_n is not None:
        rerank["top_n"] = a.rerank_top_n
    return rerank


def chat_body(a: argparse.Namespace) -> Json:
    """The request of ``kb chat`` from its options (the same here and under the hub)."""
    if a.deployment and a.base_url:
        raise InvalidInput(
            _t("give --deployment or --base-url, not both"),
            _t("--deployment NAME (an LLM deployment) or --base-url URL --model M"),
        )
    target: Json
    if a.deployment:
        target = {"deployment": a.deployment, **({"model": a.model} if a.model else {})}
    elif a.base_url:
        target = {"base_url": a.base_url, "model": a.model}
        key = a.api_key or os.environ.get("OPENAI_API_KEY")
        if key:
            target["api_key"] = key
    else:
        raise InvalidInput(
            _t("which model answers? give --deployment or --base-url"),
            _t(
                "--deployment NAME (an LLM deployment of the project) or --base-url URL "
                "--model M (any OpenAI-compatible server; the key: --api-key or $OPENAI_API_KEY)"
            ),
        )
    template = None
    if a.template:
        path = Path(a.template).expanduser()
        try:
            template = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(_t("cannot read the template {path}", path=path), str(exc)) from None
    params = {"max_tokens": a.max_tokens, "temperature": a.temperature}
    body = {
        "query": a.query,
        "target": target,
        "k": a.k,
        "mode": a.mode,
        "threshold": a.threshold,
        "template": template,
        "system": a.system,
        "params": {k: v for k, v in params.items() if v is not None} or None,
        "filters": filters_of(a),
        "rerank": rerank_of(a),
    }
    return {k: v for k, v in body.items() if v is not None}


def finish_ingest(a: argparse.Namespace, record: Json) -> None:
    if a.json:
        print_json(record)
    else:
        show_ingest(record)
    if record["status"] != "succeeded" or record["failed"]:
        raise SystemExit(1)


def follow(get: Callable[[], Json], first: Json, a: argparse.Namespace) -> Json:
    """Poll an ingest until it ends, printing each finished file on stderr."""
    record, seen = first, 0
    while True:
        if not a.quiet:
            seen = show_progress(record, seen, sys.stderr)
        if record["status"] not in ("queued", "running"):
            return record
        time.sleep(POLL_S)
        record = get()


def read_questions(raw: str) -> list[Any]:
    """A question set: a JSON list, or JSONL (one question object a line)."""
    path = Path(raw).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInput(
            _t("{path} does not exist", path=path), _t("Give a .json or .jsonl file.")
        ) from None
    try:
        if path.suffix.lower() == ".jsonl":
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(_t("{name} is not valid JSON", name=path.name), str(exc)) from None
    if not isinstance(data, list):
        raise InvalidInput(
            _t("{name} must hold a list of questions", name=path.name), _t('[{{"question": ...}}]')
        )
    return data


# -- in this process --------------------------------------------------------------------------


def _options(a: argparse.Namespace) -> Json:
    return {
        k: v
        for k, v in (
            ("chunking_", a.chunking),
            ("chunk_size", a.chunk_size),
            ("overlap", a.overlap),
            ("model", a.model),
            ("engine", a.engine),
            ("milvus", {"uri": a.milvus_uri} if a.milvus_uri else None),
            ("rerank", rerank_of(a)),
        )
        if v is not None
    }


def kb_create(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    view = to_jsonable(ws.kb.create(caller, a.name, project=a.project, **_options(a)))
    if a.json:
        print_json(view)
    else:
        print(f"Created knowledge base {view['project']}/{view['name']}")


def kb_list(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    views = to_jsonable(ws.kb.list(caller, a.project))
    print_json(views) if a.json else show_kbs(views)


def kb_show(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    view = to_jsonable(ws.kb.get(caller, a.project, a.name))
    sources = to_jsonable(ws.kb.sources(caller, a.project, a.name))
    if a.json:
        print_json({**view, "source_list": sources})
        return
    show_kb(view)
    show_sources(sources)


def kb_add(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    paths = [Path(p).expanduser() for p in a.paths]
    first = ws.kb.start_ingest(caller, a.project, a.name, paths)
    record = follow(lambda: ws.kb.ingest(caller, a.project, a.name, first["id"]), first, a)
    finish_ingest(a, record)


def kb_remove(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    removed = ws.kb.remove(caller, a.project, a.name, a.source)
    answer = {"source": a.source, "removed_chunks": removed}
    if a.json:
        print_json(answer)
    else:
        print(f"Removed {a.source} ({removed} chunk(s)) from {a.name}")


def kb_search(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    filters, rerank = filters_of(a), rerank_of(a)
    hits = ws.kb.query(
        caller, a.project, a.name, a.query, k=a.k, mode=a.mode, filters=filters, rerank=rerank
    )
    answer = {"query": a.query, "mode": a.mode, "k": a.k, "hits": hits}
    print_json(answer) if a.json else show_hits(answer)


def kb_eval(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    questions = read_questions(a.questions)
    scores = ws.kb.evaluate(
        caller, a.project, a.name, questions, k=a.k, mode=a.mode, rerank=rerank_of(a)
    )
    scores = to_jsonable(scores)
    print_json(scores) if a.json else show_scores(scores)


def kb_chat(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    from ..kb.rag import answer

    result = answer(ws.kb, ws.serving, caller, a.project, a.name, chat_body(a))
    result = localize(result, env_locale())
    print_json(result) if a.json else show_answer(result)


def show_preview(result: Json) -> None:
    """Each chunk: number, source, page, heading path, tokens and its first words; then each
    file's count (or error)."""
    print(
        f"chunking {result['chunking']}, {result['chunk_size']} tokens, overlap {result['overlap']}"
    )
    for n, c in enumerate(result["chunks"], start=1):
        where = c["source"] + (f" p.{c['page']}" if c.get("page") is not None else "")
        heading = f" [{c['heading']}]" if c.get("heading") else ""
        words = " ".join(c["text"].split())
        words = words if len(words) <= 72 else words[:71] + "\u2026"
        print(f"{n:>4}  {where}{heading} ({c['tokens']} tokens)\n      {words}")
    for f in result["files"]:
        if f["status"] == "failed":
            print(f"{f['source']}: FAILED: {f['error']}", file=sys.stderr)
        else:
            same = " (unchanged: already in the knowledge base)" if f.get("unchanged") else ""
            print(f"{f['source']}: {f['chunks']} chunk(s), {f['tokens']} token(s){same}")
    if result.get("truncated"):
        print(f"(first {len(result['chunks'])} of {result['total_chunks']} chunks shown)")


def _preview_options(a: argparse.Namespace) -> Json:
    return {
        key: getattr(a, key)
        for key in ("chunking", "chunk_size", "overlap")
        if getattr(a, key) is not None
    }


def finish_preview(a: argparse.Namespace, result: Json) -> None:
    print_json(result) if a.json else show_preview(result)
    if any(f["status"] == "failed" for f in result["files"]):
        raise SystemExit(1)


def kb_preview(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    from ..kb.preview import preview

    paths = [Path(p).expanduser().resolve() for p in a.paths]
    result = to_jsonable(
        preview(ws.kb, caller, a.project, a.name, paths, options=_preview_options(a))
    )
    finish_preview(a, result)


def show_sync(summary: Json) -> None:
    for f in summary["failed"]:
        detail = f" ({f['detail']})" if f.get("detail") else ""
        print(f"{f['source']}: FAILED: {f['error']}{detail}", file=sys.stderr)
    for source in summary["removed"]:
        print(f"removed {source}")
    print(
        f"Synced {summary['project']}/{summary['kb']} with {summary['folder']}: "
        f"{len(summary['added'])} added, {len(summary['replaced'])} changed, "
        f"{len(summary['unchanged'])} unchanged, {len(summary['removed'])} removed, "
        f"{len(summary['failed'])} failed; {summary['chunks']} chunk(s) in all"
    )


def _sync_options(a: argparse.Namespace) -> Json:
    return {
        key: getattr(a, key)
        for key in ("chunking", "chunk_size", "overlap")
        if getattr(a, key) is not None
    }


def finish_sync(a: argparse.Namespace, summary: Json) -> None:
    print_json(summary) if a.json else show_sync(summary)
    if summary["failed"]:
        raise SystemExit(1)


def kb_sync(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    summary = ws.kb.sync_folder(
        caller,
        a.project,
        a.name,
        Path(a.folder).expanduser(),
        patterns=a.pattern,
        delete_missing=not a.keep_missing,
        options=_sync_options(a) or None,
    )
    finish_sync(a, summary)


def kb_delete(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    ws.kb.delete(caller, a.project, a.name)
    if a.json:
        print_json({"deleted": a.name})
    else:
        print(f"Deleted knowledge base {a.name}")


# -- under the hub: the same commands through the REST API -------------------------------------


def _where(client: ServiceClient, a: argparse.Namespace) -> str:
    from ..rest_client import segment
    from .remote.common import project_of

    return f"kb/{segment(project_of(client, a))}/{segment(a.name)}"


def _source(raw: str) -> str:
    return raw if raw.startswith(UPLOAD) else relative(raw, "source")


def remote_create(client: ServiceClient, a: argparse.Namespace) -> None:
    body = {
        "name": a.name,
        "project": a.project,
        "chunking": a.chunking,
        "chunk_size": a.chunk_size,
        "overlap": a.overlap,
        "model": a.model,
        "engine": a.engine,
        "milvus": {"uri": a.milvus_uri} if a.milvus_uri else None,
        "rerank": rerank_of(a),
    }
    view = client.post("kb", {k: v for k, v in body.items() if v is not None})
    if a.json:
        print_json(view)
    else:
        print(f"Created knowledge base {view['project']}/{view['name']}")


def remote_list(client: ServiceClient, a: argparse.Namespace) -> None:
    views = client.get("kb", project=a.project)["knowledge_bases"]
    print_json(views) if a.json else show_kbs(views)


def remote_show(client: ServiceClient, a: argparse.Namespace) -> None:
    where = _where(client, a)
    view, sources = client.get(where), client.get(f"{where}/sources")["sources"]
    if a.json:
        print_json({**view, "source_list": sources})
        return
    show_kb(view)
    show_sources(sources)


def remote_add(client: ServiceClient, a: argparse.Namespace) -> None:
    where = _where(client, a)
    first = client.post(f"{where}/sources", {"paths": [relative(p) for p in a.paths]})
    record = follow(lambda: client.get(f"{where}/ingests/{first['id']}"), first, a)
    finish_ingest(a, record)


def remote_remove(client: ServiceClient, a: argparse.Namespace) -> None:
    answer = client.delete(f"{_where(client, a)}/sources", source=_source(a.source))
    if a.json:
        print_json(answer)
    else:
        print(f"Removed {a.source} ({answer['removed_chunks']} chunk(s)) from {a.name}")


def remote_search(client: ServiceClient, a: argparse.Namespace) -> None:
    body: Json = {"query": a.query, "k": a.k, "mode": a.mode}
    filters, rerank = filters_of(a), rerank_of(a)
    if filters:
        body["filters"] = filters
    if rerank is not None:
        body["rerank"] = rerank
    answer = client.post(f"{_where(client, a)}/search", body)
    print_json(answer) if a.json else show_hits(answer)


def remote_eval(client: ServiceClient, a: argparse.Namespace) -> None:
    questions = []
    for q in read_questions(a.questions):
        if isinstance(q, dict):
            q = dict(q)
            if isinstance(q.get("source"), str):
                q["source"] = _source(q["source"])
            if isinstance(q.get("sources"), list):
                q["sources"] = [_source(s) if isinstance(s, str) else s for s in q["sources"]]
        questions.append(q)
    body = {"questions": questions, "k": a.k, "mode": a.mode}
    rerank = rerank_of(a)
    if rerank is not None:
        body["rerank"] = rerank
    scores = client.post(f"{_where(client, a)}/evaluate", body)
    print_json(scores) if a.json else show_scores(scores)


def remote_chat(client: ServiceClient, a: argparse.Namespace) -> None:
    result = client.post(f"{_where(client, a)}/chat", chat_body(a))
    print_json(result) if a.json else show_answer(result)


def remote_preview(client: ServiceClient, a: argparse.Namespace) -> None:
    body = {"paths": [relative(p) for p in a.paths], **_preview_options(a)}
    finish_preview(a, client.post(f"{_where(client, a)}/preview", body))


def remote_sync(client: ServiceClient, a: argparse.Namespace) -> None:
    body: Json = {
        "folder": relative(a.folder, "folder"),
        "delete_missing": not a.keep_missing,
        **_sync_options(a),
    }
    if a.pattern:
        body["patterns"] = a.pattern
    finish_sync(a, client.post(f"{_where(client, a)}/sync", body))


def remote_delete(client: ServiceClient, a: argparse.Namespace) -> None:
    client.delete(_where(client, a))
    if a.json:
        print_json({"deleted": a.name})
    else:
        print(f"Deleted knowledge base {a.name}")


REMOTE: dict[str, Callable[[Any, argparse.Namespace], None]] = {
    "kb_create": remote_create,
    "kb_list": remote_list,
    "kb_show": remote_show,
    "kb_add": remote_add,
    "kb_remove": remote_remove,
    "kb_search": remote_search,
    "kb_eval": remote_eval,
    "kb_chat": remote_chat,
    "kb_delete": remote_delete,
    "kb_preview": remote_preview,
    "kb_sync": remote_sync,
}


def add_filters(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--source", action="append", metavar="GLOB", help="only sources that match (repeatable)"
    )
    p.add_argument("--page", help="only PDF page N, or pages A-B")
    p.add_argument("--heading", metavar="GLOB", help="only chunks under a matching heading")


def add_rerank(p: argparse.ArgumentParser, default: bool = False) -> None:
    p.add_argument(
        "--rerank",
        metavar="MODEL[/VERSION]",
        help="rerank with a cross-encoder registered in the project"
        + (" (the knowledge base's default)" if default else ""),
    )
    p.add_argument(
        "--rerank-top-n",
        dest="rerank_top_n",
        type=int,
        metavar="N",
        help="how many first hits the reranker scores (1-200, default 3 x k)",
    )
    if not default:
        p.add_argument(
            "--no-rerank",
            dest="no_rerank",
            action="store_true",
            help="no reranker, not even the knowledge base's default",
        )


def add_commands(groups: Any, command: Callable[..., Any]) -> None:
    kb = groups.add_parser("kb", help="knowledge bases: documents to search").add_subparsers(
        dest="command", required=True
    )
    p = command(kb, "create", kb_create, "create a knowledge base")
    p.add_argument("name")
    p.add_argument("--chunking", choices=["tokens", "headings", "pages"], help="default tokens")
    p.add_argument("--chunk-size", dest="chunk_size", type=int, help="tokens (default 200)")
    p.add_argument("--overlap", type=int, help="tokens shared by neighbours (default 40)")
    p.add_argument("--model", help="embedding model (default the shipped MiniLM)")
    p.add_argument(
        "--engine", choices=["embedded", "milvus"], help="the index engine (default embedded)"
    )
    p.add_argument(
        "--milvus-uri",
        dest="milvus_uri",
        help="engine milvus: a .db file name in the knowledge base's folder (Milvus Lite) or "
        "http(s)://host:19530 (a Milvus server)",
    )
    add_rerank(p, default=True)
    command(kb, "list", kb_list, "list the knowledge bases you can see")
    p = command(kb, "show", kb_show, "a knowledge base and its sources")
    p.add_argument("name")
    p = command(kb, "add", kb_add, "add files or folders (re-adding unchanged ones does nothing)")
    p.add_argument("name")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--quiet", "-q", action="store_true", help="no per-file progress")
    p = command(kb, "preview", kb_preview, "the chunks adding files would make, nothing added")
    p.add_argument("name")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--chunking", choices=["tokens", "headings", "pages"], help="default the KB's")
    p.add_argument("--chunk-size", dest="chunk_size", type=int, help="default the KB's")
    p.add_argument("--overlap", type=int, help="default the KB's")
    p = command(kb, "sync", kb_sync, "add a folder's new and changed files, remove gone ones")
    p.add_argument("name")
    p.add_argument("folder")
    p.add_argument(
        "--pattern", action="append", metavar="GLOB", help="only matching files (repeatable)"
    )
    p.add_argument(
        "--keep-missing",
        dest="keep_missing",
        action="store_true",
        help="keep the sources whose files are gone",
    )
    p.add_argument("--chunking", choices=["tokens", "headings", "pages"], help="default the KB's")
    p.add_argument("--chunk-size", dest="chunk_size", type=int, help="default the KB's")
    p.add_argument("--overlap", type=int, help="default the KB's")
    p = command(kb, "remove", kb_remove, "remove a source and its chunks")
    p.add_argument("name")
    p.add_argument("source", help="a file as added, or upload:NAME")
    for verb in ("search", "query"):
        p = command(kb, verb, kb_search, "the chunks that best match a query")
        p.add_argument("name")
        p.add_argument("query")
        p.add_argument("-k", type=int, default=5, help="how many chunks (1-100, default 5)")
        p.add_argument("--mode", choices=MODES, default="hybrid")
        add_filters(p)
        add_rerank(p)
    p = command(kb, "eval", kb_eval, "recall@k, MRR and nDCG@10 of a question set")
    p.add_argument("name")
    p.add_argument("questions", help=".json list or .jsonl of {question, source(s) | chunks}")
    p.add_argument("-k", type=int, default=10)
    p.add_argument("--mode", choices=MODES, default="hybrid")
    add_rerank(p)
    p = command(kb, "chat", kb_chat, "ask a model with the passages that match, cited")
    p.add_argument("name")
    p.add_argument("query")
    p.add_argument("--deployment", help="an LLM deployment of the project answers")
    p.add_argument("--base-url", dest="base_url", help="or any OpenAI-compatible /v1 URL")
    p.add_argument("--model", help="the model name (with --base-url; an adapter with a deployment)")
    p.add_argument("--api-key", dest="api_key", help="with --base-url (default $OPENAI_API_KEY)")
    p.add_argument("-k", type=int, default=5, help="passages to retrieve (default 5)")
    p.add_argument("--mode", choices=MODES, default="hybrid")
    p.add_argument(
        "--threshold", type=float, help="least cosine (BM25 score in keyword mode); default 0.25"
    )
    p.add_argument("--template", help="a prompt template file with {knowledge}, {history}, {query}")
    p.add_argument("--system", help="a system message")
    p.add_argument("--max-tokens", dest="max_tokens", type=int)
    p.add_argument("--temperature", type=float)
    add_filters(p)
    add_rerank(p)
    p = command(kb, "delete", kb_delete, "delete a knowledge base and its index")
    p.add_argument("name")
