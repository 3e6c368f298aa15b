"""``kernelproof mcp``: the tools' answers (fast, on canned reports), and the server spoken to
by the MCP SDK's own client over stdio (slow: real verifications in the server process)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.conftest import EXAMPLES
from tests.rl.canned import FakeSession, by_marker, completion, report

from kernelproof.agent.tool_server import AgentTools, task_book
from kernelproof.schema import Verdict

SOFTMAX = EXAMPLES / "softmax"


def tools(session: Any = None) -> AgentTools:
    return AgentTools(
        task_book([SOFTMAX / "reference.py", EXAMPLES / "gpumode" / "vectorsum"]),
        session=session or FakeSession(by_marker),
    )


def test_list_tasks_names_each_task_with_its_shape():
    text = tools().list_tasks()
    assert "- reference: ModelNew; batch_size=64, dim=4096" in text
    assert "- vectorsum: custom_kernel" in text


def test_verify_answers_in_a_few_lines_and_explain_expands_them():
    agent = tools()
    answer = agent.verify("reference", completion("# verdict: incorrect"))
    lines = answer.splitlines()
    assert lines[0].startswith("verdict: incorrect (decided by the matrix stage)")
    assert "[report r1]" in lines[0]
    assert any(line.startswith("- fail correctness") for line in lines)
    assert lines[-2].startswith("next: Fix the wrong answer")
    assert len(answer) < 1500
    detail = agent.explain("r1")
    assert "fail findings:" in detail and "silently wrong" in detail


def test_verify_refuses_what_is_not_a_candidate_and_unknown_tasks():
    agent = tools()
    assert agent.verify("reference", "I would use shared memory.").startswith(
        "verdict: none (no candidate)"
    )
    unknown = agent.verify(str(SOFTMAX / "reference.py"), completion())
    assert unknown.startswith("error: no task") and "list_tasks" in unknown
    assert agent.explain("r99").startswith("error: no report 'r99'")


def test_explain_takes_a_report_as_json_too():
    text = tools().explain(report(Verdict.SUSPECT).to_json())
    assert text.startswith("verdict: suspect") and "suspect findings:" in text


def test_bench_asks_for_timing():
    session = FakeSession(by_marker)
    tools(session).bench("reference", completion("# fast"))
    assert session.calls[0]["timing"] is True and session.calls[0]["budget_s"] == 10.0


@pytest.mark.slow
def test_the_sdk_client_drives_the_server_over_stdio(tmp_path: Path):
    """The official client starts ``kernelproof mcp`` as a subprocess and calls each tool."""
    import os

    wrong = (SOFTMAX / "wrong_odd.py").read_text()
    task_file = str(SOFTMAX / "reference.py")
    # snippet: mcp
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    # An agent's MCP client starts `kernelproof mcp TASKS...` and calls its tools.
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kernelproof.cli", "mcp", task_file, "--profile", "quick"],
        env={**os.environ},
        cwd=str(tmp_path),
    )

    async def session() -> dict[str, str]:
        answers: dict[str, str] = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            names = {tool.name for tool in (await client.list_tools()).tools}
            answers["tools"] = ",".join(sorted(names))
            for name, arguments in [
                ("list_tasks", {}),
                ("verify", {"task": "reference", "candidate": wrong}),
                ("explain", {"report_id": "r1"}),
            ]:
                result = await client.call_tool(name, arguments)
                assert not result.is_error, result
                answers[name] = result.content[0].text
        return answers

    # end snippet

    answers = anyio.run(session)
    assert answers["tools"] == "bench,explain,list_tasks,verify"
    assert "reference: ModelNew" in answers["list_tasks"]
    verify = answers["verify"]
    assert verify.startswith("verdict: incorrect") and "[report r1]" in verify
    # The smallest failing input (a shrunk odd row length) and the inferred assumption.
    assert "smallest failing input: " in verify and "reproduce with: kernelproof verify" in verify
    # The command names the task's file and the agent's own candidate, not scratch paths.
    # (Scratch folders are named kernelproof-*; the checkout itself may live under /tmp.)
    assert f"kernelproof verify {task_file} candidate.py" in verify
    assert "/kernelproof-" not in verify.replace(str(task_file), "")
    assert "- assumption: " in verify and "dim" in verify
    assert "assumptions inferred from the matrix:" in answers["explain"]
