"""A run's life: the runner and its live runs, leases, the sink, the live view, files, the
run page's consumer, views and forms, and the reads and writes of runs."""
