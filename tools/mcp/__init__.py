"""MCP servers as tool sources: their specs, one connection each, and their tools in a session's registry.

The official ``mcp`` SDK is imported only here and only once a session has servers to connect
(it takes ~0.4 s to import): nothing on the way to ``initialize`` or ``session/new`` loads it.
"""
