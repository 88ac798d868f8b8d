"""Outside systems the machine judges talk to; each module here is the only importer of its SDK."""
