"""The model client: request and event types, the Anthropic provider, prices and context windows."""
