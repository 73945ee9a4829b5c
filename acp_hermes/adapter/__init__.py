"""The ACP adapter: the only code that imports the ACP SDK or builds ACP-shaped JSON. It decodes
what the client sends into the core's terms and renders what the core reports as ACP."""
