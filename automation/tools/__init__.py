"""The agent's tools that are not the browser: files in the run's workspace (files.py) and
the operator's allow-listed programs (shell.py, supervised by subreaper.py)."""
