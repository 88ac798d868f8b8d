"""The crowd app as it was labelled before it became `crowd`: label "mturk", with the migrations of that time.

tests/crowd/test_crowd_relabel.py builds a database with this in a subprocess, then upgrades it with the
real settings, as a deployment made before the relabel would be.
"""
