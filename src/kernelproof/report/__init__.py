"""Rendering a report: terminal summary, JSON file, self-contained HTML packet."""
