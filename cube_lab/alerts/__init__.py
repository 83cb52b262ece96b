"""Alerts (issue 23): channels.py (how one message reaches a webhook, chat bot or mailbox),
events.py (what is published when a job, run or experiment ends), engine.py (matching events
to a project's rules and delivering them in the background), rules.py (the rules service)."""
