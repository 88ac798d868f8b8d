# The organiser's console (the console app) owns the uploads now: ImportJob leaves annotation's state only.
# Its table and rows stay; console's first migration takes the model over and renames the table.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0019_nugget_failed_labels"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ImportJob")],
            database_operations=[],
        ),
    ]
