"""Rendering a report: terminal summary, JSON file, self-contained HTML packet, CI files.

- ``terminal``: the brief summary ``kernelproof verify`` prints.
- ``html`` (with ``summary_text``, ``matrix_view``, ``plots``, ``commands`` and the Jinja
  templates in ``templates/``): the review packet, one HTML file with everything inline.
- ``junit``, ``sarif``, ``github``: JUnit XML, SARIF 2.1.0 and GitHub Actions annotations.
- ``files``: writing each of them to disk, and reading a JSON report back.

Every view derives from one :class:`~kernelproof.schema.Report`; none imports torch.
"""
