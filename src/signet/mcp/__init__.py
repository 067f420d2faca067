"""Signet as an MCP server: the same tools over stdio (``signet mcp``) and Streamable HTTP (``/mcp``)."""
