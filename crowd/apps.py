from django.apps import AppConfig


class CrowdConfig(AppConfig):
    name = "crowd"
    label = "crowd"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The CONE-RAG files join the organiser's upload page (annotation.console), which cannot import them.
        from crowd.io.uploads import register

        register()
