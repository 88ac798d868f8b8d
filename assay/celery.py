"""The Celery app: judge jobs go through it when CELERY_BROKER_URL is set (run eagerly otherwise), and
beat runs the periodic upkeep below."""

import os

from celery import Celery
from celery.schedules import crontab

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
app = Celery("assay")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.conf.beat_schedule = {
    "sessions-clear": {"task": "assay.sessions_clear", "schedule": crontab(hour=4, minute=17)},
}


@app.task(name="assay.sessions_clear")
def sessions_clear() -> None:
    """Delete expired sessions: Django leaves them in the table until told (`clearsessions`)."""
    from django.core.management import call_command

    call_command("clearsessions")
