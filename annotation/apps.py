from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # nuggetizer's files on the organiser's upload page, registered as the other apps register theirs
        # (their importers live beside the page's, whose feature packages rag_nuggets may not import).
        from annotation.console import nuggetizer

        nuggetizer.register()
