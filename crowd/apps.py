from django.apps import AppConfig


class CrowdConfig(AppConfig):
    name = "crowd"
    label = "crowd"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.models import Judge
        from core.names import judge_prefix_reserve
        from crowd import console_panels
        from crowd.io import uploads
        from crowd.services.answers import WORKER_JUDGE_PREFIX

        # A worker's judge is made on the worker's first answer; a machine or a file of that name first
        # would take it (and the worker's answers would then be refused).
        for prefix in WORKER_JUDGE_PREFIX.values():
            judge_prefix_reserve(
                prefix=f"{prefix}:", whose="one crowd worker's own votes", kind=Judge.Kind.CROWD
            )

        # The CONE-RAG files join the organiser's upload page (annotation.console), which cannot import them.
        uploads.register()
        # Its campaigns and its kind of work on annotation's home page, which cannot import them either.
        console_panels.register()
