"""Assay settings: one module, everything that differs between machines read from the environment."""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.checks.security.base import (
    SECRET_KEY_INSECURE_PREFIX,
    SECRET_KEY_MIN_LENGTH,
    SECRET_KEY_MIN_UNIQUE_CHARACTERS,
)
from django.core.exceptions import ImproperlyConfigured

from assay import embedded_db
from assay.cache import redis_cache_settings
from assay.env import env_bool, env_float, env_int, env_list, env_networks, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)
# A throwaway key for development only (`make run` sets DEBUG=1; the tests set their own key). Anyone can
# read it here, so anything signed with it (sessions, crowd links) could be forged: with DEBUG off the
# server refuses to start on it or on no key at all, rather than only warning in `check --deploy`.
DEVELOPMENT_SECRET_KEY = "django-insecure-assay-development-key-" + "x" * 30
KEY_ADVICE = (
    "set it to a long random value (python -c 'from django.core.management.utils import "
    "get_random_secret_key; print(get_random_secret_key())')"
)


def _weak_key(key: str) -> bool:
    """Django's own test of a key (check --deploy's W009): too short, too few distinct characters, or
    made by startproject. Applied at start-up, where a warning in a check nobody runs protects nothing."""
    return (
        len(key) < SECRET_KEY_MIN_LENGTH
        or len(set(key)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS
        or key.startswith(SECRET_KEY_INSECURE_PREFIX)
    )


SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY or SECRET_KEY == DEVELOPMENT_SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set (or is the public development key) and DEBUG is off: "
            f"{KEY_ADVICE}, or DEBUG=1 on a development machine"
        )
    SECRET_KEY = DEVELOPMENT_SECRET_KEY
elif not DEBUG and _weak_key(SECRET_KEY):
    raise ImproperlyConfigured(
        f"SECRET_KEY is weak (under {SECRET_KEY_MIN_LENGTH} characters, under "
        f"{SECRET_KEY_MIN_UNIQUE_CHARACTERS} distinct ones, or made by startproject) and DEBUG is off: {KEY_ADVICE}"
    )
# Old keys still accepted for signatures while sessions and links made with them run out (key rotation).
# The public development key is never one of them: anything signed with it could be forged.
SECRET_KEY_FALLBACKS = env_list("SECRET_KEY_FALLBACKS", [])
if DEVELOPMENT_SECRET_KEY in SECRET_KEY_FALLBACKS:
    raise ImproperlyConfigured("SECRET_KEY_FALLBACKS holds the public development key: remove it")
if not DEBUG and any(_weak_key(key) for key in SECRET_KEY_FALLBACKS):
    raise ImproperlyConfigured(f"SECRET_KEY_FALLBACKS holds a weak key and DEBUG is off: {KEY_ADVICE}")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # DRF itself is no app here: installed, it brings the browsable API's templates and template tags, and
    # Django imports every installed app's template tags whenever it makes its template engine, which every
    # command's system checks do; DRF's import its serializers, YAML, requests, markdown and pygments, a
    # tenth of a second. The API answers JSON (REST_FRAMEWORK below); /api/docs/ is its page to browse.
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "django_tasks",
    "django_tasks_db",
    # The project package itself: its management commands (task_worker).
    "assay",
    "axes",
    "annotation",
    "judging",
    "crowd",
    "console",
    "devtools",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files from the process itself (compressed, cached), so DEBUG off needs no separate server.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # django-csp's, skipping the policies' build for a response exempt from them (the assessor JSON).
    "assay.middleware.ContentSecurityPolicyMiddleware",
    # Outside everything that reads the database: a database that is down answers 503, not 500.
    "assay.middleware.DatabaseUnavailableMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Turns a log-in that axes refused into the lockout answer (core.login_limits.lockout_response).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "assay.urls"
WSGI_APPLICATION = "assay.wsgi.application"
ASGI_APPLICATION = "assay.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Django's form renderer, with the select, checkbox and radio lists drawn in Python (core/form_renderer.py):
# their templates, rendered once per option, took most of a page whose menus list a large campaign's judges.
FORM_RENDERER = "core.form_renderer.FormRenderer"

# PostgreSQL is the one database. Without DATABASE_URL, the project's embedded cluster (assay/embedded_db.py,
# which manage.py and `make run` start when it is not running).
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL") or embedded_db.url(),
        conn_max_age=env_int("DB_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured(
        f"DATABASE_URL must name a PostgreSQL database (postgres://…), not {DATABASES['default']['ENGINE']}"
    )
# Lets parallel test runs on one PostgreSQL server keep apart (pytest-django adds its own suffix too).
if env_str("TEST_DATABASE_NAME"):
    DATABASES["default"]["TEST"] = {"NAME": env_str("TEST_DATABASE_NAME")}
options = DATABASES["default"].setdefault("OPTIONS", {})
# Server-side binding lets psycopg prepare a query once it has run `prepare_threshold` times on a
# connection; the assessor loop's few queries then skip PostgreSQL's parse and plan on every request.
# DB_PREPARE_THRESHOLD=0 goes back to Django's default (client-side binding, nothing prepared), as a
# pooler in transaction mode (PgBouncer) in front needs.
threshold = env_int("DB_PREPARE_THRESHOLD", 5)
if threshold > 0:
    options["server_side_binding"] = True
    options["prepare_threshold"] = threshold
# Django's own pool (psycopg_pool): connections, and their prepared statements, outlive a request
# without one connection per thread. It replaces persistent connections (DB_CONN_MAX_AGE).
if env_bool("DB_POOL", True):
    options["pool"] = {
        "min_size": env_int("DB_POOL_MIN_SIZE", 2),
        "max_size": env_int("DB_POOL_MAX_SIZE", 8),
        "timeout": env_float("DB_POOL_TIMEOUT", 10.0),
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / env_str("STATIC_ROOT", "staticfiles")
# WhiteNoise serves STATIC_ROOT (after collectstatic). STATIC_MANIFEST=1 (make serve) adds hashed names,
# cached for a year; it needs collectstatic first, which the tests and `make run` do not run. It also serves
# the files where they lie (Django's finders) in every mode, so that a server started without DEBUG and
# without collectstatic still has its CSS and JavaScript.
WHITENOISE_USE_FINDERS = True
# Where uploads wait for the task worker that imports them (console.uploads): storage every web node and
# every worker machine reaches (a network file system) when there are several; the system's temporary
# directory when unset.
MEDIA_ROOT = env_str("MEDIA_ROOT", "")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if env_bool("STATIC_MANIFEST", False)
        else "whitenoise.storage.CompressedStaticFilesStorage"
    },
}

# Shared by every process of a deployment when CACHE_URL names a Redis database (login and API throttles
# count across gunicorn workers); one process's memory otherwise. While Redis is down the site keeps
# answering: the cache misses, and the API throttles count in each process (assay/cache.py).
CACHES = {
    "default": redis_cache_settings(env_str("CACHE_URL"), timeout_s=env_float("CACHE_TIMEOUT", 0.5))
    if env_str("CACHE_URL")
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}
# With a shared cache, a signed-in request reads its session from the cache instead of the database (one
# query less on every assessor request), and the database stays the record. Not with one process's
# memory: a sign-out in one worker would not reach the copy cached in another.
if env_str("CACHE_URL"):
    SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
# Failed log-ins allowed per user name, and per client address, in LOGIN_FAILURE_WINDOW seconds, counted
# by django-axes over every way in (log-in pages, admin, API token, invitation links): core/login_limits.py.
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
LOGIN_FAILURE_LIMIT_PER_ADDRESS = env_int("LOGIN_FAILURE_LIMIT_PER_ADDRESS", 50)
LOGIN_FAILURE_WINDOW = env_int("LOGIN_FAILURE_WINDOW", 900)
if not 0 < LOGIN_FAILURE_LIMIT <= LOGIN_FAILURE_LIMIT_PER_ADDRESS:
    raise ImproperlyConfigured(
        "LOGIN_FAILURE_LIMIT must be at least 1 and at most LOGIN_FAILURE_LIMIT_PER_ADDRESS"
    )
# The proxies whose X-Forwarded-For is believed (addresses or networks, comma-separated); none by default,
# since anyone can send the header. `make serve` sets 127.0.0.1 and ::1 for its proxy on the same machine.
TRUSTED_PROXIES = env_networks("TRUSTED_PROXIES")
# The first backend refuses a locked name or address before the password is even checked.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_HANDLER = "core.login_limits.LoginLimitHandler"
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_FAILURE_LIMIT = "core.login_limits.name_limit"
AXES_COOLOFF_TIME = "core.login_limits.window"
AXES_USERNAME_CALLABLE = "core.login_limits.login_name"
AXES_CLIENT_IP_CALLABLE = "core.client_address.client_address"
AXES_LOCKOUT_CALLABLE = "core.login_limits.lockout_response"
# Tries made while locked are not counted: the lock ends when the page says, however often one retries.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# Successful log-ins are not logged a second time (Django keeps last_login): no table that grows forever.
AXES_DISABLE_ACCESS_LOG = True

# Security: production (DEBUG off) gets the deploy-check settings unless told it runs behind plain HTTP.
_SECURE = not DEBUG and env_bool("SECURE_COOKIES", True)
SESSION_COOKIE_SECURE = _SECURE
CSRF_COOKIE_SECURE = _SECURE
SECURE_SSL_REDIRECT = not DEBUG and env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_PROXY", False) else None
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Probes reach these over plain HTTP from the machine itself, without the TLS proxy.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
# Scripts and styles only from our own static files: an injected <script>, on* attribute, <style> block or
# style= attribute does nothing (styles set from our scripts through element.style still apply). Frames are
# left to X-Frame-Options, since the crowd HIT page is framed by MTurk.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
    }
}

REST_FRAMEWORK = {
    # JSON only: the browsable API's renderer needs DRF installed as an app (INSTALLED_APPS above).
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "core.pagination.CappedLimitOffsetPagination",
    "PAGE_SIZE": env_int("API_PAGE_SIZE", 100),
    "DEFAULT_SCHEMA_CLASS": "core.api_schema.RefusalsAutoSchema",
    # One error shape for every endpoint: {"detail", "code", "fields"?} (core/api_errors.py).
    "EXCEPTION_HANDLER": "core.api_errors.exception_handler",
    # Per client: a runaway script (or a guessed password tried over the API) is slowed, assessors are not.
    # Counted atomically per fixed window of the rate's period, so parallel clients cannot slip past.
    "DEFAULT_THROTTLE_CLASSES": [
        "core.throttling.AnonFixedWindowThrottle",
        "core.throttling.UserFixedWindowThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_str("API_ANON_RATE", "60/minute"),
        "user": env_str("API_USER_RATE", "3000/minute"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Assay API",
    "DESCRIPTION": "Test collections, runs and judgments for search and RAG evaluation.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and its docs list every endpoint and field: for signed-in users only, like the API.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI served from our own static files: no CDN, so the docs work offline too.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Background work (judge jobs, large uploads) goes through Django's tasks API onto a queue kept in the
# database itself: the job's row and its task commit together, and the queue needs no other service.
# `manage.py task_worker` runs one worker, kept running by a process manager (`make run` starts one,
# `make serve` TASK_WORKERS of them, systemd's deploy/systemd/assay-worker@.service one per instance).
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
# A running job whose row has not moved for this long (its runner saves about every second) is shown as
# interrupted: its worker hangs, or its machine was lost without PostgreSQL noticing yet. A worker that
# dies shows its job interrupted at once (its lock is gone: core/background.py).
JOB_STALE_AFTER_S = env_int("JOB_STALE_AFTER_S", 120)

# LLM judges: any OpenAI-compatible endpoint, or Azure OpenAI.
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL")
OPENAI_API_KEY = env_str("OPENAI_API_KEY")
OPENAI_MODEL = env_str("OPENAI_MODEL", "gpt-4o")
AZURE_OPENAI_ENDPOINT = env_str("AZURE_OPENAI_ENDPOINT")
AZURE_OPENAI_API_VERSION = env_str("AZURE_OPENAI_API_VERSION", "2024-10-21")
LLM_CONCURRENCY = env_int("LLM_CONCURRENCY", 8)
LLM_TIMEOUT = env_float("LLM_TIMEOUT", 60.0)
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 5)
LLM_BACKOFF_BASE = env_float("LLM_BACKOFF_BASE", 0.5)  # seconds before the first retry, doubling after
# US dollars per million tokens (input, output).
LLM_PRICES = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
}

# Imports read at most this many bytes of a file (a device or an endless pipe ends in an error).
IMPORT_MAX_BYTES = env_int("IMPORT_MAX_BYTES", 2 * 1024**3)

# An upload's import not heard from for this many seconds (its process died: a server restart) shows as
# interrupted; it beats every few seconds while it runs.
IMPORT_STALE_AFTER_S = env_float("IMPORT_STALE_AFTER_S", 120.0)
# Console uploads up to this many bytes import before the page answers; larger ones in the background.
CONSOLE_INLINE_IMPORT_BYTES = env_int("CONSOLE_INLINE_IMPORT_BYTES", 256 * 1024)

# Gold nugget pages offer passages graded at least this by the chosen relevance judge.
NUGGET_MIN_GRADE = env_int("NUGGET_MIN_GRADE", 1)

# Support assessment judges up to this many citations of each answer sentence (the study used the first).
SUPPORT_MAX_CITATIONS = env_int("SUPPORT_MAX_CITATIONS", 1)

# NLI judges: a model directory or hub id.
NLI_MODEL = env_str("NLI_MODEL", "MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli")
NLI_THRESHOLD = env_float("NLI_THRESHOLD", 0.5)
NLI_BATCH_SIZE = env_int("NLI_BATCH_SIZE", 32)

# Crowd work on MTurk: the sandbox unless MTURK_LIVE is set; MTURK_ENDPOINT_URL points at the local fake.
MTURK_ENDPOINT_URL = env_str("MTURK_ENDPOINT_URL")
MTURK_LIVE = env_bool("MTURK_LIVE", False)
MTURK_REGION = env_str("MTURK_REGION", "us-east-1")
# The address people reach this site at. Unset, pages use the address they were asked at (a guessed
# default would point at whatever else listens there); commands, having no request, take --base-url.
ASSAY_BASE_URL = env_str("ASSAY_BASE_URL")
# The public root MTurk frames HIT pages from: HTTPS for MTurk itself; the local fake takes any. Unset, the
# campaign page publishes with the address it was asked at.
MTURK_EXTERNAL_URL = env_str("MTURK_EXTERNAL_URL", ASSAY_BASE_URL)
# The loopback fakes `make run` started and pointed this site at ("llm", "mturk"): the pages that use them
# say so, since a fake's answers mean nothing.
LOCAL_FAKES = env_list("LOCAL_FAKES", [])
# Anonymous crowd links (crowd_links) are taken for this many seconds after they are printed.
CROWD_LINK_MAX_AGE = env_int("CROWD_LINK_MAX_AGE", 14 * 24 * 3600)
# Nugget-support aggregation models (crowd-kit): their EM iterations, MACE's random restarts (it keeps the
# best) and GLAD's optimiser steps per M-step. crowd-kit's defaults but for MACE's restarts and GLAD's
# iterations. Each MACE restart is a whole fit, and ten took about 6 s of a thousand answers, where three
# gave the very same labels on the synthetic crowds of bench/bench_crowd_fit.py in a third of the time.
# GLAD is capped at 10 EM iterations of 5 optimiser steps: on 10,000 answers (2,000 questions x 5)
# crowd-kit's 100 x 25 did not end in four minutes (its stopping rule rarely fires there), where 10 x 5
# took 5.4 CPU seconds and scored 0.77 against the crowd's truth. Each costs time, so tests lower them.
CROWD_DS_ITERATIONS = env_int("CROWD_DS_ITERATIONS", 100)
CROWD_MACE_RESTARTS = env_int("CROWD_MACE_RESTARTS", 3)
CROWD_MACE_ITERATIONS = env_int("CROWD_MACE_ITERATIONS", 50)
CROWD_GLAD_ITERATIONS = env_int("CROWD_GLAD_ITERATIONS", 10)
CROWD_GLAD_M_STEP_ITERATIONS = env_int("CROWD_GLAD_M_STEP_ITERATIONS", 5)

# One JSON object per line (LOG_FORMAT=json, the default with DEBUG off) for a log collector; text otherwise.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {"()": "assay.logs.JsonFormatter"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": env_str("LOG_FORMAT", "text" if DEBUG else "json"),
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
}
