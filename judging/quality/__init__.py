"""The organiser's view of each assessor's quality: gold accuracy, agreement, speed, drift and flags."""
