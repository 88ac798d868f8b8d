"""Quality control of relevance work: gold pairs planted among an assessor's own, and pauses."""
