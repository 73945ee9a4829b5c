"""The agent core: sessions, the agent loop, the transcript, the system prompt, hints, titles and
slash commands. It speaks no protocol: the ACP adapter drives it and renders what it reports."""
