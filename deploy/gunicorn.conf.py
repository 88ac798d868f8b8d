"""gunicorn settings for Assay (deploy/Procfile, the systemd unit, make serve); flags override them.

Threads wait on the database while PostgreSQL uses the cores, so one worker per core with a few threads
each: four, which served the assessors' requests as fast as eight or faster, on less PostgreSQL CPU (fewer
threads contending for the interpreter, fewer backends for the cores); as many connections per worker as
threads; no keep-alive, so any idle worker takes the next request (docs/performance.md and
docs/operations, Scaling out, say what each measured). Logs are JSON lines like the app's.
"""

import multiprocessing
import os

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", min(4, multiprocessing.cpu_count())))
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", 4))
worker_connections = threads
keepalive = 0
timeout = int(os.environ.get("GUNICORN_TIMEOUT", 60))
graceful_timeout = 30
accesslog = "-"
errorlog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms'
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "assay.logs.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
    "loggers": {
        "gunicorn.error": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "gunicorn.access": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}
