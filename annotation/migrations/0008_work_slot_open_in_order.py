# Copies each work slot's unit assignment and position onto the slot, with a partial index over the open
# slots in order, so that claiming the first free copy no longer walks every unit of the assignment.

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import OuterRef, Q, Subquery


def copy_from_units(apps, schema_editor):
    WorkSlot = apps.get_model("annotation", "WorkSlot")
    WorkUnit = apps.get_model("annotation", "WorkUnit")
    unit = WorkUnit.objects.filter(pk=OuterRef("unit_id"))
    WorkSlot.objects.update(
        assignment_id=Subquery(unit.values("assignment_id")[:1]),
        position=Subquery(unit.values("position")[:1]),
    )


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0007_relevance_judgment_key_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="workslot",
            name="assignment",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="annotation.assignment",
            ),
        ),
        migrations.AddField(
            model_name="workslot",
            name="position",
            field=models.PositiveIntegerField(default=0),
            preserve_default=False,
        ),
        migrations.RunPython(copy_from_units, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="workslot",
            name="assignment",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="annotation.assignment",
            ),
        ),
        migrations.AddIndex(
            model_name="workslot",
            index=models.Index(
                condition=Q(completed_at__isnull=True),
                fields=["assignment", "position", "copy"],
                name="work_slot_open_in_order",
            ),
        ),
    ]
