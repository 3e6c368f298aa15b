"""An incident: one call on which a guarded candidate disagreed with its reference.

The guard (:func:`kernelproof.guard`) writes one folder per incident: ``incident.json`` (this
model) and the tensors it names (``inputs.pt``, ``candidate_output.pt``,
``reference_output.pt``). ``kernelproof incidents DIR`` lists and replays them.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelproof.schema.correctness import OutputComparison
from kernelproof.schema.envelope import CallSignature
from kernelproof.schema.environment_rule import ComponentChange

INCIDENT_SCHEMA: Final = "kernelproof.incident/1"

#: The file an incident's record is written to, inside its folder.
INCIDENT_FILE = "incident.json"


class IncidentKind(str, Enum):
    """What the shadow check saw."""

    MISMATCH = "mismatch"
    """The candidate's output is beyond the report's tolerance of the reference's."""

    INPUT_MUTATION = "input-mutation"
    """The candidate changed its input tensors (restored from the saved copy afterwards)."""

    RAISED = "raised"
    """The candidate raised on a call inside its envelope (the reference answered it)."""

    ENVIRONMENT = "environment"
    """At start-up: this process is not the environment the report was proved in (an
    invalidating difference); no call is involved. Every call goes to the reference, or the
    candidate only shadows sampled calls (``on_environment_change="shadow-only"``)."""


class Incident(BaseModel):
    """One disagreement, with everything needed to look at it and to replay it."""

    model_config = ConfigDict(ser_json_inf_nan="null")

    schema_: Literal["kernelproof.incident/1"] = Field(default=INCIDENT_SCHEMA, alias="schema")
    """The schema version (serialised as ``schema``)."""

    id: str
    """The incident's folder name: unique within its directory."""

    kinds: list[IncidentKind]
    """What went wrong on the call (a mutation and a mismatch can come together)."""

    call_index: int | None
    """The call's position among the guarded module's calls (0 is the first); ``None`` for an
    environment incident, which no call caused."""

    signature: CallSignature | None
    """The call's signature (``None`` for an environment incident)."""

    knobs: dict[str, int] = Field(default_factory=dict)
    """The task's knob values the call corresponds to (from the report's envelope)."""

    environment: list[ComponentChange] = Field(default_factory=list)
    """An environment incident's differences from the proved environment (every one, the
    invalidating first)."""

    error_ratio: float | None = None
    """The worst output's error ratio under the report's tolerance model (None when the
    outputs could not be compared: a raise, a wrong shape)."""

    outputs: list[OutputComparison] = Field(default_factory=list)
    """One comparison per output tensor."""

    detail: str
    """What is wrong, in one line."""

    policy: Literal["rollback", "raise", "log"]
    """What the guard did about it (``on_mismatch``)."""

    tolerance: dict[str, object] = Field(default_factory=dict)
    """The tolerance model the outputs were judged by (the report's)."""

    created_utc: str
    """When the incident was written, ISO 8601 in UTC."""

    inputs_file: str = "inputs.pt"
    """The call's inputs as saved before the candidate ran (relative to the folder)."""

    candidate_output_file: str | None = "candidate_output.pt"
    """The candidate's output (None when it raised)."""

    reference_output_file: str = "reference_output.pt"
    """The reference's output on the saved inputs."""

    reference_path: str | None = None
    """The task file the report was verified against (from the report)."""

    candidate_path: str | None = None
    """The candidate file the report verified (from the report)."""

    command: str | None = None
    """A ``kernelproof verify`` command that reruns the candidate on the saved inputs at the
    call's knobs (None when the report names no files)."""

    replay_settings: dict[str, Any] = Field(default_factory=dict)
    """The same replay as verify settings (``kernelproof incidents DIR --replay`` runs them):
    the report's own, with the call's knobs and ``inputs_file``; empty when not written."""

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)

    def replay_refusal(self) -> str | None:
        """Why this incident cannot be replayed, saying what to do instead; None when it can."""
        if self.signature is None:
            return (
                f"incident {self.id} is about the environment, not a call: there is "
                f"nothing to replay. Re-prove the verdict here instead: {self.command}"
            )
        if not self.replay_settings or not self.reference_path or not self.candidate_path:
            return (
                f"incident {self.id} cannot be replayed: it names no reference and "
                "candidate files (the guard's report named none)"
            )
        return None

    def describe(self) -> str:
        """One line: id, call, kinds and the detail."""
        kinds = "+".join(k.value for k in self.kinds)
        if self.signature is None:
            return f"{self.id}: {kinds} at start-up: {self.detail}"
        return (
            f"{self.id}: call {self.call_index} {kinds} at {self.signature.describe()}: "
            f"{self.detail}"
        )
