"""Support assignments and TREC RAG nugget work become one table of topic work.

Every SupportAssignment row is copied with its id (the support pages' URLs carry it), every NuggetWork
row with a new id after them (its `step` becomes kind `nugget-<step>`); then the two old tables go. Going
back copies the rows into the old tables again (nugget work under new ids).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

CONDITIONS = [
    ("scratch", "From scratch"),
    ("post-edit", "Post-editing"),
    ("machine", "Machine"),
    ("imported", "Imported"),
    ("blind", "Blind re-assessment"),
]


def _table(apps, name):
    return apps.get_model("annotation", name)._meta.db_table


def _restart_ids(cursor, table):
    # Rows copied with their ids leave the id sequence behind; the next row must come after them.
    cursor.execute(
        f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), COALESCE(MAX(id), 1), MAX(id) IS NOT NULL) "
        f"FROM {table}"
    )


def copy_into_topic_work(apps, schema_editor):
    work, support, nuggets = (_table(apps, n) for n in ("TopicWork", "SupportAssignment", "NuggetWork"))
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {work} (id, topic_id, user_id, kind, condition, source_judge_id, machine_judge_id, "
            "max_citations, units, created_at, started_at, completed_at, time_spent_ms) "
            f"SELECT id, topic_id, user_id, 'support', condition, NULL, machine_judge_id, max_citations, "
            f"units, created_at, NULL, NULL, 0 FROM {support} ORDER BY id"
        )
        _restart_ids(cursor, work)
        cursor.execute(
            f"INSERT INTO {work} (topic_id, user_id, kind, condition, source_judge_id, machine_judge_id, "
            "max_citations, units, created_at, started_at, completed_at, time_spent_ms) "
            f"SELECT topic_id, user_id, 'nugget-' || step, condition, source_judge_id, machine_judge_id, 1, "
            f"'[]'::jsonb, created_at, started_at, completed_at, time_spent_ms FROM {nuggets} ORDER BY id"
        )


def copy_back(apps, schema_editor):
    work, support, nuggets = (_table(apps, n) for n in ("TopicWork", "SupportAssignment", "NuggetWork"))
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {support} (id, topic_id, user_id, condition, machine_judge_id, max_citations, units, "
            f"created_at) SELECT id, topic_id, user_id, condition, machine_judge_id, max_citations, units, "
            f"created_at FROM {work} WHERE kind = 'support' ORDER BY id"
        )
        _restart_ids(cursor, support)
        cursor.execute(
            f"INSERT INTO {nuggets} (topic_id, user_id, step, condition, source_judge_id, machine_judge_id, "
            "created_at, started_at, completed_at, time_spent_ms) "
            f"SELECT topic_id, user_id, substr(kind, 8), condition, source_judge_id, machine_judge_id, "
            f"created_at, started_at, completed_at, time_spent_ms FROM {work} "
            f"WHERE kind <> 'support' ORDER BY id"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0021_run_report"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name="nuggetassignment",
            name="condition",
            field=models.CharField(choices=CONDITIONS, default="imported", max_length=12),
        ),
        migrations.AlterField(
            model_name="nuggetimportancejudgment",
            name="condition",
            field=models.CharField(choices=CONDITIONS, default="imported", max_length=12),
        ),
        migrations.CreateModel(
            name="TopicWork",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("support", "Support"),
                            ("nugget-edit", "Post-edit nuggets"),
                            ("nugget-importance", "Importance"),
                            ("nugget-assignment", "Assignment"),
                        ],
                        max_length=20,
                    ),
                ),
                ("condition", models.CharField(choices=CONDITIONS, default="scratch", max_length=12)),
                (
                    "max_citations",
                    models.PositiveSmallIntegerField(default=1, help_text="Support: citations per sentence."),
                ),
                (
                    "units",
                    models.JSONField(
                        blank=True,
                        default=list,
                        help_text="Support, blind: [sentence id, citation index] pairs.",
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("completed_at", models.DateTimeField(blank=True, null=True)),
                ("time_spent_ms", models.PositiveIntegerField(default=0)),
                (
                    "machine_judge",
                    models.ForeignKey(
                        blank=True,
                        help_text="Post-editing: the judge whose label is shown and preselected.",
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="topic_work_shown",
                        to="annotation.judge",
                    ),
                ),
                (
                    "source_judge",
                    models.ForeignKey(
                        blank=True,
                        help_text="Nugget work: the nugget set worked on.",
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="topic_work_sources",
                        to="annotation.judge",
                    ),
                ),
                (
                    "topic",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="topic_work",
                        to="annotation.topic",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="topic_work",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "topic work",
                "ordering": ["topic_id", "kind", "user_id"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("topic", "user", "kind"), name="topic_work_unique_topic_user_kind"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("condition__in", ["scratch", "post-edit", "blind"])),
                        name="topic_work_condition_of_people",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("condition", "post-edit"), _negated=True),
                            ("machine_judge__isnull", False),
                            _connector="OR",
                        ),
                        name="topic_work_post_edit_has_judge",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            ("kind", "support"), ("source_judge__isnull", False), _connector="OR"
                        ),
                        name="topic_work_nuggets_have_source",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("max_citations__gte", 1)), name="topic_work_max_citations_1"
                    ),
                ],
            },
        ),
        migrations.RunPython(copy_into_topic_work, copy_back),
        migrations.DeleteModel(name="NuggetWork"),
        migrations.DeleteModel(name="SupportAssignment"),
    ]
