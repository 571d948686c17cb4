from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from dashboard import views

urlpatterns = [
    path("", views.run_list, name="run_list"),
    path("runs/new", views.run_new, name="run_new"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/act", views.run_act, name="run_act"),
    path(
        "runs/<int:run_id>/screenshots/<int:index>.jpg",
        views.run_screenshot,
        name="run_screenshot",
    ),
    path("metrics", views.metrics, name="metrics"),
    path("demo/", views.demo, {"path": ""}, name="demo_index"),
    path("demo/<path:path>", views.demo, name="demo"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
]
