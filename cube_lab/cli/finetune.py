"""`cube-lab finetune CONFIG.yaml [--nproc N] [--register NAME]`: a fine-tune as a training job;
`cube-lab merge ADAPTER[:VERSION] [--register NAME]`: a LoRA adapter version merged into its
base; `cube-lab evaluate CONFIG.yaml`: models before vs after, side by side.

Locally each job runs in this process through the training service (its log streamed, its
record, metrics and quota the training service's); under the hub it is started at the
cube-lab service (``POST /finetune/jobs``, ``/finetune/merge``, ``/finetune/evaluations``) and
followed there (the ``remote_*`` functions).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..identity import Caller
from ..locale.messages import _t
from ..rest_client import follow_log, relative, segment
from ..serialize import to_jsonable
from .args import print_json

if TYPE_CHECKING:
    from ..rest_client import ServiceClient
    from ..workspace import Workspace


def finetune(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    from ..finetune.service import FinetuneService, read_config_file

    path = Path(a.config)
    raw = read_config_file(path)
    if isinstance(raw, dict) and a.project:
        raw = {**raw, "project": a.project}
    service = FinetuneService(ws)
    cluster = _cluster(a)
    config = service.parse(caller, raw, path.resolve().parent, local=cluster is None)
    if a.estimate:
        from ..finetune.memory import estimate, table

        found = estimate(config)
        print_json(found) if a.json else print(table(found))
        return
    if a.dry_run:
        _dry_run(ws, service, config, a, cluster)
        return
    cluster_config = None
    if cluster is not None:
        from ..k8s import ClusterConfig

        cluster_config = ClusterConfig.from_env(
            kubeconfig=a.kubeconfig, context=a.kube_context, namespace=a.namespace
        )
    job = service.prepare(
        caller,
        config,
        nproc=a.nproc,
        cwd=path.resolve().parent,
        on_line=_echo(a),
        cluster=cluster,
        cluster_config=cluster_config,
    )
    base = config.base_ref or config.model
    where = f"{a.workers} pod(s) x {a.nproc}" if cluster else f"{a.nproc}"
    header = f"{config.method} {config.finetuning_type} of {base}, {where} process(es)"
    _foreground(ws, caller, service, job, a, header)


def _cluster(a: argparse.Namespace) -> dict[str, Any] | None:
    """The placement on Kubernetes the flags ask for (None: this machine)."""
    if a.backend != "kubernetes":
        return None
    mounts = []
    for text in a.mount or []:
        claim, _, rest = text.partition(":")
        mount_path, _, mode = rest.partition(":")
        if not claim or not mount_path or mode not in ("", "ro"):
            raise InvalidInput(
                _t("--mount {text!r} is not CLAIM:PATH[:ro]", text=text),
                _t("e.g. --mount home-alice:/home/jovyan"),
            )
        mounts.append({"claim": claim, "mount_path": mount_path, "read_only": mode == "ro"})
    cluster: dict[str, Any] = {
        "image": a.image,
        "workers": a.workers,
        "resources": {"gpus": a.gpus, **({"gpu_type": a.gpu_type} if a.gpu_type else {})},
        "mounts": mounts,
        "gang": a.gang,
        "queue": a.queue,
        "kind": a.kind,
    }
    return {k: v for k, v in cluster.items() if v not in (None, [], False)}


def _dry_run(ws: Workspace, service: Any, config: Any, a: argparse.Namespace, cluster: Any) -> None:
    """The commands (here) or the manifests (on Kubernetes) the fine-tune would run."""
    spec = service.job_spec(config, nproc=a.nproc, cluster=cluster)
    if cluster is None:
        commands = ws.training.dry_run(spec)
        if a.json:
            print_json({"config": config.to_dict(), "commands": commands})
        else:
            print("\n".join(commands))
        return
    import yaml

    from ..k8s import ClusterConfig
    from ..training import kubernetes

    namespace = (
        a.namespace
        or ClusterConfig.from_env(
            kubeconfig=a.kubeconfig, context=a.kube_context
        ).default_namespace()
    )
    parsed = ws.training.parse(spec)
    docs = kubernetes.manifests(parsed, spec["name"], namespace=namespace)
    if a.json:
        print_json({"config": config.to_dict(), "manifests": docs})
    else:
        print(yaml.safe_dump_all(docs, sort_keys=False), end="")


def merge(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    from ..finetune.service import FinetuneService

    service = FinetuneService(ws)
    job = service.prepare_merge(caller, a.model, project=a.project, on_line=_echo(a))
    _foreground(ws, caller, service, job, a, f"merge {a.model} into its base")


def evaluate(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    from ..finetune.service import FinetuneService, read_config_file

    path = Path(a.config)
    raw = read_config_file(path)
    if isinstance(raw, dict) and a.project:
        raw = {**raw, "project": a.project}
    service = FinetuneService(ws)
    config = service.parse_evaluation(caller, raw, path.resolve().parent)
    job = service.prepare_evaluation(caller, config, on_line=_echo(a))
    names = ", ".join(f"{m['label']} {m['ref']}" for m in config.models)
    view, _ = _foreground(ws, caller, None, job, a, f"evaluate {names}", done=False)
    result = service.evaluation(caller, job.plan.job_id)
    _finish(a, view, None, result)


def _echo(a: argparse.Namespace) -> Callable[[str], None] | None:
    """Where the job's log lines go: stdout (stderr with --json), nowhere with --quiet."""
    out = sys.stderr if a.json else sys.stdout

    def echo(text: str) -> None:
        out.write(text)
        out.flush()

    return None if a.quiet else echo


def _foreground(
    ws: Workspace,
    caller: Caller,
    service: Any,
    job: Any,
    a: argparse.Namespace,
    header: str,
    *,
    done: bool = True,
) -> tuple[dict[str, Any], Any]:
    """Run a prepared job (here, or followed on the cluster), its log streamed; register its
    model (``--register``)."""
    job_id = job.job_id if hasattr(job, "job_id") else job.plan.job_id  # a ClusterJob's, a local
    if not a.quiet:
        print(f"job {job_id}: {header}", file=sys.stderr if a.json else sys.stdout, flush=True)
    status = ws.training.run_foreground(job)
    view = to_jsonable(ws.training.get(caller, job_id))
    registered = None
    if status == "succeeded" and getattr(a, "register", None):
        registered = to_jsonable(service.register(caller, job_id, a.register, project=a.project))
    if done or status != "succeeded":
        _finish(a, view, registered)
    return view, registered


def _finish(
    a: argparse.Namespace, view: dict[str, Any], registered: Any, result: Any = None
) -> None:
    """The job's last line (and what it registered, or its evaluation); non-zero unless it
    succeeded."""
    from . import output

    if a.json:
        print_json({"job": view, "registered": registered, "evaluation": result})
    else:
        print(output.job_finished_line(view["id"], view["status"], view), file=sys.stderr)
        if registered:
            print(
                f"Registered {registered['model']} v{registered['version']} "
                f"({registered['flavor']}) in project {registered['project']}"
            )
        if result:
            print(evaluation_table(result))
    if view["status"] != "succeeded":
        raise SystemExit(130 if view["status"] == "cancelled" else 1)


def evaluation_table(result: dict[str, Any]) -> str:
    """The models' figures side by side, a row per metric."""
    labels = [m["label"] for m in result["models"]]
    names = [k for k in result["metrics"][labels[0]] if k not in ("tokens", "seconds")]
    rows = [["metric", *labels]] + [
        [name, *(f"{result['metrics'][label].get(name, float('nan')):.4g}" for label in labels)]
        for name in names
    ]
    width = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, width, strict=True)) for r in rows)


def remote_finetune(client: ServiceClient, a: argparse.Namespace) -> None:
    """Under the hub: the service starts the job; its log is followed here."""
    from ..finetune.service import read_config_file
    from .remote import common

    given = common.given(a, (("--dry-run", "dry_run"), *common.KUBE_CLIENT_FLAGS))
    if given:
        raise InvalidInput(
            _t(
                "cube-lab finetune {value} are not available under the hub",
                value=" / ".join(given),
            ),
            _t(
                "Leave them out: with --backend kubernetes the cube-lab service submits the "
                "job to its namespace with its own cluster credentials."
            ),
        )
    path = Path(a.config)
    folder = relative(path.parent if str(path.parent) else ".", "config folder")
    body = {"config": read_config_file(path), "folder": folder, "nproc": a.nproc}
    cluster = _cluster(a)
    if cluster is not None:
        body["cluster"] = cluster
    if a.estimate:
        from ..finetune.memory import table

        body = {k: v for k, v in {**body, "project": a.project}.items() if v is not None}
        found = client.post("finetune/estimate", body)
        print_json(found) if a.json else print(table(found))
        return
    _finish(a, *_remote_job(client, a, "finetune/jobs", body))


def remote_merge(client: ServiceClient, a: argparse.Namespace) -> None:
    _finish(a, *_remote_job(client, a, "finetune/merge", {"model": a.model}))


def remote_evaluate(client: ServiceClient, a: argparse.Namespace) -> None:
    from ..finetune.service import read_config_file

    path = Path(a.config)
    folder = relative(path.parent if str(path.parent) else ".", "config folder")
    body = {"config": read_config_file(path), "folder": folder}
    view, _ = _remote_job(client, a, "finetune/evaluations", body)
    result = None
    if view["status"] == "succeeded":
        result = client.get(f"finetune/evaluations/{segment(view['id'])}")
    _finish(a, view, None, result)


def _remote_job(
    client: ServiceClient, a: argparse.Namespace, path: str, body: dict[str, Any]
) -> tuple[dict[str, Any], Any]:
    """Start the job at the service, follow its log to the end, register its model."""
    from .remote import common

    body = {k: v for k, v in {**body, "project": a.project}.items() if v is not None}
    job = client.post(path, body)
    out = sys.stderr if a.json else sys.stdout
    where = f"training/jobs/{segment(job['id'])}"
    if not a.quiet:
        print(f"job {job['id']}: {job['name']}", file=out, flush=True)
        follow_log(client, where, True, out)
    view = client.get(where)
    while view["status"] in common.ACTIVE:
        time.sleep(common.POLL_S)
        view = client.get(where)
    registered = None
    if view["status"] == "succeeded" and getattr(a, "register", None):
        body = {"name": a.register, "project": a.project}
        registered = client.post(
            f"{where}/register", {k: v for k, v in body.items() if v is not None}
        )
    return view, registered


REMOTE: dict[str, Callable[[Any, argparse.Namespace], None]] = {
    "finetune": remote_finetune,
    "merge": remote_merge,
    "evaluate": remote_evaluate,
}


def add_commands(groups: Any, command: Callable[..., Any]) -> None:
    p = command(groups, "finetune", finetune, "fine-tune an LLM (pt/sft/rm/dpo/grpo) as a job")
    p.add_argument("config", help="fine-tune config or LLaMA-Factory training YAML")
    p.add_argument("--nproc", type=int, default=1, help="processes (torchrun)")
    p.add_argument("--register", metavar="NAME", help="register the result as model NAME")
    p.add_argument("--dry-run", action="store_true", help="print the commands or manifest")
    p.add_argument("--backend", choices=["local", "kubernetes"], default="local")
    p.add_argument("--image", help="container image with cube-lab[llm] (kubernetes)")
    p.add_argument("--workers", type=int, default=1, help="nodes (pods on a cluster)")
    p.add_argument("--gpus", type=int, default=0, help="GPUs per worker (kubernetes)")
    p.add_argument("--gpu-type", help="accelerator table key (default nvidia-gpu)")
    p.add_argument(
        "--mount",
        action="append",
        metavar="CLAIM:PATH[:ro]",
        help="a volume the pods mount (the config's files must be on one)",
    )
    p.add_argument("--gang", action="store_true", help="Volcano gang scheduling")
    p.add_argument("--queue", help="Volcano queue")
    p.add_argument("--kind", choices=["pytorchjob", "trainjob"])
    p.add_argument("--namespace", help="kubernetes namespace (default: the context's)")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    p.add_argument("--kube-context", help="kubeconfig context (default: the current one)")
    p.add_argument(
        "--estimate", action="store_true", help="print the memory it needs per process; no job"
    )
    p.add_argument("--quiet", "-q", action="store_true")
    p = command(groups, "merge", merge, "merge a LoRA adapter version into its base model")
    p.add_argument("model", help="the adapter's registered version, NAME[:VERSION]")
    p.add_argument("--register", metavar="NAME", help="register the merged model as NAME")
    p.add_argument("--quiet", "-q", action="store_true")
    p = command(
        groups, "evaluate", evaluate, "evaluate LLMs before vs after: perplexity, prompt scores"
    )
    p.add_argument("config", help="evaluation config (model, baseline, data, prompts...)")
    p.add_argument("--quiet", "-q", action="store_true")
