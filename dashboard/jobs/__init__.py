"""Batches, batch files, schedules and alerts, and their pages."""
