from __future__ import annotations

from django.urls import path

from dashboard.runs.consumers import RunConsumer

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),
]
