from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0020_move_importjob_to_console"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="report",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
