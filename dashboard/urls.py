from __future__ import annotations

from pathlib import Path

from django.contrib import admin
from django.urls import include, path
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe
from django.views.static import serve

from dashboard.accounts import views as account_views
from dashboard.api.app import api
from dashboard.jobs import batch_views, schedule_views
from dashboard.runs import files as runfiles
from dashboard.runs import views as run_views
from dashboard.scenarios import callviews as call_views
from dashboard.scenarios import handler_views
from dashboard.scenarios import views as scenario_views

STATIC_DIR = Path(__file__).resolve().parent / "static" / "dashboard"
# Asked for by browsers on every page, the admin's included, whatever the page links.
favicon = require_safe(cache_control(max_age=86400, public=True)(serve))

urlpatterns = [
    path("", run_views.run_list, name="run_list"),
    path(
        "favicon.ico", favicon, {"path": "favicon.ico", "document_root": STATIC_DIR}, name="favicon"
    ),
    path("runs/new", run_views.run_new, name="run_new"),
    path("runs/<int:run_id>/", run_views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/act", run_views.run_act, name="run_act"),
    path("runs/<int:run_id>/signin", run_views.run_save_signin, name="run_save_signin"),
    path("runs/<int:run_id>/output.json", run_views.run_output, name="run_output"),
    path(
        "runs/<int:run_id>/downloads/<str:name>",
        run_views.run_file,
        {"kind": runfiles.DOWNLOADS},
        name="run_download",
    ),
    path(
        "runs/<int:run_id>/trace.zip",
        run_views.run_file,
        {"kind": runfiles.TRACE},
        name="run_trace",
    ),
    path(
        "runs/<int:run_id>/screenshots/<int:index>.jpg",
        run_views.run_screenshot,
        name="run_screenshot",
    ),
    path("runs/<int:run_id>/save", scenario_views.run_save_scenario, name="run_save_scenario"),
    path("scenarios/", scenario_views.scenario_list, name="scenario_list"),
    path("scenarios/import", scenario_views.scenario_import, name="scenario_import"),
    path("scenarios/<int:scenario_id>/", scenario_views.scenario_detail, name="scenario_detail"),
    path(
        "scenarios/<int:scenario_id>/export.<str:format>",
        scenario_views.scenario_export,
        name="scenario_export",
    ),
    path(
        "scenarios/<int:scenario_id>/replay", scenario_views.scenario_replay, name="scenario_replay"
    ),
    path(
        "scenarios/<int:scenario_id>/steps/<int:index>/param",
        scenario_views.scenario_step_param,
        name="scenario_step_param",
    ),
    path("scenarios/<int:scenario_id>/edit", scenario_views.scenario_edit, name="scenario_edit"),
    path("scenarios/<int:scenario_id>/login", call_views.scenario_login, name="scenario_login"),
    path(
        "scenarios/<int:scenario_id>/calls", call_views.scenario_call_new, name="scenario_call_new"
    ),
    path("scenarios/<int:scenario_id>/delete", call_views.scenario_delete, name="scenario_delete"),
    path(
        "scenarios/<int:scenario_id>/handlers",
        handler_views.scenario_handler_save,
        name="scenario_handler_save",
    ),
    path(
        "scenarios/<int:scenario_id>/handlers/remove",
        handler_views.scenario_handler_remove,
        name="scenario_handler_remove",
    ),
    path("runs/<int:run_id>/handlers", handler_views.run_handler_learn, name="run_handler_learn"),
    path(
        "scenarios/<int:scenario_id>/checks",
        scenario_views.scenario_check_add,
        name="scenario_check_add",
    ),
    path(
        "scenarios/<int:scenario_id>/steps/<int:index>/values",
        scenario_views.scenario_step_values,
        name="scenario_step_values",
    ),
    path(
        "scenarios/<int:scenario_id>/steps/<int:index>/move",
        scenario_views.scenario_step_move,
        name="scenario_step_move",
    ),
    path(
        "scenarios/<int:scenario_id>/steps/<int:index>/delete",
        scenario_views.scenario_step_delete,
        name="scenario_step_delete",
    ),
    path(
        "scenarios/<int:scenario_id>/params/<str:name>/default",
        scenario_views.scenario_param_default,
        name="scenario_param_default",
    ),
    path("scenarios/<int:scenario_id>/batches", batch_views.batch_new, name="batch_new"),
    path("batches/<int:batch_id>/", batch_views.batch_detail, name="batch_detail"),
    path("batches/<int:batch_id>/state.json", batch_views.batch_state_json, name="batch_state"),
    path("batches/<int:batch_id>/stop", batch_views.batch_stop, name="batch_stop"),
    path("batches/<int:batch_id>/retry", batch_views.batch_retry, name="batch_retry"),
    path("batches/<int:batch_id>/results.csv", batch_views.batch_results, name="batch_results"),
    path("scenarios/<int:scenario_id>/schedules", schedule_views.schedule_new, name="schedule_new"),
    path(
        "schedules/<int:schedule_id>/toggle", schedule_views.schedule_toggle, name="schedule_toggle"
    ),
    path(
        "schedules/<int:schedule_id>/run-now",
        schedule_views.schedule_run_now,
        name="schedule_run_now",
    ),
    path(
        "schedules/<int:schedule_id>/fired.json",
        schedule_views.schedule_fired_json,
        name="schedule_fired",
    ),
    path(
        "schedules/<int:schedule_id>/delete", schedule_views.schedule_delete, name="schedule_delete"
    ),
    path("heals/<int:heal_id>/decide", scenario_views.heal_decide, name="heal_decide"),
    path("account/tokens", account_views.api_tokens, name="api_tokens"),
    path(
        "account/tokens/<int:token_id>/revoke",
        account_views.api_token_revoke,
        name="api_token_revoke",
    ),
    path("api/", api.urls),
    path("metrics", run_views.metrics, name="metrics"),
    path("demo/", run_views.demo, {"path": ""}, name="demo_index"),
    path("demo/<path:path>", run_views.demo, name="demo"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
]
