from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The judge jobs and the live agreement page on annotation's home and dashboard, which cannot
        # import them.
        from judging.console_panels import register

        register()
