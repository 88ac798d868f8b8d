"""Pure statistics: agreement (kappa, alpha), rank correlation (tau and its intervals), ir_measures
evaluation, nugget and support scores, and the hybrid estimators, designs and simulations.

Nothing here imports Django or another Assay app (an import-linter contract keeps it so): a measure takes
numbers, labels and ids, and the features' selectors read them from the database.
"""
