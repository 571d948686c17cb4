"""A run's life: the runner (runner.py) and a live run on its tab (live.py), leases, the
sink, the live view, files, an MCP session's run; the run page's consumer, views and
forms; the reads and writes of runs (selectors.py, services.py).  carry.py is the one
place that knows where a run lives and carries a call there; messages.py holds every
channel-layer message; doorbell.py wakes the workers."""
