from django.apps import AppConfig


class DevtoolsConfig(AppConfig):
    """Loopback fakes for development and demos (never used in production)."""

    name = "devtools"
