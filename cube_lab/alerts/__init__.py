"""Alerts: notification channels (this part), rules and their store come next (issue 23)."""
