"""Test doubles that ship with the product: the scripted Anthropic-compatible server that the
offline demo and the tests run against."""
