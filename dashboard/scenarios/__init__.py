"""Scenarios: their pages and forms, reads and writes, healed identities."""
