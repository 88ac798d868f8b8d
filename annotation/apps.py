from django.apps import AppConfig
from django.db.models.signals import post_migrate

from core.revisions import revisions_install_receiver


class AnnotationConfig(AppConfig):
    name = "annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Every table of the collection and its labels may be read by a stored report: each keeps a
        # revision (core/revisions.py) its fingerprint reads.
        post_migrate.connect(
            revisions_install_receiver(), sender=self, weak=False, dispatch_uid="annotation-revisions"
        )
