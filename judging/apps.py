from django.apps import AppConfig
from django.db.models.signals import post_migrate

from core.revisions import revisions_install_receiver


class JudgingConfig(AppConfig):
    name = "judging"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Samples and jobs may be read by a stored report: each table keeps a revision (core/revisions.py)
        # its fingerprint reads. The stored reports themselves and the LLM call cache are bookkeeping no
        # report reads.
        post_migrate.connect(
            revisions_install_receiver(exclude={"reportresult", "llmcall"}),
            sender=self,
            weak=False,
            dispatch_uid="judging-revisions",
        )
