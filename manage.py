#!/usr/bin/env python
from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    from automation.loading import pause_gc

    pause_gc()  # while Django sets up: resumed once the apps are ready (dashboard.apps)
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
