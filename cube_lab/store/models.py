"""SQLAlchemy tables. Every owned object carries ``owner`` and ``project_id``.

Changing a table means adding an Alembic revision under ``migrations/versions``;
``tests/store/test_store.py`` fails when the models and the migrations disagree.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, datetime: DateTime(timezone=True)}


class Project(Base):
    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    kind: Mapped[str] = mapped_column(String(16))  # "personal" | "team"
    description: Mapped[str] = mapped_column(Text, default="")
    created_by: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    members: Mapped[list[ProjectMember]] = relationship(
        back_populates="project", cascade="all, delete-orphan", order_by="ProjectMember.username"
    )
    invitations: Mapped[list[ProjectInvitation]] = relationship(
        back_populates="project",
        cascade="all, delete-orphan",
        order_by="ProjectInvitation.username",
    )


class ProjectMember(Base):
    """A member: sees and uses everything in the project. Only accepted invitations and hub
    project groups make one; a pending invitation is a ``ProjectInvitation``, never a row
    here, so every query that joins members sees members only."""

    __tablename__ = "project_members"

    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    )
    username: Mapped[str] = mapped_column(String(255), primary_key=True, index=True)
    role: Mapped[str] = mapped_column(String(16))  # "owner" | "member"

    project: Mapped[Project] = relationship(back_populates="members")


class ProjectInvitation(Base):
    """An owner's invitation, pending until the invited user accepts (then a member) or
    declines (then gone). The invited user sees nothing of the project meanwhile."""

    __tablename__ = "project_invitations"

    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    )
    username: Mapped[str] = mapped_column(String(255), primary_key=True, index=True)
    role: Mapped[str] = mapped_column(String(16))  # the role they get on accepting
    invited_by: Mapped[str] = mapped_column(String(255))
    invited_at: Mapped[datetime] = mapped_column(default=utcnow)

    project: Mapped[Project] = relationship(back_populates="invitations")


class RegisteredModel(Base):
    __tablename__ = "registered_models"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_model_project_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(128))
    description: Mapped[str] = mapped_column(Text, default="")
    owner: Mapped[str] = mapped_column(String(255))
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    # course material (a teacher's hand-out): only its owner (or an admin) changes it
    read_only: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)

    project: Mapped[Project] = relationship()
    versions: Mapped[list[ModelVersion]] = relationship(
        back_populates="model", cascade="all, delete-orphan", order_by="ModelVersion.version.desc()"
    )
    aliases: Mapped[list[ModelAlias]] = relationship(
        back_populates="model", cascade="all, delete-orphan", order_by="ModelAlias.alias"
    )


class ModelVersion(Base):
    __tablename__ = "model_versions"
    __table_args__ = (UniqueConstraint("model_id", "version", name="uq_version_model_number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model_id: Mapped[int] = mapped_column(
        ForeignKey("registered_models.id", ondelete="CASCADE"), index=True
    )
    version: Mapped[int] = mapped_column(Integer)
    flavor: Mapped[str] = mapped_column(String(32))
    format: Mapped[str] = mapped_column(String(16))  # "mlflow" | "file" | "directory"
    artifact_name: Mapped[str] = mapped_column(String(255))
    artifact_path: Mapped[str] = mapped_column(String(1024))  # relative to the artifacts dir
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    checksum: Mapped[str] = mapped_column(String(80))
    description: Mapped[str] = mapped_column(Text, default="")
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    metrics: Mapped[dict[str, Any]] = mapped_column(default=dict)
    tags: Mapped[dict[str, Any]] = mapped_column(default=dict)
    source: Mapped[str | None] = mapped_column(String(1024), nullable=True)
    pipeline_run_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    training_job_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    # lineage: the dataset versions it was trained on, [{"project", "name", "version", "path"}]
    datasets: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    created_by: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    model: Mapped[RegisteredModel] = relationship(back_populates="versions")


class ModelAlias(Base):
    """One version per alias per model: the primary key is (model, alias)."""

    __tablename__ = "model_aliases"

    model_id: Mapped[int] = mapped_column(
        ForeignKey("registered_models.id", ondelete="CASCADE"), primary_key=True
    )
    alias: Mapped[str] = mapped_column(String(64), primary_key=True)
    version_id: Mapped[int] = mapped_column(
        ForeignKey("model_versions.id", ondelete="CASCADE"), index=True
    )
    updated_by: Mapped[str] = mapped_column(String(255))
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)

    model: Mapped[RegisteredModel] = relationship(back_populates="aliases")
    version: Mapped[ModelVersion] = relationship()


class PipelineRun(Base):
    """One run of a pipeline file; ``runner_pid`` tells a live run from one a crash left."""

    __tablename__ = "pipeline_runs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    owner: Mapped[str] = mapped_column(String(255))
    pipeline_path: Mapped[str] = mapped_column(String(1024), index=True)  # absolute
    pipeline_name: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(16), index=True)
    trigger: Mapped[str] = mapped_column(String(16))  # manual | schedule | cli
    schedule_id: Mapped[int | None] = mapped_column(Integer, nullable=True, index=True)
    options: Mapped[dict[str, Any]] = mapped_column(default=dict)  # params, only, from, cache
    run_dir: Mapped[str] = mapped_column(String(1024))
    runner_pid: Mapped[int | None] = mapped_column(Integer, nullable=True)
    runner_host: Mapped[str | None] = mapped_column(String(255), nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    started_at: Mapped[datetime | None] = mapped_column(nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(nullable=True)

    nodes: Mapped[list[NodeRun]] = relationship(
        back_populates="run", cascade="all, delete-orphan", order_by="NodeRun.position"
    )


class NodeRun(Base):
    __tablename__ = "node_runs"

    run_id: Mapped[str] = mapped_column(
        ForeignKey("pipeline_runs.id", ondelete="CASCADE"), primary_key=True
    )
    node_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    label: Mapped[str] = mapped_column(String(255))
    kind: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    log_path: Mapped[str | None] = mapped_column(String(1024), nullable=True)
    values: Mapped[dict[str, Any]] = mapped_column(default=dict)
    outputs: Mapped[dict[str, Any]] = mapped_column(default=dict)  # {"files": [...]}
    cache_key: Mapped[str | None] = mapped_column(String(80), nullable=True, index=True)
    reused_from: Mapped[str | None] = mapped_column(String(32), nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(nullable=True)

    run: Mapped[PipelineRun] = relationship(back_populates="nodes")


class PipelineSchedule(Base):
    __tablename__ = "pipeline_schedules"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    owner: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(128))
    pipeline_path: Mapped[str] = mapped_column(String(1024))
    root_dir: Mapped[str] = mapped_column(String(1024))  # the project folder runs may not leave
    cron: Mapped[str] = mapped_column(String(128))
    start_at: Mapped[datetime] = mapped_column()
    end_at: Mapped[datetime | None] = mapped_column(nullable=True)
    catchup: Mapped[bool] = mapped_column(Boolean, default=False)
    depends_on_past: Mapped[bool] = mapped_column(Boolean, default=False)
    max_active_runs: Mapped[int] = mapped_column(Integer, default=1)
    expire_after_s: Mapped[int | None] = mapped_column(Integer, nullable=True)
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    last_fire_at: Mapped[datetime | None] = mapped_column(nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class TrainingJob(Base):
    """One training job; ``runner_pid`` tells a live job from one a crash left behind."""

    __tablename__ = "training_jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    owner: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(255))
    framework: Mapped[str] = mapped_column(String(16))
    backend: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16), index=True)
    spec: Mapped[dict[str, Any]] = mapped_column(default=dict)  # JobSpec.to_dict()
    info: Mapped[dict[str, Any]] = mapped_column(default=dict)  # gpus, cwd, launch, checkpoint
    job_dir: Mapped[str] = mapped_column(String(1024))
    runner_pid: Mapped[int | None] = mapped_column(Integer, nullable=True)
    runner_host: Mapped[str | None] = mapped_column(String(255), nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    started_at: Mapped[datetime | None] = mapped_column(nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(nullable=True)


class Deployment(Base):
    """A model served as a service: a router process and model server processes (local), or
    an InferenceService (kubernetes). ``info`` holds the pids, ports and the routing table."""

    __tablename__ = "deployments"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_deployment_project_name"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    owner: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(128))
    model_name: Mapped[str] = mapped_column(String(128))
    version: Mapped[int] = mapped_column(Integer)  # the primary version
    backend: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16), index=True)
    replicas: Mapped[int] = mapped_column(Integer, default=1)
    host: Mapped[str] = mapped_column(String(255))
    port: Mapped[int | None] = mapped_column(Integer, nullable=True)
    router_pid: Mapped[int | None] = mapped_column(Integer, nullable=True)
    runner_host: Mapped[str | None] = mapped_column(String(255), nullable=True)
    info: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # who may call it: {"auth", "rate_limit", "allow", "deny"} (serving/access.py); NULL on
    # deployments made before access settings, which asked no key
    access: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    stopped_at: Mapped[datetime | None] = mapped_column(nullable=True)


class DeploymentKey(Base):
    """An API key of a deployment, stored as the SHA-256 of the key (shown once when made)
    and its first characters. Keys belong to the deployment's project and name, so they
    outlive a redeploy of that name; removing the deployment removes them."""

    __tablename__ = "deployment_keys"
    __table_args__ = (Index("ix_deployment_keys_deployment", "project_id", "deployment"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    deployment: Mapped[str] = mapped_column(String(128))  # the deployment's name
    name: Mapped[str] = mapped_column(String(128))
    prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 hex
    created_by: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(nullable=True)
    last_used_at: Mapped[datetime | None] = mapped_column(nullable=True)


class TuningExperiment(Base):
    """A hyperparameter search; ``runner_pid`` tells a live one from one a crash left."""

    __tablename__ = "tuning_experiments"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    owner: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(16), index=True)
    spec: Mapped[dict[str, Any]] = mapped_column(default=dict)  # ExperimentSpec.to_dict()
    folder: Mapped[str] = mapped_column(String(1024))
    runner_pid: Mapped[int | None] = mapped_column(Integer, nullable=True)
    runner_host: Mapped[str | None] = mapped_column(String(255), nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    started_at: Mapped[datetime | None] = mapped_column(nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(nullable=True)
    trials: Mapped[list[TuningTrial]] = relationship(
        back_populates="experiment", cascade="all, delete-orphan", order_by="TuningTrial.seq"
    )


class TuningTrial(Base):
    __tablename__ = "tuning_trials"

    id: Mapped[str] = mapped_column(String(48), primary_key=True)
    experiment_id: Mapped[str] = mapped_column(
        ForeignKey("tuning_experiments.id", ondelete="CASCADE"), index=True
    )
    seq: Mapped[int] = mapped_column(Integer)
    parameter_id: Mapped[int] = mapped_column(Integer)
    parameters: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[str] = mapped_column(String(16))
    intermediate: Mapped[list[float]] = mapped_column(JSON, default=list)
    final: Mapped[float | None] = mapped_column(Float, nullable=True)
    final_raw: Mapped[Any] = mapped_column(JSON, nullable=True)  # what the trial reported
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(nullable=True)
    experiment: Mapped[TuningExperiment] = relationship(back_populates="trials")


class ProcessGroup(Base):
    """A process group cube-lab started for a run or job (a pipeline node, a notebook node's
    kernel, a training job's launcher, a tuning trial or trial host), kept while it runs, so
    recovery can end what a crash left behind. ``start_ticks`` (``/proc/<pid>/stat`` field
    22) and ``boot_id`` prove later that ``pid`` is still that process, not a reused pid."""

    __tablename__ = "process_groups"
    __table_args__ = (Index("ix_process_groups_owner", "owner_kind", "owner_id", "part"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_kind: Mapped[str] = mapped_column(String(16))  # pipeline | training | tuning
    owner_id: Mapped[str] = mapped_column(String(64))  # the run, job or experiment id
    part: Mapped[str] = mapped_column(String(255), default="")  # node or trial id, "" for all
    role: Mapped[str] = mapped_column(String(16))  # node | kernel | launcher | trial | host
    pgid: Mapped[int] = mapped_column(Integer)
    pid: Mapped[int] = mapped_column(Integer)
    start_ticks: Mapped[int] = mapped_column(BigInteger)
    boot_id: Mapped[str] = mapped_column(String(64))
    host: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Dataset(Base):
    """Items stored by reference: a folder of images or a CSV / JSONL file of texts."""

    __tablename__ = "datasets"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_dataset_project_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    owner: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(128))
    kind: Mapped[str] = mapped_column(String(16))  # "images" | "texts"
    source: Mapped[str] = mapped_column(String(1024))  # absolute folder or file
    text_field: Mapped[str | None] = mapped_column(String(128), nullable=True)
    item_count: Mapped[int] = mapped_column(Integer, default=0)
    # course material (a teacher's hand-out): only its owner (or an admin) adds versions
    read_only: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    versions: Mapped[list[DatasetVersion]] = relationship(
        back_populates="dataset", cascade="all, delete-orphan", order_by="DatasetVersion.version"
    )


class DatasetItem(Base):
    """One image (``name`` = its path relative to the source) or one text row."""

    __tablename__ = "dataset_items"
    __table_args__ = (UniqueConstraint("dataset_id", "position", name="uq_item_dataset_position"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(1024))
    checksum: Mapped[str] = mapped_column(String(80))  # "sha256:<hex>"
    size_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    width: Mapped[int | None] = mapped_column(Integer, nullable=True)
    height: Mapped[int | None] = mapped_column(Integer, nullable=True)
    text: Mapped[str | None] = mapped_column(Text, nullable=True)
    meta: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)


class DatasetVersion(Base):
    """A snapshot of labels written by an export: a folder or a file under the data dir."""

    __tablename__ = "dataset_versions"
    __table_args__ = (UniqueConstraint("dataset_id", "version", name="uq_dataset_version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("datasets.id", ondelete="CASCADE"), index=True
    )
    version: Mapped[int] = mapped_column(Integer)
    format: Mapped[str] = mapped_column(String(16))
    labeling: Mapped[str] = mapped_column(String(128))  # the labeling project's name
    path: Mapped[str] = mapped_column(String(1024))  # absolute
    item_count: Mapped[int] = mapped_column(Integer, default=0)
    # a copy's original, "<project>/<dataset>:v<N>" (a course hand-out), else None
    origin: Mapped[str | None] = mapped_column(String(512), nullable=True)
    created_by: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    dataset: Mapped[Dataset] = relationship(back_populates="versions")


class LabelingProject(Base):
    __tablename__ = "labeling_projects"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_labeling_project_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    owner: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(128))
    # RESTRICT: a dataset in use is not deleted from under its labels
    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("datasets.id", ondelete="RESTRICT"), index=True
    )
    type: Mapped[str] = mapped_column(String(16))
    multi_label: Mapped[bool] = mapped_column(Boolean, default=False)
    labels: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    instructions: Mapped[str] = mapped_column(Text, default="")
    review: Mapped[bool] = mapped_column(Boolean, default=True)
    reviewers: Mapped[list[str]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    dataset: Mapped[Dataset] = relationship()


class LabelingTask(Base):
    """One item to label. ``result`` is what a person decided, ``prediction`` what a model
    proposed; they never mix. ``rejected`` marks a task sent back by its reviewer."""

    __tablename__ = "labeling_tasks"
    __table_args__ = (
        # the caller's queue: first assigned task of a user, in id order
        Index("ix_labeling_tasks_queue", "labeling_id", "assignee", "status", "id"),
        # the pool: first new task, in id order
        Index("ix_labeling_tasks_pool", "labeling_id", "status", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    labeling_id: Mapped[int] = mapped_column(ForeignKey("labeling_projects.id", ondelete="CASCADE"))
    item_id: Mapped[int] = mapped_column(
        ForeignKey("dataset_items.id", ondelete="CASCADE"), index=True
    )
    status: Mapped[str] = mapped_column(String(16))
    assignee: Mapped[str | None] = mapped_column(String(255), nullable=True)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    prediction: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    prediction_model: Mapped[str | None] = mapped_column(String(255), nullable=True)
    rejected: Mapped[bool] = mapped_column(Boolean, default=False)
    review_comment: Mapped[str | None] = mapped_column(Text, nullable=True)
    reviewer: Mapped[str | None] = mapped_column(String(255), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)

    item: Mapped[DatasetItem] = relationship()


class AlertRule(Base):
    """A project's notification rule: the events it matches (``job.failed``, ``run.*``,
    ``*.duration`` past ``duration_s``, ``deployment.error_rate`` or ``deployment.p99`` past
    ``threshold``) and the channel it sends them to
    (cube_lab/alerts/channels.py). The channel's secret fields (``url``, ``secret``,
    ``password``) are kept here and never answered: readers get ``channels.masked``."""

    __tablename__ = "alert_rules"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_alert_rule_project_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    owner: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(128))
    events: Mapped[list[str]] = mapped_column(JSON, default=list)
    duration_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    threshold: Mapped[float | None] = mapped_column(Float, nullable=True)
    # quota.usage: the quota dimension watched (gpus, gpu_hours, cpu, memory, servers, jobs,
    # an accelerator resource name, or any)
    resource: Mapped[str | None] = mapped_column(String(128), nullable=True)
    channel: Mapped[dict[str, Any]] = mapped_column(default=dict)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class AlertDelivery(Base):
    """One message a rule sent (or failed to send); the last ``KEEP`` per rule are kept."""

    __tablename__ = "alert_deliveries"
    __table_args__ = (Index("ix_alert_deliveries_rule", "rule_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    rule_id: Mapped[int] = mapped_column(ForeignKey("alert_rules.id", ondelete="CASCADE"))
    at: Mapped[datetime] = mapped_column(default=utcnow)
    event: Mapped[str] = mapped_column(String(64))
    object: Mapped[str] = mapped_column(String(255))  # "job 20261203-…", "run …"
    ok: Mapped[bool] = mapped_column(Boolean)
    attempts: Mapped[int] = mapped_column(Integer)
    status: Mapped[int | None] = mapped_column(Integer, nullable=True)  # HTTP / SMTP code
    error: Mapped[str] = mapped_column(Text, default="")


class ChatConversation(Base):
    """A user's chat with a language model in a project (cube_lab/chat/): its target (a
    deployment of the project, or an OpenAI-compatible URL), system prompt and sampling
    parameters. An external target's API key is kept in ``api_key`` and never answered."""

    __tablename__ = "chat_conversations"
    __table_args__ = (Index("ix_chat_conversations_owner", "project_id", "owner"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    owner: Mapped[str] = mapped_column(String(255))
    title: Mapped[str] = mapped_column(String(255), default="")
    target: Mapped[dict[str, Any]] = mapped_column(default=dict)  # no api_key in here
    api_key: Mapped[str | None] = mapped_column(Text, nullable=True)
    system: Mapped[str] = mapped_column(Text, default="")
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class ChatMessage(Base):
    """One message of a conversation. A turn is a user message and its answers: regenerated
    answers stay as alternatives (``active`` false), which preference export pairs up."""

    __tablename__ = "chat_messages"
    __table_args__ = (Index("ix_chat_messages_conversation", "conversation_id", "turn", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    conversation_id: Mapped[int] = mapped_column(
        ForeignKey("chat_conversations.id", ondelete="CASCADE")
    )
    turn: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(16))  # user | assistant
    content: Mapped[str] = mapped_column(Text, default="")
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    status: Mapped[str] = mapped_column(String(16), default="complete")  # | stopped | error
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    rating: Mapped[str | None] = mapped_column(String(8), nullable=True)  # up | down
    edited: Mapped[str | None] = mapped_column(Text, nullable=True)
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    usage: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    model: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
