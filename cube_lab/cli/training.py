"""`cube-lab train SCRIPT` and `cube-lab training list|logs|stop|metrics|register`."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..identity import Caller
from ..serialize import to_jsonable
from .args import parse_pairs, print_json, print_table
from .output import job_finished_line

if TYPE_CHECKING:
    from ..workspace import Workspace


def show_jobs(jobs: list[dict[str, Any]]) -> None:
    print_table(
        [
            [
                j["id"],
                j["name"],
                j["framework"],
                j["status"],
                str(j["workers"] * j["nproc_per_worker"]),
                f"{j['duration_s']:.1f}s" if j["duration_s"] is not None else "",
                j["command"],
            ]
            for j in jobs
        ],
        ["JOB", "NAME", "FRAMEWORK", "STATUS", "PROCS", "TOOK", "COMMAND"],
    )


def _train_spec(a: argparse.Namespace) -> dict[str, Any]:
    script, args = a.script, list(a.args)
    command: list[str] = []
    if a.framework == "plain" and not script.endswith(".py"):
        command, script, args = [script, *args], None, []
    resources: dict[str, Any] = {"gpus": a.gpus, "cpu": a.cpu, "memory": a.memory}
    if a.gpu_type:
        resources["gpu_type"] = a.gpu_type
    return {
        "framework": a.framework,
        "script": script,
        "command": command,
        "args": args,
        "env": {k: str(v) for k, v in parse_pairs(a.env, "env").items()},
        "working_dir": a.workdir,
        "workers": a.workers,
        "nproc_per_worker": a.nproc,
        "resources": resources,
        "retries": a.retries,
        "timeout_s": a.timeout,
        "project": a.project,
        "name": a.name,
        "image": a.image,
        "backend": a.backend,
        "output_dir": a.output_dir,
        "gang": a.gang,
        "queue": a.queue,
        "shm_size": a.shm_size,
        "rdma": a.rdma,
        "kind": a.kind,
    }


def train_run(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    """Run a training job here, streaming every rank's output; exit with its status."""
    spec = ws.training.parse(_train_spec(a))
    if spec.backend == "kubernetes":
        from ..k8s import ClusterConfig

        cluster = ClusterConfig.from_env(
            kubeconfig=a.kubeconfig, context=a.kube_context, namespace=a.namespace
        )
        if a.dry_run:
            import yaml

            from ..training import kubernetes

            name = spec.name or Path(spec.argv()[0]).stem
            namespace = cluster.default_namespace()
            docs = kubernetes.manifests(spec, name, namespace=namespace, kind=a.kind)
            if a.json:
                print_json({"manifests": docs})
            else:
                print(yaml.safe_dump_all(docs, sort_keys=False), end="")
            return
    if a.dry_run:
        commands = ws.training.dry_run(spec)
        if a.json:
            print_json({"commands": commands})
        else:
            for line in commands:
                print(line)
        return
    out = sys.stderr if a.json else sys.stdout  # --json keeps stdout for the result

    def echo(text: str) -> None:
        out.write(text)
        out.flush()

    on_line = None if a.quiet else echo
    if spec.backend == "kubernetes":
        job = ws.training.prepare(caller, spec, None, on_line=on_line, cluster=cluster)
        job_id = job.job_id
        if not a.quiet:
            where = f"{job.kind} {job.namespace}/{job.name} on {job.config.describe()}"
            print(f"job {job_id}: {where}; Ctrl-C deletes it", file=out, flush=True)
    else:
        job = ws.training.prepare(caller, spec, None, on_line=on_line)
        job_id = job.plan.job_id
        if not a.quiet:
            gpus = f", GPUs {job.plan.gpus}" if job.plan.gpus else ""
            print(
                f"job {job_id}: {spec.framework}, {spec.processes} process(es){gpus}",
                file=out,
                flush=True,
            )
    status = ws.training.run_foreground(job)
    view = ws.training.get(caller, job_id)
    if a.json:
        print_json(view)
    else:
        print(job_finished_line(job_id, status, to_jsonable(view)), file=sys.stderr)
    if status != "succeeded":
        raise SystemExit(130 if status == "cancelled" else 1)


def training_list(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    jobs = ws.training.list(caller, project=a.project, limit=a.limit)
    if a.json:
        print_json(jobs)
        return
    show_jobs(to_jsonable(jobs))


def training_logs(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    offset = 0
    while True:
        chunk = ws.training.tail_log(caller, a.job, offset)
        sys.stdout.write(chunk.text)
        sys.stdout.flush()
        offset = chunk.offset
        if chunk.done or not a.follow:
            return
        time.sleep(0.5)


def training_stop(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    view = ws.training.stop(caller, a.job)
    if a.json:
        print_json(view)
    else:
        print(f"job {a.job}: {view.status}")


def training_metrics(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    found = ws.training.metrics(caller, a.job)
    if a.json:
        print_json(found)
        return
    for key, points in found.series.items():
        print(f"{key}: {len(points)} points, last {points[-1][1]:g} at step {points[-1][0]:g}")


def training_register(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    path = str(Path(a.path).resolve()) if a.path else None
    v = ws.training.register_model(caller, a.job, a.name, path, project=a.project)
    if a.json:
        print_json(v)
    else:
        print(f"Registered {v.model} v{v.version} from job {a.job} in project {v.project}")


def add_commands(groups: Any, command: Callable[..., Any]) -> None:
    p = command(groups, "train", train_run, "run a distributed training job, streaming its logs")
    p.add_argument(
        "--framework",
        choices=["pytorch", "deepspeed", "tensorflow", "mpi", "plain"],
        default="pytorch",
    )
    p.add_argument("--workers", type=int, default=1, help="nodes (pods on a cluster)")
    p.add_argument("--nproc", type=int, default=1, help="processes per worker")
    p.add_argument("--gpus", type=int, default=0, help="GPUs per worker")
    p.add_argument("--gpu-type", help="accelerator table key (default nvidia-gpu)")
    p.add_argument("--cpu", help="CPU per worker (cluster), e.g. 4")
    p.add_argument("--memory", help="memory per worker (cluster), e.g. 16Gi")
    p.add_argument("--backend", choices=["local", "kubernetes"], default="local")
    p.add_argument("--dry-run", action="store_true", help="print the commands or manifest")
    p.add_argument("--env", action="append", metavar="K=V")
    p.add_argument("--workdir", help="working directory (default: here)")
    p.add_argument("--output-dir", help="checkpoint folder ($CUBE_OUTPUT_DIR)")
    p.add_argument("--retries", type=int, default=0)
    p.add_argument("--timeout", type=int, metavar="SECONDS")
    p.add_argument("--name")
    p.add_argument("--image", help="container image (kubernetes)")
    p.add_argument("--kind", choices=["pytorchjob", "tfjob", "mpijob", "trainjob"])
    p.add_argument("--namespace", help="kubernetes namespace (default: the context's)")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    p.add_argument("--kube-context", help="kubeconfig context (default: the current one)")
    p.add_argument("--gang", action="store_true", help="Volcano gang scheduling")
    p.add_argument("--queue", help="Volcano queue")
    p.add_argument("--shm-size", help="a memory-backed /dev/shm of this size (kubernetes)")
    p.add_argument("--rdma", action="store_true", help="request an RDMA device (kubernetes)")
    p.add_argument("--quiet", "-q", action="store_true")
    p.add_argument("script", help="the training script (or, for plain, a program)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    jobs = groups.add_parser("training", help="training jobs").add_subparsers(
        dest="command", required=True
    )
    p = command(jobs, "list", training_list, "list training jobs")
    p.add_argument("--limit", type=int, default=20)
    p = command(jobs, "logs", training_logs, "print a job's log (every rank)", json=False)
    p.add_argument("job")
    p.add_argument("--follow", "-f", action="store_true")
    p = command(jobs, "stop", training_stop, "stop a job")
    p.add_argument("job")
    p = command(jobs, "metrics", training_metrics, "a job's metric series")
    p.add_argument("job")
    p = command(jobs, "register", training_register, "register a job's checkpoint as a model")
    p.add_argument("job")
    p.add_argument("--name", required=True)
    p.add_argument("--path", help="what to register (default: the last checkpoint)")
