"""Agreement between judges: labels paired on the units two judges share (selectors), the statistics over
them (metrics: kappa, alpha, rank correlation), the reports and their pages."""
