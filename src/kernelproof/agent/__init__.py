"""Tools for coding agents: ``kernelproof mcp`` (``tool_server``), a Model Context Protocol
server whose answers are short, actionable text (``kernelproof.report.agent_text``)."""
