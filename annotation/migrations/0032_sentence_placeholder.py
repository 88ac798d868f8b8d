from django.db import migrations

import annotation.models.collection
from annotation.collection.placeholder import is_placeholder


def mark_placeholders(apps, schema_editor):
    """Every existing sentence that is a placeholder marked, as the field marks it on every later write
    (the others keep the default, False)."""
    ResponseSentence = apps.get_model("annotation", "ResponseSentence")
    marked = [
        pk
        for pk, text in ResponseSentence.objects.values_list("id", "text").iterator(chunk_size=5000)
        if is_placeholder(text)
    ]
    for start in range(0, len(marked), 5000):
        ResponseSentence.objects.filter(id__in=marked[start : start + 5000]).update(placeholder=True)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0031_nugget_turn_count"),
    ]

    operations = [
        migrations.AddField(
            model_name="responsesentence",
            name="placeholder",
            field=annotation.models.collection.PlaceholderFlag(
                default=False,
                editable=False,
                help_text="Whether the text is a stand-in, never a support unit.",
            ),
        ),
        migrations.RunPython(mark_placeholders, migrations.RunPython.noop, elidable=True),
    ]
