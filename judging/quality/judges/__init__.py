"""A collection's judges page: every judge with labels there, its provenance, labels, pool coverage and
agreement with a reference judge."""
