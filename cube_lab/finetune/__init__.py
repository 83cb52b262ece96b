"""LLM fine-tuning (SFT, DPO; LoRA or full) with TRL and PEFT, run as training jobs.

``config`` reads fine-tune configs and LLaMA-Factory YAMLs, ``data`` the data formats,
``trainer`` is what the job runs, ``service`` launches it through the training service and
registers the result. Nothing here imports torch, transformers or TRL at import time.
"""
