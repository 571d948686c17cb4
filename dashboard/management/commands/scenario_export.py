"""Write a stored scenario as versioned JSON, or as a runnable Playwright pytest file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from automation.errors import ScenarioInvalid
from dashboard.models import Scenario
from dashboard.scenarios import selectors


class Command(BaseCommand):
    help = "Export a scenario: JSON (the versioned format scenario_import reads) or pytest."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("id", type=int, help="the scenario's id")
        parser.add_argument("--format", choices=("json", "pytest"), default="json")
        parser.add_argument("--output", "-o", default="", help="a file (default: stdout)")

    def handle(self, *args: Any, id: int, format: str, output: str, **options: Any) -> None:
        scenario = Scenario.objects.filter(pk=id).first()
        if scenario is None:
            raise CommandError(f"no scenario {id}")
        document = selectors.scenario_document(scenario=scenario)
        if format == "json":
            text = json.dumps(document.to_dict(), indent=2, ensure_ascii=False) + "\n"
        else:
            try:
                text = selectors.scenario_pytest(scenario=scenario, document=document)
            except ScenarioInvalid as exc:  # a step no safe code can be written for
                raise CommandError(f"the pytest export was refused: {exc}") from None
        if output:
            Path(output).write_text(text, encoding="utf-8")
            self.stderr.write(f"wrote scenario {id} ({len(document.steps)} steps) to {output}")
        else:
            self.stdout.write(text, ending="")
