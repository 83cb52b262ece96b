"""Pipelines: Elyra-compatible files, validation, the local parallel runner, KFP, schedules."""
