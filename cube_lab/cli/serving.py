"""`cube-lab deploy|deployments|undeploy` and `cube-lab deployment ...`: model serving
(in this process, or on KServe with ``--backend kubernetes``: cli/kserve.py)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..identity import Caller
from ..locale.messages import _t
from ..serialize import to_jsonable
from . import kserve
from .args import print_json, print_table, split_ref
from .output import _stamp

if TYPE_CHECKING:
    from ..workspace import Workspace


def show_deployments(found: list[dict[str, Any]]) -> None:
    print_table(
        [
            [
                d["name"],
                d["project"],
                f"{d['model']}:{d['version']}",
                d["status"],
                str(d["replicas"]),
                " ".join(
                    f"v{t['version']}={'shadow' if t['shadow'] else format(t['weight'], 'g')}"
                    for t in d["traffic"]
                ),
                d["endpoint"] or "",
            ]
            for d in found
        ],
        ["NAME", "PROJECT", "MODEL", "STATUS", "REPLICAS", "TRAFFIC", "ENDPOINT"],
    )


def show_deployed(view: dict[str, Any], took: float) -> None:
    """What ``deploy`` says (on stderr) once a new deployment answers."""
    print(
        f"deployed {view['model']} v{view['version']} as {view['name']} "
        f"({view['replicas']} replica(s)) in {took:.1f}s",
        file=sys.stderr,
    )
    if view["access"]["auth"] == "required":
        print(
            f"callers need an API key: cube-lab deployment keys create {view['name']} "
            "KEY-NAME, then send 'Authorization: Bearer <key>'",
            file=sys.stderr,
        )
    if view.get("runtime") == "llm" and view.get("endpoint"):
        print(
            f"OpenAI-compatible API: base_url {view['endpoint']}/v1, model {view['model']!r}",
            file=sys.stderr,
        )


def show_deployment_state(view: dict[str, Any]) -> None:
    """``deploy``'s last lines: status and traffic (stderr), the endpoint (stdout)."""
    traffic = ", ".join(
        f"v{t['version']} {'shadow' if t['shadow'] else format(t['weight'], 'g') + '%'}"
        for t in view["traffic"]
    )
    print(f"{view['name']}: {view['status']}, traffic {traffic}", file=sys.stderr)
    print(view["endpoint"])


def show_traffic(view: dict[str, Any]) -> None:
    print(", ".join(f"v{t['version']} {t['weight']:g}%" for t in view["traffic"]))


def show_samples(found: dict[str, Any]) -> None:
    print(f"sampling {found['percent']:g}% of requests", file=sys.stderr)
    for s in found["samples"]:
        head = f"{s['status']} v{s['version']} {s['latency_ms']:.1f}ms"
        print(f"{head} {s['request']} -> {s['response']}")


def show_key_made(made: dict[str, Any], deployment: str) -> None:
    until = f", expires {_stamp(made['expires_at'])} UTC" if made.get("expires_at") else ""
    print(
        f"key {made['name']} ({made['id']}{until}) for {deployment}; it is shown only now, "
        "send it as 'Authorization: Bearer <key>':",
        file=sys.stderr,
    )
    print(made["key"])


def show_keys(keys: list[dict[str, Any]]) -> None:
    print_table(
        [
            [
                k["id"],
                k["name"],
                k["prefix"] + "…",
                k["state"],
                _stamp(k["created_at"]),
                _stamp(k["expires_at"]),
                _stamp(k["last_used_at"]),
            ]
            for k in keys
        ],
        ["ID", "NAME", "PREFIX", "STATE", "CREATED", "EXPIRES", "LAST USED"],
    )


def show_access(settings: dict[str, Any]) -> None:
    limit = settings["rate_limit"]
    rate = (
        f"{limit['rps']:g} requests/s, bursts of {limit['burst']}"
        + (", per key" if limit["per_key"] else "")
        if limit
        else "none"
    )
    print(f"auth: {settings['auth']}")
    print(f"rate limit: {rate}")
    print(f"allow: {' '.join(settings['allow']) or 'any address'}")
    print(f"deny: {' '.join(settings['deny']) or 'none'}")


def access_changes(a: argparse.Namespace) -> dict[str, Any]:
    """``deployment access``'s options as the changes ``set_access`` takes."""
    changes: dict[str, Any] = {}
    if a.auth is not None:
        changes["auth"] = a.auth
    if a.no_rate_limit:
        changes["rate_limit"] = None
    elif a.rps is not None:
        changes["rate_limit"] = {"rps": a.rps, "per_key": a.per_key}
        if a.burst is not None:
            changes["rate_limit"]["burst"] = a.burst
    elif a.burst is not None or a.per_key:
        raise InvalidInput(
            _t("--burst and --per-key go with --rps"), _t("e.g. --rps 20 --burst 40")
        )
    for field in ("allow", "deny"):
        given = getattr(a, field)
        if given is not None:
            changes[field] = [x for x in given if x]  # --allow '' clears the list
    return changes


def engine_options(pairs: list[str] | None) -> dict[str, str] | None:
    """``--engine-option K=V ...`` as engine_options (the service checks names and types)."""
    if not pairs:
        return None
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidInput(
                _t("--engine-option takes KEY=VALUE, got {value!r}", value=pair),
                _t("e.g. --engine-option max_model_len=4096"),
            )
        options[key] = value
    return options


# deploy's options that only a deployment on the cluster (--backend kubernetes) takes
CLUSTER_ONLY = (
    ("--llm-backend", "llm_backend"),
    ("--image", "image"),
    ("--gpu-memory-mib", "gpu_memory_mib"),
    ("--gpu-cores", "gpu_cores"),
)


def refuse_cluster_only(a: argparse.Namespace) -> None:
    """A deployment on this machine (or the hub's service) refuses the cluster's options."""
    given = [flag for flag, key in CLUSTER_ONLY if getattr(a, key, None) is not None]
    if given:
        raise InvalidInput(
            _t("{value} go with --backend kubernetes", value=", ".join(given)),
            _t("Here an LLM runs on --engine transformers, vllm, llamacpp or ollama."),
        )


def deploy_request(a: argparse.Namespace) -> dict[str, Any]:
    """A new deployment as ``deploy``'s options ask for it: the body of ``POST /deployments``,
    whose fields are ``DeploymentService.deploy``'s arguments (``model`` is its ``ref``).

    The one definition of the request both shapes make: this process calls the service with
    it, under the hub it is posted to the cube-lab service (``cli/remote/serving.py``)."""
    return {
        "model": a.ref,
        "name": a.name,
        "project": a.project,
        "replicas": a.replicas,
        "port": a.port,
        "batch_max_rows": a.batch_max_rows,
        "batch_wait_ms": a.batch_wait_ms,
        "samples_percent": a.samples,
        "auth": a.auth,
        "runtime": a.runtime,
        "engine": a.engine,
        "engine_options": engine_options(a.engine_option),
    }


def deploy(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    """Deploy NAME:VERSION (or change a running deployment's traffic); the last line printed
    is the endpoint's base URL."""
    if a.backend == "kubernetes":
        kserve.deploy(ws, caller, a)
        return
    if a.dry_run:
        raise InvalidInput(_t("--dry-run goes with --backend kubernetes"))
    refuse_cluster_only(a)
    name = a.name or split_ref(a.ref)[0]
    if a.switch:
        view = ws.serving.switch(caller, name, split_ref(a.ref)[1], project=a.project)
    elif a.canary is not None:
        view = ws.serving.canary(caller, name, split_ref(a.ref)[1], a.canary, project=a.project)
    elif a.shadow:
        view = ws.serving.shadow(caller, name, split_ref(a.ref)[1], project=a.project)
    else:
        started = time.monotonic()
        request = deploy_request(a)
        view = ws.serving.deploy(caller, request.pop("model"), **request)
        if not a.json:
            show_deployed(to_jsonable(view), time.monotonic() - started)
    if a.json:
        print_json(view)
        return
    show_deployment_state(to_jsonable(view))


def deployments_list(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    if a.backend == "kubernetes":
        kserve.listing(ws, caller, a)
        return
    found = ws.serving.list(caller, project=a.project)
    if a.json:
        print_json(found)
        return
    show_deployments(to_jsonable(found))


def undeploy(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    if a.backend == "kubernetes":
        kserve.undeploy(ws, caller, a)
        return
    if a.forget:
        ws.serving.delete(caller, a.name, project=a.project)
        if a.json:
            print_json({"deleted": a.name})
        else:
            print(f"{a.name}: undeployed and forgotten")
        return
    view = ws.serving.undeploy(caller, a.name, project=a.project)
    if a.json:
        print_json(view)
    else:
        print(f"{a.name}: {view.status}")


def deployment_action(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    if a.backend == "kubernetes":
        kserve.action(ws, caller, a)
        return
    service = ws.serving
    if a.command == "logs":
        offset = 0
        while True:
            chunk = service.tail_log(caller, a.name, offset, project=a.project)
            sys.stdout.write(chunk.text)
            sys.stdout.flush()
            offset = chunk.offset
            if chunk.done or not a.follow:
                return
            time.sleep(0.5)
    if a.command == "metrics":
        print(service.metrics(caller, a.name, a.project), end="")
        return
    if a.command == "samples":
        if a.set is not None:
            service.set_samples(caller, a.name, a.set, project=a.project)
        found = service.samples(caller, a.name, a.limit, project=a.project)
        if a.json:
            print_json(found)
            return
        show_samples(to_jsonable(found))
        return
    if a.command == "traffic":
        view = service.set_traffic(caller, a.name, a.percent, project=a.project)
    elif a.command == "promote":
        view = service.promote(caller, a.name, project=a.project)
    else:
        view = service.rollback(caller, a.name, project=a.project)
    if a.json:
        print_json(view)
        return
    show_traffic(to_jsonable(view))


TEXT_ACTIONS = ("logs", "metrics")  # text streams (a log, Prometheus' format): no --json


def deployment_keys(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    """``cube-lab deployment keys create|list|revoke NAME ...``"""
    service = ws.serving
    if a.keys_command == "create":
        made = service.create_key(
            caller,
            a.name,
            a.key_name,
            expires_at=a.expires_at,
            expires_in_days=a.expires_in_days,
            project=a.project,
        )
        if a.json:
            print_json(made)
            return
        show_key_made(to_jsonable(made), a.name)
        return
    if a.keys_command == "revoke":
        revoked = service.revoke_key(caller, a.name, a.key, project=a.project)
        if a.json:
            print_json(revoked)
        else:
            print(f"key {revoked.name} ({revoked.id}) of {a.name}: revoked")
        return
    keys = service.list_keys(caller, a.name, project=a.project)
    if a.json:
        print_json({"keys": keys})
        return
    show_keys(to_jsonable(keys))


def deployment_access(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    """Show or change who may call a deployment."""
    changes = access_changes(a)
    service = ws.serving
    view = (
        service.set_access(caller, a.name, changes, project=a.project)
        if changes
        else service.get(caller, a.name, a.project)
    )
    settings = view.access
    if a.json:
        print_json(settings)
        return
    show_access(to_jsonable(settings))


def _cluster_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=["local", "kubernetes"], default="local")
    p.add_argument("--namespace", help="kubernetes: the namespace (default: the context's)")


def add_commands(groups: Any, command: Callable[..., Any]) -> None:
    p = command(groups, "deploy", deploy, "serve a registered model version (OIP v2 over REST)")
    p.add_argument("ref", metavar="NAME[:VERSION|ALIAS]")
    p.add_argument("--name", help="deployment name (default: the model name)")
    p.add_argument("--replicas", type=int, default=1, help="model server processes")
    p.add_argument("--port", type=int, help="the endpoint's port (default: a free one)")
    p.add_argument(
        "--batch-max-rows", type=int, default=0, help="adaptive batching: rows a call (0: off)"
    )
    p.add_argument("--batch-wait-ms", type=float, default=0.0, help="wait for a fuller batch")
    p.add_argument("--samples", type=float, default=0.0, metavar="PERCENT",
                   help="keep PERCENT of requests with their answers (opt-in)")  # fmt: skip
    p.add_argument("--auth", choices=["required", "none"],
                   help="API keys: required (default under the hub) or none (default "
                        "alone; a name deployed before keeps its setting)")  # fmt: skip
    p.add_argument("--runtime", choices=["auto", "oip", "llm"],
                   help="llm: OpenAI's /v1 API (a causal LM or a peft adapter); oip: OIP v2; "
                        "auto (default): by the model's flavor")  # fmt: skip
    change = p.add_mutually_exclusive_group()
    change.add_argument("--switch", action="store_true", help="a running deployment: serve this")
    change.add_argument("--canary", type=float, metavar="PERCENT", help="send PERCENT to this")
    change.add_argument("--shadow", action="store_true", help="mirror traffic to this version")
    p.add_argument("--backend", choices=["local", "kubernetes"], default="local")
    p.add_argument("--dry-run", action="store_true", help="print the KServe InferenceService")
    p.add_argument("--namespace", help="kubernetes: the namespace (default: the context's)")
    p.add_argument("--wait", type=float, default=300, help="kubernetes: seconds to wait for Ready")
    p.add_argument("--storage-uri", help="where the cluster finds the model (kubernetes)")
    p.add_argument("--min-replicas", type=int)
    p.add_argument("--max-replicas", type=int)
    p.add_argument("--gpus", type=int, default=0, help="accelerators per replica (kubernetes)")
    p.add_argument("--gpu-type", help="accelerator table key (default nvidia-gpu)")
    p.add_argument("--cpu", help="CPU per replica (kubernetes), e.g. 2")
    p.add_argument("--memory", help="memory per replica (kubernetes), e.g. 4Gi")
    p.add_argument("--gpu-memory-mib", type=int,
                   help="kubernetes: device memory per GPU share, MiB (hami-vgpu)")  # fmt: skip
    p.add_argument("--gpu-cores", type=int, metavar="PERCENT",
                   help="kubernetes: compute per GPU share, percent (hami-vgpu)")  # fmt: skip
    p.add_argument("--engine",
                   choices=["auto", "transformers", "vllm", "llamacpp", "ollama", "huggingface"],
                   help="an LLM's engine: here transformers (default), vllm, llamacpp (a .gguf) "
                        "or ollama; kubernetes: KServe's Hugging Face runtime (huggingface, "
                        "default) or a vLLM container (vllm, --image)")  # fmt: skip
    p.add_argument("--engine-option", action="append", metavar="KEY=VALUE",
                   help="an engine option, e.g. max_model_len=4096 (vllm), n_ctx=2048 "
                        "(llamacpp), url=http://host:11434 and model=TAG (ollama)")  # fmt: skip
    p.add_argument("--llm-backend", choices=["vllm", "huggingface"],
                   help="kubernetes: the Hugging Face runtime's backend (vllm)")  # fmt: skip
    p.add_argument("--image", help="kubernetes, --engine vllm: the vLLM image")
    p = command(groups, "deployments", deployments_list, "list deployments")
    _cluster_args(p)
    p = command(groups, "undeploy", undeploy, "stop a deployment")
    p.add_argument("name")
    p.add_argument("--forget", action="store_true", help="also delete its record and folder")
    _cluster_args(p)
    serving = groups.add_parser("deployment", help="a deployment's traffic, logs, metrics")
    actions = serving.add_subparsers(dest="command", required=True)
    for action, help_ in (
        ("promote", "the canary or shadow version takes all traffic"),
        ("rollback", "drop the canary or shadow, else go back to the previous version"),
        ("traffic", "move the canary's share"),
        ("logs", "print the processes' output"),
        ("metrics", "print the Prometheus metrics"),
        ("samples", "print sampled requests with their answers; --set PERCENT to sample"),
    ):
        p = command(actions, action, deployment_action, help_, json=action not in TEXT_ACTIONS)
        p.add_argument("name")
        _cluster_args(p)
        if action == "traffic":
            p.add_argument("percent", type=float, help="percent to the canary")
        if action == "logs":
            p.add_argument("--follow", "-f", action="store_true")
        if action == "samples":
            p.add_argument("--set", type=float, metavar="PERCENT")
            p.add_argument("--limit", type=int, default=20)
    keys = actions.add_parser(
        "keys", help="a deployment's API keys", description="a deployment's API keys"
    ).add_subparsers(dest="keys_command", required=True)
    p = command(keys, "create", deployment_keys, "make an API key (printed once)")
    p.add_argument("name", help="the deployment")
    p.add_argument("key_name", metavar="KEY-NAME", help="what the key is for, e.g. ci")
    until = p.add_mutually_exclusive_group()
    until.add_argument("--expires-in-days", type=float, metavar="DAYS")
    until.add_argument("--expires-at", metavar="ISO-TIME", help="e.g. 2030-01-31T00:00:00Z")
    p = command(keys, "list", deployment_keys, "list the keys (never the keys themselves)")
    p.add_argument("name", help="the deployment")
    p = command(keys, "revoke", deployment_keys, "revoke a key: it is refused at once")
    p.add_argument("name", help="the deployment")
    p.add_argument("key", help="the key's id or name")
    p = command(actions, "access", deployment_access,
                "show or change who may call it: auth, rate limit, address lists")  # fmt: skip
    p.add_argument("name")
    p.add_argument("--auth", choices=["required", "none"])
    p.add_argument("--rps", type=float, help="rate limit: requests a second")
    p.add_argument("--burst", type=int, help="rate limit: requests at once (default: --rps)")
    p.add_argument("--per-key", action="store_true", help="rate limit: a bucket per key")
    p.add_argument("--no-rate-limit", action="store_true", help="turn the rate limit off")
    p.add_argument("--allow", nargs="*", metavar="ADDR",
                   help="only these addresses/CIDRs may call (none given: any)")  # fmt: skip
    p.add_argument("--deny", nargs="*", metavar="ADDR",
                   help="these addresses/CIDRs may not call (none given: clear)")  # fmt: skip
