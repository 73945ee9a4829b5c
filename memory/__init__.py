"""Persistent stores and the safety scanning shared by everything that feeds a prompt."""
