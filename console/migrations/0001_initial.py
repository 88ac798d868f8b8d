# ImportJob, moved here from annotation with its rows: the model enters the console's state on the table
# annotation made (annotation's 0020 took it out of annotation's state, touching no table), and the
# table is then renamed to the console's own name.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("annotation", "0020_move_importjob_to_console"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ImportJob",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "task_id",
                            models.CharField(
                                blank=True,
                                help_text="The background task last queued to run the job (empty: none).",
                                max_length=64,
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("started_at", models.DateTimeField(blank=True, null=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "kind",
                            models.CharField(
                                choices=[
                                    ("topics", "Topics (iKAT JSON or TREC id<TAB>query)"),
                                    ("passages", "Passages (JSONL)"),
                                    ("run", "Run (TREC run, iKAT JSON run, TREC RAG answers JSONL)"),
                                    ("qrels", "Relevance qrels (TREC)"),
                                    ("ptkb-qrels", "PTKB qrels"),
                                    ("nuggets", "Gold nuggets (JSONL or CONE-RAG JSON)"),
                                    ("gold-responses", "Gold responses (JSONL or CONE-RAG JSON)"),
                                    ("support-labels", "Support labels (JSONL)"),
                                    ("cone-rag-responses", "CONE-RAG participant responses (JSON)"),
                                    ("cone-rag-labels", "CONE-RAG crowd labels (TSV)"),
                                    (
                                        "nuggetizer-nuggets",
                                        "TREC RAG created nuggets with vital/okay (nuggetizer JSONL)",
                                    ),
                                    ("nugget-assignments", "TREC RAG nugget assignments (nuggetizer JSONL)"),
                                ],
                                max_length=24,
                            ),
                        ),
                        (
                            "file_name",
                            models.CharField(help_text="The uploaded file's own name.", max_length=255),
                        ),
                        (
                            "stored_path",
                            models.CharField(help_text="Where the upload waits for its import.", max_length=1024),
                        ),
                        ("size", models.PositiveBigIntegerField(default=0)),
                        (
                            "options",
                            models.JSONField(
                                blank=True, default=dict, help_text="Judge, format and the other choices."
                            ),
                        ),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("pending", "Waiting"),
                                    ("running", "Importing"),
                                    ("done", "Done"),
                                    ("failed", "Rejected"),
                                ],
                                default="pending",
                                max_length=10,
                            ),
                        ),
                        ("percent", models.PositiveSmallIntegerField(default=0)),
                        (
                            "done",
                            models.PositiveBigIntegerField(default=0, help_text="Records of the file stored so far."),
                        ),
                        (
                            "total",
                            models.PositiveBigIntegerField(
                                default=0, help_text="Records of the file (0 until known)."
                            ),
                        ),
                        (
                            "heartbeat_at",
                            models.DateTimeField(
                                blank=True,
                                help_text="When the import last said it was alive (every few seconds).",
                                null=True,
                            ),
                        ),
                        (
                            "result",
                            models.JSONField(blank=True, default=list, help_text="Counts by kind of record."),
                        ),
                        (
                            "problems",
                            models.JSONField(
                                blank=True, default=list, help_text="file:line messages of a rejected file."
                            ),
                        ),
                        ("error", models.TextField(blank=True)),
                        (
                            "collection",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="import_jobs",
                                to="annotation.collection",
                            ),
                        ),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["-created_at", "-id"],
                        "abstract": False,
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(("percent__lte", 100)), name="import_job_percent_at_most_100"
                            )
                        ],
                        # The table annotation made; renamed just below.
                        "db_table": "annotation_importjob",
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.AlterModelTable(name="importjob", table=None),
    ]
