"""Each label family's scores of runs under one judge's labels: the reads of the labels, with the
formulas from `judging.measures`. Below judging's features, which all read scores through here
(the evaluation pages, agreement's run rankings, the hybrid estimates' tables)."""
