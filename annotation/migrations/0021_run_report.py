from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0019_nugget_failed_labels"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="report",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
