from django.apps import AppConfig
from django.db.models.signals import post_migrate

from core.revisions import revisions_install_receiver


class CrowdConfig(AppConfig):
    name = "crowd"
    label = "crowd"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # A campaign's batches, items, assignments and answers may be read by a stored report: each table
        # keeps a revision (core/revisions.py) its fingerprint reads.
        # The campaign page's kept figures are the answers' bookkeeping: a report that reads them declares
        # the counted tables, whose revisions cover them.
        post_migrate.connect(
            revisions_install_receiver(
                exclude={"campaignfigures", "batchfigures", "workerfigures", "itemvotes", "voteprofile"}
            ),
            sender=self,
            weak=False,
            dispatch_uid="crowd-revisions",
        )

        from crowd.figures.triggers import figures_install_receiver

        # The campaign page's figures, kept by triggers on the answers', assignments', items' and batches'
        # tables (they read the models, so once the apps are loaded).
        post_migrate.connect(figures_install_receiver, sender=self, weak=False, dispatch_uid="crowd-figures")

        from annotation.models import Judge
        from core.names import judge_name_reserve, judge_prefix_reserve
        from crowd.aggregation.selectors import aggregate_judge_names
        from crowd.campaigns.models import WORKER_JUDGE_PREFIX

        # A worker's judge is made on the worker's first answer; a machine or a file of that name first
        # would take it (and the worker's answers would then be refused).
        for prefix in WORKER_JUDGE_PREFIX.values():
            judge_prefix_reserve(
                prefix=f"{prefix}:", whose="one crowd worker's own votes", kind=Judge.Kind.CROWD
            )

        # A campaign's aggregate goes to its provider's crowd judge unless it names one; a machine or a file
        # of that name first would have the crowd's labels written into it.
        for name in aggregate_judge_names():
            judge_name_reserve(name=name, whose="crowd campaigns' aggregate labels", kind=Judge.Kind.CROWD)
