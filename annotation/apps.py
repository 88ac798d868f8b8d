from django.apps import AppConfig
from django.db.models.signals import post_migrate

from core.revisions import revisions_install_receiver


class AnnotationConfig(AppConfig):
    name = "annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Every table of the collection and its labels may be read by a stored report: each keeps a
        # revision (core/revisions.py) its fingerprint reads. The judges with labels and the nugget counts
        # are the labels' bookkeeping: a report that reads them declares the label tables, whose revisions
        # cover them.
        post_migrate.connect(
            revisions_install_receiver(exclude={"judgelabels", "nuggetturncount"}),
            sender=self,
            weak=False,
            dispatch_uid="annotation-revisions",
        )

        from annotation.labels.judge_labels import judge_labels_install_receiver

        # The judge menus' rows, kept by triggers on every label task's table (they read the families'
        # models, so once the apps are loaded).
        post_migrate.connect(
            judge_labels_install_receiver, sender=self, weak=False, dispatch_uid="annotation-judge-labels"
        )

        from annotation.collection.passage_count import passage_count_install_receiver

        # The collections' passage counts, kept by triggers on the passages' table (once the models load).
        post_migrate.connect(
            passage_count_install_receiver, sender=self, weak=False, dispatch_uid="annotation-passage-count"
        )

        from annotation.nuggets.counts import nugget_counts_install_receiver

        # The nugget sets' counts per turn, kept by triggers on the nuggets' and the set turns' tables.
        post_migrate.connect(
            nugget_counts_install_receiver, sender=self, weak=False, dispatch_uid="annotation-nugget-counts"
        )
