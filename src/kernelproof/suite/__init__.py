"""Benchmark suites: run many verifications (``kernelproof bench``), store them, score them.

- ``store``: the results store (SQLAlchemy; SQLite by default, any URL such as PostgreSQL), with
  the resume lookup and the history behind ``kernelproof history`` and ``kernelproof compare``.
- ``metrics``: pure functions over result records: correctness rate, fast_p, clamped geometric
  mean speedups, verdict counts, pass@k (the ``SuiteSummary`` model they fill is in ``kernelproof.schema.suite``);
- ``comparison``: run B against run A, task by task.
"""
