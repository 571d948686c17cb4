from __future__ import annotations

from django.urls import path

from dashboard.runs.consumers import RunPageConsumer

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunPageConsumer.as_asgi()),
]
