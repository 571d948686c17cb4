"""``python -m automation``: one action from the command line (see :mod:`automation.cli`)."""

from __future__ import annotations

import sys

from automation.cli import main

sys.exit(main())
