"""Checks that produce findings about a candidate: static evidence and run-time probes."""
