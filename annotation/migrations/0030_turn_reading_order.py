from django.db import migrations, models

import core.model_fields
from core.ordering import natural_order_bytes


def fill_reading_order(apps, schema_editor):
    """Every existing turn's reading order, from its id, as the field fills it on every later write."""
    Turn = apps.get_model("annotation", "Turn")
    batch = []
    for turn in Turn.objects.only("id", "turn_id").iterator(chunk_size=5000):
        turn.reading_order = natural_order_bytes(turn.turn_id)
        batch.append(turn)
        if len(batch) == 5000:
            Turn.objects.bulk_update(batch, ["reading_order"])
            batch = []
    Turn.objects.bulk_update(batch, ["reading_order"])


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0029_passage_count"),
    ]

    operations = [
        migrations.AddField(
            model_name="turn",
            name="reading_order",
            field=core.model_fields.NaturalOrderField(default=b"", source="turn_id"),
            preserve_default=False,
        ),
        migrations.RunPython(fill_reading_order, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name="turn",
            index=models.Index(fields=["collection", "reading_order", "id"], name="turn_reading_order"),
        ),
    ]
