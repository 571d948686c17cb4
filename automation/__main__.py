"""``python -m automation``: one action from the command line (see :mod:`automation.cli`)."""

from __future__ import annotations

import json
import sys

from automation.loading import pause_gc, resume_gc

# Ctrl-C before the command's own handlers are in place (its modules still loading, its
# browser starting) is answered as one that comes later is: cancelled, not a traceback.
CANCELLED = {"ok": False, "error": {"code": "cancelled", "message": "interrupted before it ran"}}

try:
    pause_gc()  # while the command's modules load
    from automation.cli import main

    resume_gc()
    sys.exit(main())
except KeyboardInterrupt:
    print(json.dumps(CANCELLED))
    sys.exit(1)
