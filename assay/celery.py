"""The Celery app: judge jobs go through it when CELERY_BROKER_URL is set and run eagerly otherwise."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
app = Celery("assay")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
