"""Settings for a process that runs the crowd app under its old label "mturk" (a database made before it)."""

from assay.settings import *  # noqa: F403
from assay.settings import INSTALLED_APPS

INSTALLED_APPS = [
    "tests.crowd.mturk_label.apps.OldLabelCrowdConfig" if app == "crowd" else app for app in INSTALLED_APPS
]
# The crowd migrations as they were recorded under the old label, frozen here.
MIGRATION_MODULES = {"mturk": "tests.crowd.mturk_label.migrations"}
