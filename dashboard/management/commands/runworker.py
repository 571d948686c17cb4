"""``manage.py runworker tabwright.runs``: Channels' worker command, with this project's
worker (dashboard.worker.RunsWorker: the queue is polled beside the channel)."""

from channels.management.commands.runworker import Command as ChannelsRunworker

from dashboard.worker import RunsWorker


class Command(ChannelsRunworker):
    worker_class = RunsWorker
