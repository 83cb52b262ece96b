"""The handle-specific parts of the live views (``views.LiveView``): a job's log tail with a
rank filter and its register button, a deployment's traffic figures and test box, a labeling
project's progress and sample thumbnails.

A part has ``widget`` (what the view shows) and ``update()`` (called after each refresh of
its handle, in the view's thread); buttons act in the kernel when clicked, through the SDK.
"""

from __future__ import annotations

import base64
import html
import io
import json
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from ..errors import CubeError
from ..locale.messages import _t
from ..training.metrics import split_rank
from .views import TEXT, table_html, tr

if TYPE_CHECKING:
    from .labeling import LabelingProject
    from .serving import Deployment
    from .training import Job

LOG_LINES = 15  # shown
KEPT_LINES = 200  # kept per rank, and for all ranks together
LOG_READS = 8  # chunks read per refresh at most (64 KiB each): a chatty job cannot stall it
THUMBNAILS = 6
THUMB_PX = 72
ANSWER_CHARS = 2000


def _error_html(exc: CubeError) -> str:
    detail = f"<br>{html.escape(exc.detail)}" if exc.detail else ""
    return (
        f"<span style='color:var(--jp-error-color1, #c00)'>{html.escape(exc.error)}{detail}</span>"
    )


class RankLog:
    """The job's log as it grows: the last lines of every rank, or of one rank."""

    def __init__(self, job: Job) -> None:
        import ipywidgets as w

        self.job = job
        self.offset = 0
        self.partial = ""  # a line the last read ended inside
        self.all: deque[str] = deque(maxlen=KEPT_LINES)
        self.by_rank: dict[int, deque[str]] = {}
        self.ranks = w.Dropdown(
            options=[(tr(TEXT["all_ranks"]), -1)], value=-1, description=tr(TEXT["rank"])
        )
        self.ranks.layout.width = "220px"
        self.ranks.observe(lambda _change: self.render(), names="value")
        self.text = w.HTML()
        self.widget = w.VBox([self.ranks, self.text])
        self.widget.layout.display = "none"  # until there is a line to show

    def read(self) -> None:
        from . import current

        transport = current()
        for _ in range(LOG_READS):
            chunk = transport.job_log(self.job.id, self.offset)  # a long log: from its tail
            self.take(chunk["text"])
            moved = chunk["offset"] != self.offset
            self.offset = chunk["offset"]
            if not moved or self.offset >= chunk["size"]:
                return

    def take(self, text: str) -> None:
        lines = (self.partial + text).split("\n")
        self.partial = lines.pop()
        for line in lines:
            rank, rest = split_rank(line)
            self.all.append(line)
            if rank is not None:
                self.by_rank.setdefault(rank, deque(maxlen=KEPT_LINES)).append(rest)

    def update(self) -> None:
        try:
            self.read()
        except CubeError:  # a job without a log yet, or a server away: the view says so
            return
        if self.job.done and self.partial:  # its last line had no newline
            self.take("\n")
        options = [(tr(TEXT["all_ranks"]), -1)] + [
            (tr(_t("Rank {rank}", rank=r)), r) for r in sorted(self.by_rank)
        ]
        if len(options) != len(self.ranks.options):
            self.ranks.options = options  # keeps the value while it is still there
        self.ranks.layout.display = None if len(options) > 2 else "none"
        self.render()

    def lines(self) -> list[str]:
        """What is shown: the last lines of the chosen rank (all ranks: -1)."""
        chosen = self.ranks.value
        kept = self.all if chosen == -1 else self.by_rank.get(chosen, deque())
        return list(kept)[-LOG_LINES:]

    def render(self) -> None:
        shown = self.lines()
        self.widget.layout.display = None if self.all else "none"
        self.text.value = (
            f"<div>{html.escape(tr(_t('Log of {name} (last lines)', name=self.job.name)))}</div>"
            f"<pre style='margin:0;max-height:18em;overflow:auto'>"
            f"{html.escape(chr(10).join(shown))}</pre>"
        )


class RegisterBox:
    """Register what the succeeded job saved as a model version, from the view."""

    def __init__(self, job: Job) -> None:
        import ipywidgets as w

        self.job = job
        self.name = w.Text(value=job.name, description=tr(TEXT["model_name"]))
        self.button = w.Button(description=tr(TEXT["register"]), icon="archive")
        self.button.on_click(lambda _b: self.register())
        self.result = w.HTML()
        self.widget = w.HBox([self.name, self.button, self.result])
        self.update()

    def update(self) -> None:
        succeeded = self.job.status == "succeeded"
        self.widget.layout.display = None if succeeded else "none"
        self.button.disabled = not succeeded

    def register(self) -> None:
        from .views import link_html

        self.button.disabled = True
        try:
            version = self.job.register(self.name.value.strip())
        except CubeError as exc:
            self.result.value = _error_html(exc)
            self.button.disabled = False
            return
        self.result.value = html.escape(
            tr(_t("Registered {name}:{version}", name=version.name, version=version.version))
        ) + link_html(version.url)
        self.button.disabled = False


class TrafficStats:
    """Requests, errors, requests per second since the last refresh, latency, in flight."""

    def __init__(self, deployment: Deployment) -> None:
        import ipywidgets as w

        self.deployment = deployment
        self.seen: tuple[float, int] | None = None  # (when, requests) at the last refresh
        self.qps: float | None = None
        self.widget = w.HTML()

    def update(self) -> None:
        if not self.deployment.ready:
            self.widget.value = ""
            self.seen = None
            return
        try:
            stats = self.deployment.stats()
        except CubeError as exc:
            self.widget.value = _error_html(exc)
            return
        now = time.monotonic()
        if self.seen is not None and now > self.seen[0]:
            self.qps = max(0, stats["requests"] - self.seen[1]) / (now - self.seen[0])
        self.seen = (now, stats["requests"])
        self.widget.value = html.escape(
            tr(
                _t(
                    "Requests: {requests} · errors: {errors} · {qps} req/s · "
                    "latency p50 {p50} ms, p95 {p95} ms · in flight: {in_flight}",
                    **self.figures(stats),
                )
            )
        )

    def figures(self, stats: dict[str, Any]) -> dict[str, str]:
        def ms(value: float | None) -> str:
            return "-" if value is None else f"{value:.3g}"

        return {
            "requests": str(stats["requests"]),
            "errors": str(stats["errors"]),
            "qps": "-" if self.qps is None else f"{self.qps:.3g}",
            "p50": ms(stats["p50_ms"]),
            "p95": ms(stats["p95_ms"]),
            "in_flight": str(stats["in_flight"]),
        }


class TestBox:
    """Send one request from the view: rows as JSON (or an OIP v2 request) to a classic
    model, a message to an LLM; the answer and how long it took."""

    def __init__(self, deployment: Deployment) -> None:
        import ipywidgets as w

        self.deployment = deployment
        llm = deployment.runtime == "llm"
        self.input = w.Textarea(
            placeholder=tr(TEXT["test_llm"] if llm else TEXT["test_rows"]),
            rows=2,
        )
        self.input.layout.width = "60%"
        self.button = w.Button(description=tr(TEXT["send"]), icon="paper-plane")
        self.button.on_click(lambda _b: self.send())
        self.answer = w.HTML()
        self.widget = w.VBox([w.HBox([self.input, self.button]), self.answer])
        self.update()

    def update(self) -> None:
        self.widget.layout.display = None if self.deployment.ready else "none"

    def send(self) -> None:
        text = self.input.value.strip()
        if not text:
            return
        self.button.disabled = True
        started = time.perf_counter()
        try:
            answer = self.ask(text)
        except CubeError as exc:
            self.answer.value = _error_html(exc)
        else:
            took = (time.perf_counter() - started) * 1000
            shown = answer if len(answer) <= ANSWER_CHARS else answer[:ANSWER_CHARS] + "…"
            self.answer.value = (
                f"<div>{html.escape(tr(_t('Answer ({ms} ms)', ms=f'{took:.0f}')))}</div>"
                f"<pre style='margin:0'>{html.escape(shown)}</pre>"
            )
        finally:
            self.button.disabled = False

    def ask(self, text: str) -> str:
        from ..errors import InvalidInput

        if self.deployment.runtime == "llm":
            return str(self.deployment.chat(text))
        try:
            given = json.loads(text)
        except ValueError:
            raise InvalidInput(tr(TEXT["not_json"]), tr(TEXT["test_rows"])) from None
        return json.dumps(self.deployment.predict(given))


class LabelingSummary:
    """Progress per person and per label, and a few of the dataset's items."""

    def __init__(self, labeling: LabelingProject) -> None:
        import ipywidgets as w

        self.labeling = labeling
        self.people = w.HTML()
        self.labels = w.HTML()
        self.samples = w.HTML()
        self.thumbnails: str | None = None  # made once: the items do not change
        self.widget = w.VBox([w.HBox([self.people, self.labels]), self.samples])
        self.update()

    def update(self) -> None:
        progress = self.labeling.data.get("progress") or {}
        people = progress.get("by_user") or {}
        self.people.value = table_html(
            [tr(TEXT[c]) for c in ("person", "assigned", "submitted", "accepted", "rejected")],
            [
                [
                    user,
                    *(counts.get(k, 0) for k in ("assigned", "submitted", "accepted", "rejected")),
                ]
                for user, counts in sorted(people.items())
            ],
        )
        labels = progress.get("by_label") or {}
        self.labels.value = table_html(
            [tr(TEXT["label"]), tr(TEXT["items"])], [[k, v] for k, v in sorted(labels.items())]
        )
        if self.thumbnails is None:
            self.thumbnails = self.make_thumbnails()
            self.samples.value = self.thumbnails

    def make_thumbnails(self) -> str:
        from . import current

        transport = current()
        project, dataset = self.labeling.project, self.labeling.dataset
        try:
            items = transport.dataset_items(project, dataset)[:THUMBNAILS]
            if self.labeling.type.startswith("text"):
                return table_html(
                    [tr(TEXT["sample"])], [[_short(str(i.get("text") or ""))] for i in items]
                )
            pictures = [
                _thumbnail(transport.item_content(project, dataset, int(i["id"])), i["name"])
                for i in items
            ]
        except CubeError as exc:
            return _error_html(exc)
        return "".join(pictures)


def _short(text: str, most: int = 120) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _thumbnail(content: bytes, name: str) -> str:
    """A small JPEG of an image, inline (a picture that cannot be read shows its name)."""
    from PIL import Image, UnidentifiedImageError

    label = html.escape(name, quote=True)
    try:
        with Image.open(io.BytesIO(content)) as image:
            image.thumbnail((THUMB_PX, THUMB_PX))
            out = io.BytesIO()
            image.convert("RGB").save(out, "JPEG", quality=80)
    except (UnidentifiedImageError, OSError, ValueError):
        return f"<span style='margin-right:6px'>{label}</span>"
    data = base64.b64encode(out.getvalue()).decode()
    return (
        f"<img src='data:image/jpeg;base64,{data}' alt='{label}' title='{label}' "
        "style='margin:2px 6px 2px 0;border:1px solid var(--jp-border-color2, #ddd)'/>"
    )
