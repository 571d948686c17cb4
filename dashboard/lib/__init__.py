"""Leaf helpers: they import nothing of dashboard."""
