"""The judge-job task moved from judging/tasks.py to judging/machine/tasks.py. A worker finds a queued task
by the dotted path stored with it, so the rows queued (or run) under the old path take the new one."""

from django.db import migrations

OLD = "judging.tasks.judge_job_run_task"
NEW = "judging.machine.tasks.judge_job_run_task"


def forward(apps, schema_editor):
    apps.get_model("django_tasks_database", "DBTaskResult").objects.filter(task_path=OLD).update(task_path=NEW)


def backward(apps, schema_editor):
    apps.get_model("django_tasks_database", "DBTaskResult").objects.filter(task_path=NEW).update(task_path=OLD)


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0009_budgetsimulation_task_id_help"),
        ("django_tasks_database", "0019_rename_django_task_new_ordering_idx_tasks_db_new_ordering_idx_and_more"),
    ]

    operations = [migrations.RunPython(forward, backward)]
