"""``python -m automation``: one action from the command line (see :mod:`automation.cli`)."""

from __future__ import annotations

import sys

from automation.loading import pause_gc, resume_gc

pause_gc()  # while the command's modules load
from automation.cli import main  # noqa: E402

resume_gc()
sys.exit(main())
