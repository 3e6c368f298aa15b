"""GitHub Actions annotations for located findings."""

from __future__ import annotations

from kernelproof.report.github import running_on_github, workflow_commands
from kernelproof.schema import Finding, Severity, SourceLocation, Verdict


def test_one_annotation_per_located_finding(full_report):
    lines = workflow_commands(full_report)
    assert lines == [
        "::warning file=examples/softmax/wrong_odd.py,line=16,title=kernelproof "
        "static-introspection,col=9::References `os._exit`: it can take the harness down.",
        "::notice file=examples/softmax/wrong_odd.py,line=1,title=kernelproof "
        "static-languages,col=1::Languages: pytorch",
    ]


def test_messages_and_properties_are_escaped(build_report):
    finding = Finding(
        check="tampering",
        severity=Severity.SUSPECT,
        message="50%\nnext line",
        location=SourceLocation(path="dir,x/k:1.py", line=3),
    )
    (line,) = workflow_commands(build_report(Verdict.SUSPECT, findings=[finding]))
    assert line == (
        "::error file=dir%2Cx/k%3A1.py,line=3,title=kernelproof tampering::50%25%0Anext line"
    )


def test_only_inside_github_actions():
    assert running_on_github({"GITHUB_ACTIONS": "true"})
    assert not running_on_github({})
    assert not running_on_github({"GITHUB_ACTIONS": "false"})
