"""Shell knowledge for the permission policy: what a command line runs, and what that does.

Kept apart from the policy (``permissions.policy``) as the policy is about asking, this package about
reading a line. ``parse`` knows shell syntax; ``programs`` holds what is known of each family of
programs (git, find, sed/awk, archives, package managers and runners, interpreters, containers,
wrappers …): its risk checks, the options a remembered grant may cover, and when it only reads.
``risk``, ``keys`` and ``read_only`` read a line with that knowledge; ``analysis.analyse`` is the
front door: one line, parsed once, judged all three ways. Pure functions of their arguments (no I/O);
the tables load when a command is first analysed, never at start-up.
"""
