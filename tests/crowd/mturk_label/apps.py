from crowd.apps import CrowdConfig


class OldLabelCrowdConfig(CrowdConfig):
    label = "mturk"
