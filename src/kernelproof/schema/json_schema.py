"""The report's published JSON Schema, generated from the pydantic model.

Consumers (CI gates, RL reward parsers, the store's readers in other languages) validate a
report's JSON against it. It is generated in serialization mode, so it describes the JSON as
written (``schema`` rather than ``schema_``, ``null`` for an interval that was not measured),
and it is checked in as ``docs/report.schema.json``; ``kernelproof schema`` prints it, and a
test keeps the two in sync.
"""

from __future__ import annotations

import json
from typing import Any

from kernelproof.schema.report import REPORT_SCHEMA, Report

#: The JSON Schema dialect the generated schema follows (pydantic 2 emits 2020-12).
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def report_json_schema() -> dict[str, Any]:
    """The JSON Schema of a report as :meth:`Report.to_json` writes it."""
    schema = Report.model_json_schema(mode="serialization", by_alias=True)
    return {
        "$schema": DIALECT,
        **schema,
        "title": f"{REPORT_SCHEMA}: a kernelproof verification report",
    }


def report_json_schema_text() -> str:
    """:func:`report_json_schema` as the checked-in file's text (sorted keys, one newline)."""
    return json.dumps(report_json_schema(), indent=2, sort_keys=True) + "\n"
