from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # nuggetizer's files on the organiser's upload page, registered as the other apps register theirs.
        from annotation.rag_nuggets import uploads

        uploads.register()
