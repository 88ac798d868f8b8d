from django.apps import AppConfig


class MturkConfig(AppConfig):
    name = "mturk"
    default_auto_field = "django.db.models.BigAutoField"
