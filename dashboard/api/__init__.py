"""The JSON API (one Ninja router per resource) and the MCP endpoint."""
