"""acp-hermes: an Agent Client Protocol agent server with Hermes Agent's memory."""

__version__ = "0.1.0"
