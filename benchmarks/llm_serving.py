"""LLM serving side by side: cube-lab's transformers engine vs a bare ``generate`` server.

The same random-init model (``--size tiny``: Llama-shaped, hidden size 64, 2 layers, from
``cube_lab.finetune.tiny``; ``--size 0.5b``: hidden 1024, 32 layers, about 0.45B
parameters, for a GPU), the same greedy requests (``POST /v1/completions``, streamed,
``max_tokens`` tokens each, end-of-sequence ignored so every answer has them all), the same
load generator, both servers up at once and measured in turns within one run:

- time to first token (from sending the request to its first text chunk), p50 at 1 client;
- tokens/s (all clients' completion tokens over the wall time) at 1 and 16 concurrent
  streams, each client sending its requests one after another.

The peer is the plainest server that streams with ``transformers``: ``http.server``
answering one request at a time, ``model.generate(..., streamer=...)`` with a streamer
that hands each new token to the response as it comes (same text rules as cube-lab's:
the decoded text so far, less an unfinished UTF-8 character).

    python benchmarks/llm_serving.py [--rounds 3] [--tokens 32] [--size tiny|0.5b]
        [--device cpu|cuda] [--dtype float32|bfloat16] [--write-results]

Targets (issue 20): at 16 streams >= 3x the peer's tokens/s; time to first token at 1
client <= 1.2x the peer's. Not part of CI's pass/fail.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "the quick brown fox jumps over the lazy dog"
TEXTS = [
    "hello world, the quick brown fox jumps over the lazy dog",
    "numbers one two three four five six seven eight nine ten",
    "lorem ipsum dolor sit amet, consectetur adipiscing elit",
] * 20


# -- the model -----------------------------------------------------------------------------


def build_model(folder: Path, size: str) -> Path:
    sys.path.insert(0, str(ROOT))
    from cube_lab.finetune import tiny

    tiny.build(folder, TEXTS)
    if size == "tiny":
        return folder
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(folder)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=1024,
        intermediate_size=4096,
        num_hidden_layers=32,
        num_attention_heads=16,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=False,
    )
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


# -- the peer: one request at a time -------------------------------------------------------


def peer_main(model_dir: str, port_file: str, device: str, dtype: str | None) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.generation.streamers import BaseStreamer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(
        model_dir, dtype=getattr(torch, dtype) if dtype else None
    )
    model = model.to(device).eval()

    class Each(BaseStreamer):
        """Calls ``send`` with every new token's id (not the prompt's)."""

        def __init__(self, send: Any) -> None:
            self.send, self.prompt_seen = send, False

        def put(self, value: Any) -> None:
            if not self.prompt_seen:
                self.prompt_seen = True
                return
            self.send(int(value.reshape(-1)[0]))

        def end(self) -> None:
            pass

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            ids = tok(body["prompt"], return_tensors="pt")["input_ids"].to(device)
            n = int(body.get("max_tokens", 16))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            out: list[int] = []
            sent = [0]

            def chunk(data: dict[str, Any]) -> None:
                raw = f"data: {json.dumps(data)}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(raw), raw))
                self.wfile.flush()

            def send(token: int) -> None:
                out.append(token)
                text = tok.decode(out, skip_special_tokens=True)
                safe = len(text.rstrip("\ufffd")) if len(out) < n else len(text)
                if safe > sent[0]:
                    chunk({"choices": [{"index": 0, "text": text[sent[0] : safe]}]})
                    sent[0] = safe

            with torch.inference_mode():
                model.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=n,
                    min_new_tokens=n,
                    do_sample=False,
                    streamer=Each(send),
                    pad_token_id=tok.pad_token_id,
                )
            usage = {"prompt_tokens": ids.shape[1], "completion_tokens": len(out)}
            chunk({"choices": [], "usage": usage})
            raw = b"data: [DONE]\n\n"
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(raw), raw))
            self.wfile.flush()

    class OneAtATime(HTTPServer):
        request_queue_size = 128  # 16 clients connecting at once wait in the backlog

    server = OneAtATime(("127.0.0.1", 0), Handler)
    Path(port_file).write_text(json.dumps({"port": server.server_address[1]}))
    server.serve_forever()


# -- the load ------------------------------------------------------------------------------


def one_request(port: int, tokens: int, prompt: str) -> tuple[float, int]:
    """(seconds to the first text chunk, completion tokens) of one streamed completion."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    body = json.dumps({
        "model": "bench", "prompt": prompt, "max_tokens": tokens, "temperature": 0,
        "stream": True, "stream_options": {"include_usage": True}, "ignore_eos": True,
    })  # fmt: skip
    start = time.perf_counter()
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200, resp.read()
    first = None
    completion = 0
    for line in resp:
        if not line.startswith(b"data: ") or line.startswith(b"data: [DONE]"):
            continue
        data = json.loads(line[6:])
        if first is None and data.get("choices") and data["choices"][0].get("text"):
            first = time.perf_counter() - start
        if data.get("usage"):
            completion = data["usage"]["completion_tokens"]
    conn.close()
    assert completion == tokens, (completion, tokens)
    return first if first is not None else time.perf_counter() - start, completion


def load(port: int, clients: int, per_client: int, tokens: int) -> dict[str, float]:
    ttfts: list[float] = []
    total = [0]
    lock = threading.Lock()
    barrier = threading.Barrier(clients)

    def client(i: int) -> None:
        barrier.wait()
        for j in range(per_client):
            ttft, n = one_request(port, tokens, f"{PROMPT} {i} {j}")
            with lock:
                ttfts.append(ttft)
                total[0] += n

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    return {"tokens_per_s": total[0] / wall, "ttft_p50_ms": statistics.median(ttfts) * 1000}


def wait_port(file: Path, proc: subprocess.Popen[bytes]) -> int:
    deadline = time.monotonic() + 600
    while not file.exists() or not file.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"a server did not start (exit {proc.poll()})")
        time.sleep(0.1)
    return int(json.loads(file.read_text())["port"])


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tokens", type=int, default=32, help="completion tokens per request")
    p.add_argument("--single", type=int, default=10, help="requests at 1 client per round")
    p.add_argument("--per-client", type=int, default=2, help="requests per client at 16")
    p.add_argument("--size", choices=["tiny", "0.5b"], default="tiny")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", choices=["float32", "float16", "bfloat16"])
    p.add_argument("--write-results", action="store_true")
    p.add_argument("--peer", nargs=2, metavar=("MODEL", "PORT_FILE"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.peer:
        peer_main(a.peer[0], a.peer[1], a.device, a.dtype)
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="cube-llm-bench-"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    model = build_model(tmp / "model", a.size)
    extra = ["--device", a.device] + (["--dtype", a.dtype] if a.dtype else [])
    cube_ready, peer_ready = tmp / "cube.json", tmp / "peer.json"
    cube = subprocess.Popen(
        [sys.executable, "-m", "cube_lab.serving.llm", "--model", str(model), "--name", "bench",
         "--port", "0", "--ready-file", str(cube_ready), *extra],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    peer = subprocess.Popen(
        [sys.executable, __file__, "--peer", str(model), str(peer_ready), *extra],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        ports = {"cube-lab": wait_port(cube_ready, cube), "peer": wait_port(peer_ready, peer)}
        for port in ports.values():  # warm up: first-call costs are not the servers' speed
            for _ in range(3):
                one_request(port, a.tokens, PROMPT)
        rows: dict[str, dict[str, list[float]]] = {k: {} for k in ports}
        for r in range(a.rounds):
            order = list(ports) if r % 2 == 0 else list(reversed(ports))
            for who in order:
                single = load(ports[who], 1, a.single, a.tokens)
                many = load(ports[who], 16, a.per_client, a.tokens)
                got = rows[who]
                got.setdefault("ttft_p50_ms", []).append(single["ttft_p50_ms"])
                got.setdefault("tps_1", []).append(single["tokens_per_s"])
                got.setdefault("tps_16", []).append(many["tokens_per_s"])
                print(f"round {r + 1} {who:9s} ttft p50 {single['ttft_p50_ms']:7.1f} ms  "
                      f"tok/s@1 {single['tokens_per_s']:8.1f}  tok/s@16 "
                      f"{many['tokens_per_s']:8.1f}", flush=True)  # fmt: skip
        stats = json.loads(_get(ports["cube-lab"], "/stats"))
    finally:
        for proc in (cube, peer):
            proc.terminate()
            proc.wait(30)
    med = {w: {k: statistics.median(v) for k, v in rows[w].items()} for w in rows}
    c, pe = med["cube-lab"], med["peer"]
    report = {
        "ttft_ratio": c["ttft_p50_ms"] / pe["ttft_p50_ms"],
        "tps_1_ratio": c["tps_1"] / pe["tps_1"],
        "tps_16_ratio": c["tps_16"] / pe["tps_16"],
    }
    print(json.dumps({"median": med, **report, "cube_lab_decode_batches": stats[
        "decode_batch_sizes"]}, indent=1))  # fmt: skip
    ok16, okt = report["tps_16_ratio"] >= 3, report["ttft_ratio"] <= 1.2
    print(f"16 streams >= 3x the peer: {'met' if ok16 else 'NOT met'}; "
          f"TTFT <= 1.2x the peer: {'met' if okt else 'NOT met'}")  # fmt: skip
    if a.write_results:
        write_results(a, med, report, stats)
    return 0


def _get(port: int, path: str) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path)
    return conn.getresponse().read().decode()


def write_results(a: Any, med: dict[str, dict[str, float]], report: dict[str, float],
                  stats: dict[str, Any]) -> None:  # fmt: skip
    c, pe = med["cube-lab"], med["peer"]
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    load_avg = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    top = max((int(k) for k in stats["decode_batch_sizes"]), default=0)
    lines = [
        "",
        f"## LLM serving (issue 20), {a.size} model on {a.device}",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {machine}; load average {load_avg}; "
        f"`python benchmarks/llm_serving.py --rounds {a.rounds} --tokens {a.tokens} "
        f"--size {a.size} --device {a.device}{' --dtype ' + a.dtype if a.dtype else ''}`. "
        f"Greedy, {a.tokens} tokens per request, streamed; medians of {a.rounds} rounds "
        "(servers in turns); the peer is `http.server` + `model.generate` one request at a "
        "time.",
        "",
        "| | cube-lab engine | bare transformers generate | cube-lab / peer | target |",
        "|---|---:|---:|---:|---|",
        f"| time to first token p50, 1 client (ms) | {c['ttft_p50_ms']:.1f} | "
        f"{pe['ttft_p50_ms']:.1f} | {report['ttft_ratio']:.2f} | <= 1.2 |",
        f"| tokens/s, 1 stream | {c['tps_1']:.0f} | {pe['tps_1']:.0f} | "
        f"{report['tps_1_ratio']:.2f} | |",
        f"| tokens/s, 16 streams | {c['tps_16']:.0f} | {pe['tps_16']:.0f} | "
        f"{report['tps_16_ratio']:.2f} | >= 3 |",
        "",
        f"The engine's largest decode batch in the run: {top} rows.",
    ]
    with (ROOT / "benchmarks" / "RESULTS.md").open("a") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
