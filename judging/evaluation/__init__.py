"""Run evaluation: runs scored with ir_measures under one judge's qrels (metrics) and its pages."""
