"""Hybrid human/machine estimates: estimators, intervals, sampling designs, simulations and planning."""
