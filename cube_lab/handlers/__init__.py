"""The route table. Every capability adds its module's routes here."""

from __future__ import annotations

from typing import Any

from . import (
    alerts,
    chat,
    finetune,
    kb,
    kserve,
    labeling,
    metrics,
    models,
    openapi,
    pipelines,
    projects,
    serving,
    training,
    tuning,
)

API = "/cube/api/v1"
_SEG = r"([^/]+)"
_MODEL = rf"/projects/{_SEG}/models/{_SEG}"
_RUN = rf"/pipelines/runs/{_SEG}"
_JOB = rf"/training/jobs/{_SEG}"
_DEP = rf"/projects/{_SEG}/deployments/{_SEG}"
_EXP = rf"/tuning/experiments/{_SEG}"
_DATASET = rf"/projects/{_SEG}/datasets/{_SEG}"
_LABELING = rf"/projects/{_SEG}/labeling/{_SEG}"
_KB = rf"/kb/{_SEG}/{_SEG}"
_ALERT = rf"/projects/{_SEG}/alert-rules/{_SEG}"
_CHAT = rf"/chat/conversations/{_SEG}"


def routes() -> list[tuple[str, type[Any]]]:
    """(pattern, handler) pairs relative to the server's base URL."""
    table = [
        ("/openapi.json", openapi.OpenAPIHandler),
        ("/whoami", projects.WhoAmIHandler),
        ("/metrics", metrics.PrometheusHandler),
        ("/resources", metrics.ResourcesNowHandler),
        ("/projects", projects.ProjectsHandler),
        (rf"/projects/{_SEG}", projects.ProjectHandler),
        (rf"/projects/{_SEG}/members/{_SEG}", projects.ProjectMemberHandler),
        ("/invitations", projects.InvitationsHandler),
        (rf"/invitations/{_SEG}/accept", projects.InvitationAcceptHandler),
        (rf"/invitations/{_SEG}/decline", projects.InvitationDeclineHandler),
        ("/models", models.ModelsHandler),
        (_MODEL, models.ModelHandler),
        (rf"{_MODEL}/versions", models.VersionsHandler),
        (rf"{_MODEL}/versions/{_SEG}", models.VersionHandler),
        (rf"{_MODEL}/versions/{_SEG}/download", models.DownloadHandler),
        (rf"{_MODEL}/compare", models.CompareHandler),
        (rf"{_MODEL}/aliases/{_SEG}", models.AliasHandler),
        ("/pipelines/validate", pipelines.ValidateHandler),
        ("/pipelines/compile", pipelines.CompileHandler),
        ("/pipelines/templates", pipelines.TemplatesHandler),
        ("/pipelines/node-kinds", pipelines.NodeKindsHandler),
        ("/pipelines/schedules", pipelines.SchedulesHandler),
        (rf"/pipelines/schedules/{_SEG}", pipelines.ScheduleHandler),
        ("/pipelines/runs", pipelines.RunsHandler),
        (rf"{_RUN}", pipelines.RunHandler),
        (rf"{_RUN}/cancel", pipelines.CancelHandler),
        (rf"{_RUN}/resources", metrics.RunResourcesHandler),
        (rf"{_RUN}/nodes/{_SEG}/log", pipelines.LogHandler),
        (rf"{_RUN}/nodes/{_SEG}/results", pipelines.ResultsHandler),
        (rf"{_RUN}/nodes/{_SEG}/results/(.+)", pipelines.ResultFileHandler),
        ("/training/jobs", training.JobsHandler),
        (_JOB, training.JobHandler),
        (rf"{_JOB}/stop", training.StopHandler),
        (rf"{_JOB}/rerun", training.RerunHandler),
        (rf"{_JOB}/log", training.LogHandler),
        (rf"{_JOB}/metrics", training.MetricsHandler),
        (rf"{_JOB}/resources", metrics.JobResourcesHandler),
        (rf"{_JOB}/register", training.RegisterHandler),
        ("/finetune/jobs", finetune.FinetuneJobsHandler),
        ("/finetune/estimate", finetune.EstimateHandler),
        ("/finetune/preview", finetune.PreviewHandler),
        ("/finetune/merge", finetune.MergeHandler),
        ("/finetune/evaluations", finetune.EvaluationsHandler),
        (rf"/finetune/evaluations/{_SEG}", finetune.EvaluationHandler),
        ("/deployments", serving.DeploymentsHandler),
        (_DEP, serving.DeploymentHandler),
        (rf"{_DEP}/traffic", serving.TrafficHandler),
        (rf"{_DEP}/log", serving.DeploymentLogHandler),
        (rf"{_DEP}/metrics", serving.DeploymentMetricsHandler),
        (rf"{_DEP}/shadow", serving.ShadowHandler),
        (rf"{_DEP}/samples", serving.SamplesHandler),
        (rf"{_DEP}/infer", serving.InferHandler),
        (rf"{_DEP}/access", serving.AccessHandler),
        (rf"{_DEP}/keys", serving.KeysHandler),
        (rf"{_DEP}/keys/{_SEG}", serving.KeyHandler),
        (rf"/projects/{_SEG}/alert-rules", alerts.AlertRulesHandler),
        (_ALERT, alerts.AlertRuleHandler),
        (rf"{_ALERT}/test", alerts.AlertRuleTestHandler),
        (rf"{_ALERT}/deliveries", alerts.AlertDeliveriesHandler),
        ("/kserve/inferenceservices", kserve.InferenceServicesHandler),
        (rf"/kserve/inferenceservices/{_SEG}", kserve.InferenceServiceHandler),
        (rf"/kserve/inferenceservices/{_SEG}/traffic", kserve.InferenceServiceTrafficHandler),
        ("/tuning/algorithms", tuning.AlgorithmsHandler),
        ("/tuning/experiments", tuning.ExperimentsHandler),
        (_EXP, tuning.ExperimentHandler),
        (rf"{_EXP}/stop", tuning.StopHandler),
        (rf"{_EXP}/resume", tuning.ResumeHandler),
        (rf"{_EXP}/register", tuning.RegisterHandler),
        (rf"{_EXP}/trials/{_SEG}/log", tuning.TrialLogHandler),
        (rf"{_EXP}/resources", metrics.ExperimentResourcesHandler),
        ("/datasets", labeling.DatasetsHandler),
        (_DATASET, labeling.DatasetHandler),
        (rf"{_DATASET}/items", labeling.DatasetItemsHandler),
        (rf"{_DATASET}/items/{_SEG}/content", labeling.ItemContentHandler),
        (rf"{_DATASET}/versions/{_SEG}/download", labeling.VersionDownloadHandler),
        ("/labeling", labeling.LabelingProjectsHandler),
        (_LABELING, labeling.LabelingProjectHandler),
        (rf"{_LABELING}/assign", labeling.AssignHandler),
        (rf"{_LABELING}/next", labeling.NextHandler),
        (rf"{_LABELING}/tasks", labeling.TasksHandler),
        (rf"{_LABELING}/tasks/{_SEG}", labeling.TaskHandler),
        (rf"{_LABELING}/tasks/{_SEG}/review", labeling.ReviewHandler),
        (rf"{_LABELING}/prelabel", labeling.PrelabelHandler),
        (rf"{_LABELING}/export", labeling.ExportHandler),
        (rf"{_LABELING}/import", labeling.ImportHandler),
        ("/kb", kb.KnowledgeBasesHandler),
        (_KB, kb.KnowledgeBaseOneHandler),
        (rf"{_KB}/sources", kb.SourcesHandler),
        (rf"{_KB}/ingests", kb.IngestsHandler),
        (rf"{_KB}/ingests/{_SEG}", kb.IngestHandler),
        (rf"{_KB}/search", kb.SearchHandler),
        (rf"{_KB}/evaluate", kb.EvaluateHandler),
        (rf"{_KB}/chat", kb.ChatHandler),
        (rf"{_KB}/preview", kb.PreviewHandler),
        (rf"{_KB}/sync", kb.SyncHandler),
        ("/chat/targets", chat.ChatTargetsHandler),
        ("/chat/conversations", chat.ConversationsHandler),
        (_CHAT, chat.ConversationHandler),
        (rf"{_CHAT}/messages", chat.MessagesHandler),
        (rf"{_CHAT}/messages/{_SEG}/feedback", chat.FeedbackHandler),
        (rf"{_CHAT}/messages/{_SEG}/activate", chat.ActivateHandler),
        ("/chat/exports", chat.ExportsHandler),
    ]
    return [(API + pattern, handler) for pattern, handler in table]
