"""Adjudication of relevance disagreements: pairs the organiser's judges graded too far apart go to one
adjudicator, whose grades and the agreed ones make a new judge's qrels."""
