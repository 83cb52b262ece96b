"""Knowledge-base retrieval speed (issue 21), cube-lab's index side by side with Chroma.

    .venv/bin/python benchmarks/kb.py [--sizes 10000,100000] [--queries 200]
        [--chroma-python /tmp/cube/chroma-venv/bin/python] [--write-results]

Same chunks and the same embeddings for both: generated 40-word chunks (words drawn from a
20,000-word synthetic vocabulary with Zipf frequencies) and precomputed random, fixed
(seeded) unit 384-d embeddings, so no embedding time is in any figure. Each query comes
from one chunk: its embedding plus noise (cosine about 0.85 to the original) and three of
its words; that chunk is the one expected (recall@10 over the generated question set).

- ours: ``cube_lab.kb.index.KnowledgeIndex`` in a temporary folder: chunks + SQLite FTS5
  (BM25), float32 vectors in a memory-mapped file, an int8 HNSW graph (usearch) whose
  candidates are rescored exactly. Ingest includes writing the chunks, the keyword index,
  the vectors, the graph, and saving the graph.
- ours on Milvus: ``cube_lab.kb.milvus_index.MilvusIndex`` on Milvus Lite (a ``milvus.db``
  file; pymilvus starts its server process), the same calls: one collection with the text
  (Milvus's BM25 function: its own full-text index), COSINE vectors (AUTOINDEX), hybrid by the
  same RRF. ``--milvus-max`` skips it above a size. Ingest includes the inserts and a flush.
- peer: chromadb embedded (``PersistentClient``, cosine HNSW), run by its own interpreter
  (a venv of its own: ``python -m venv /tmp/cube/chroma-venv &&
  /tmp/cube/chroma-venv/bin/pip install chromadb==1.5.9``) as a subprocess of this script.
  Chroma has no BM25 in its embedded mode; its keyword filter is ``where_document
  $contains`` (substring), measured with the vector query as "vector + $contains".

Both run one after the other in one process tree on the same machine; latencies are per
query, one at a time, wall clock.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DIM = 384
WORDS = 40
BATCH = 1000


def generate(folder: Path, n: int, queries: int, seed: int = 21) -> None:
    """chunks.jsonl, emb.npy, queries.jsonl (+ qemb.npy) for ``n`` chunks."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = sorted({"".join(rng.choice(letters, rng.integers(4, 10))) for _ in range(22_000)})[
        :20_000
    ]
    ranks = np.arange(1, len(vocab) + 1, dtype=np.float64)
    p = 1.0 / ranks
    p /= p.sum()
    words = rng.choice(len(vocab), size=(n, WORDS), p=p)
    with (folder / "chunks.jsonl").open("w") as f:
        for row in words:
            f.write(json.dumps(" ".join(vocab[i] for i in row)) + "\n")
    emb = rng.standard_normal((n, DIM), dtype=np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    np.save(folder / "emb.npy", emb)
    targets = rng.choice(n, size=queries, replace=False)
    noise = rng.standard_normal((queries, DIM), dtype=np.float32) * 0.032
    qemb = emb[targets] + noise
    qemb /= np.linalg.norm(qemb, axis=1, keepdims=True)
    np.save(folder / "qemb.npy", qemb.astype(np.float32))
    with (folder / "queries.jsonl").open("w") as f:
        for t in targets:
            picked = rng.choice(WORDS, size=3, replace=False)
            text = " ".join(vocab[words[t, j]] for j in picked)
            f.write(json.dumps({"target": int(t), "text": text}) + "\n")


def load(folder: Path) -> tuple[list[str], np.ndarray, list[dict[str, Any]], np.ndarray]:
    chunks = [json.loads(line) for line in (folder / "chunks.jsonl").open()]
    queries = [json.loads(line) for line in (folder / "queries.jsonl").open()]
    return chunks, np.load(folder / "emb.npy"), queries, np.load(folder / "qemb.npy")


def stats(times: list[float]) -> dict[str, float]:
    ms = sorted(t * 1000 for t in times)
    return {
        "p50_ms": round(statistics.median(ms), 2),
        "p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 2),
    }


def timed(fn: Any, items: list[Any]) -> tuple[dict[str, float], list[Any]]:
    times, results = [], []
    for item in items:
        start = time.perf_counter()
        results.append(fn(item))
        times.append(time.perf_counter() - start)
    return stats(times), results


def recall(results: list[list[int]], targets: list[int]) -> float:
    return round(sum(t in r[:10] for r, t in zip(results, targets, strict=True)) / len(targets), 3)


# -- ours ----------------------------------------------------------------------------------


def run_ours(folder: Path, engine: str = "embedded") -> dict[str, Any]:
    """``engine``: ``embedded`` (KnowledgeIndex) or ``milvus`` (MilvusIndex on Milvus Lite,
    a ``milvus.db`` in the folder), through the same ``engine.IndexEngine`` calls."""
    sys.path.insert(0, str(REPO))
    from cube_lab.kb.index import KnowledgeIndex, NewChunk

    def open_index() -> Any:
        if engine == "milvus":
            from cube_lab.kb.milvus_index import MilvusIndex

            return MilvusIndex(store, DIM, {"uri": "milvus.db", "collection": "bench"})
        return KnowledgeIndex(store, DIM)

    chunks, emb, queries, qemb = load(folder)
    store = folder / ("ours" if engine == "embedded" else engine)
    start = time.perf_counter()
    index = open_index()
    for i in range(0, len(chunks), BATCH):
        index.add(
            [
                NewChunk(t, f"doc{(i + j) // 10}", (i + j) % 10)
                for j, t in enumerate(chunks[i : i + BATCH])
            ],
            emb[i : i + BATCH],
        )
    index.flush()
    ingest = len(chunks) / (time.perf_counter() - start)
    index.close()
    start = time.perf_counter()
    index = open_index()  # reopened: nothing rebuilt, the graph is loaded
    reopen = time.perf_counter() - start
    targets = [q["target"] for q in queries]
    items = list(range(len(queries)))
    name = "cube-lab" if engine == "embedded" else "cube-lab milvus-lite " + _lite_version()
    out: dict[str, Any] = {"engine": name, "chunks": len(chunks)}
    out["ingest_chunks_per_s"] = round(ingest)
    out["reopen_s"] = round(reopen, 3)
    for mode in ("vector", "keyword", "hybrid"):
        index.search(mode, 10, text=queries[0]["text"], vector=qemb[0])  # warm
        lat, res = timed(
            lambda i, m=mode: [
                h.id for h in index.search(m, 10, text=queries[i]["text"], vector=qemb[i])
            ],
            items,
        )
        out[mode] = {**lat, "recall_at_10": recall(res, targets)}
    index.close()
    return out


def _lite_version() -> str:
    from importlib.metadata import version

    return version("milvus-lite")


# -- the peer (runs under Chroma's own interpreter) -----------------------------------------


def run_chroma(folder: Path, contains_queries: int) -> dict[str, Any]:
    import chromadb

    chunks, emb, queries, qemb = load(folder)
    client = chromadb.PersistentClient(path=str(folder / "chroma"))
    col = client.create_collection("bench", metadata={"hnsw:space": "cosine"})
    start = time.perf_counter()
    for i in range(0, len(chunks), BATCH):
        part = chunks[i : i + BATCH]
        col.add(
            ids=[str(i + j) for j in range(len(part))],
            documents=part,
            embeddings=emb[i : i + BATCH],
            metadatas=[{"source": f"doc{(i + j) // 10}"} for j in range(len(part))],
        )
    ingest = len(chunks) / (time.perf_counter() - start)
    targets = [q["target"] for q in queries]
    out: dict[str, Any] = {"engine": "chromadb " + chromadb.__version__, "chunks": len(chunks)}
    out["ingest_chunks_per_s"] = round(ingest)

    def vector(i: int) -> list[int]:
        found = col.query(query_embeddings=[qemb[i]], n_results=10, include=[])
        return [int(x) for x in found["ids"][0]]

    def contains(i: int) -> list[int]:
        word = queries[i]["text"].split()[0]
        found = col.query(
            query_embeddings=[qemb[i]],
            n_results=10,
            where_document={"$contains": word},
            include=[],
        )
        return [int(x) for x in found["ids"][0]]

    vector(0)
    lat, res = timed(vector, list(range(len(queries))))
    out["vector"] = {**lat, "recall_at_10": recall(res, targets)}
    n = min(contains_queries, len(queries))
    lat, res = timed(contains, list(range(n)))
    out["vector+$contains"] = {**lat, "recall_at_10": recall(res, targets[:n])}
    return out


# -- the run --------------------------------------------------------------------------------


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| chunks | engine | ingest chunks/s | mode | p50 ms | p95 ms | recall@10 |",
        "|---:|---|---:|---|---:|---:|---:|",
    ]
    for r in results:
        for mode in ("vector", "keyword", "hybrid", "vector+$contains"):
            if mode in r:
                m = r[mode]
                lines.append(
                    f"| {r['chunks']:,} | {r['engine']} | {r['ingest_chunks_per_s']:,} | {mode} "
                    f"| {m['p50_ms']} | {m['p95_ms']} | {m['recall_at_10']} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--contains-queries", type=int, default=100)
    parser.add_argument("--chroma-python", default="/tmp/cube/chroma-venv/bin/python")
    parser.add_argument("--write-results", action="store_true")
    parser.add_argument(
        "--milvus-max",
        type=int,
        default=100_000,
        help="run the Milvus Lite engine up to this many chunks (0: not at all)",
    )
    parser.add_argument("--peer", help=argparse.SUPPRESS)  # internal: run Chroma on a folder
    args = parser.parse_args()
    if args.peer:
        print(json.dumps(run_chroma(Path(args.peer), args.contains_queries)))
        return
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="cube-kb-bench-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            folder = Path(tmp) / str(size)
            folder.mkdir()
            generate(folder, size, args.queries)
            ours = run_ours(folder)
            print(json.dumps(ours), flush=True)
            results.append(ours)
            if size <= args.milvus_max:
                lite = run_ours(folder, "milvus")
                print(json.dumps(lite), flush=True)
                results.append(lite)
            if Path(args.chroma_python).exists():
                command = [args.chroma_python, __file__, "--peer", str(folder)]
                command += ["--contains-queries", str(args.contains_queries)]
                env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
                peer = subprocess.run(command, capture_output=True, text=True, env=env)
                if peer.returncode:
                    print(f"chroma failed: {peer.stderr[-2000:]}", file=sys.stderr)
                else:
                    theirs = json.loads(peer.stdout.strip().splitlines()[-1])
                    print(json.dumps(theirs), flush=True)
                    results.append(theirs)
            else:
                print(f"no Chroma interpreter at {args.chroma_python}: ours alone", flush=True)
    text = table(results)
    print(text)
    if args.write_results:
        load_avg = os.getloadavg()
        with (REPO / "benchmarks" / "RESULTS.md").open("a") as f:
            f.write(
                "\n## Knowledge bases: retrieval (issue 21), "
                f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n\n"
                f"`.venv/bin/python benchmarks/kb.py` on {platform.machine()}, "
                f"{os.cpu_count()} cores, load {load_avg[0]:.1f}; {args.queries} queries a mode, "
                f"k=10, 40-word chunks, precomputed 384-d embeddings (no embedding time).\n\n"
                f"{text}\n"
            )


if __name__ == "__main__":
    main()
