"""Permissions: modes, how risky a command or a path is, the policy that decides, the gate that asks."""
