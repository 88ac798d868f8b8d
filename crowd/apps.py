from django.apps import AppConfig


class CrowdConfig(AppConfig):
    # The tables were made under the label "mturk" when MTurk was the only provider; the label stays so
    # that no table is renamed.
    name = "crowd"
    label = "mturk"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The CONE-RAG files join the organiser's upload page (annotation.console), which cannot import them.
        from crowd.io.uploads import register

        register()
