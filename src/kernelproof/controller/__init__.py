"""The trusted controller: drives the workers and turns their results into a report."""
