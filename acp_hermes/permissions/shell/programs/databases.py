"""Databases: SQL that drops, truncates or rewrites whole tables, and the tools that drop or flush.

SQL is read wherever a line carries it (arguments, here-documents, here-strings) except in programs
that only print, search or record text — unless their output is piped into one that may run it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from acp_hermes.permissions.shell.arguments import names
from acp_hermes.permissions.shell.programs.base import Family
from acp_hermes.permissions.shell.rating import Call

# Programs that only print, search or record text: SQL in their arguments is data, unless
# their output is piped into something that may execute it.
TEXT_ONLY = names("echo printf cat tee grep egrep fgrep rg ag ack sed git gh glab head tail less diff wc true :")
_SQL_DROP = re.compile(r"\bdrop\s+(?:temporary\s+)?(table|database|schema)\b", re.I)
_SQL_TRUNCATE = re.compile(r"\btruncate\s+(?:table\s+)?(?:only\s+)?[\w\"`\[]", re.I)
_SQL_UNFILTERED = (
    (re.compile(r"\bdelete\s+from\s+[^\s;]+", re.I), "SQL DELETE without WHERE"),
    (re.compile(r"\bupdate\s+[^\s;]+\s+set\s", re.I), "SQL UPDATE without WHERE"),
)
_SQL_WHERE = re.compile(r"\bwhere\b", re.I)
_MONGO_DROP = re.compile(r"\.dropDatabase\s*\(", re.I)


def sql_reasons(text: str) -> Iterator[str]:
    drop = _SQL_DROP.search(text)
    if drop:
        yield f"SQL DROP {drop.group(1).upper()}"
    if _SQL_TRUNCATE.search(text):
        yield "SQL TRUNCATE"
    for pattern, reason in _SQL_UNFILTERED:
        for match in pattern.finditer(text):
            end = text.find(";", match.end())
            if not _SQL_WHERE.search(text[match.end() : end if end >= 0 else len(text)]):
                yield reason
                break
    if _MONGO_DROP.search(text):
        yield "drops a MongoDB database"


def _check_database_tool(call: Call) -> None:
    if call.name == "dropdb":
        call.findings.dangerous("drops a database (dropdb)")
    elif any(arg.lower() in ("flushall", "flushdb") for arg in call.args):
        call.findings.dangerous("flushes Redis data")


FAMILY = Family(checks=dict.fromkeys(("dropdb", "redis-cli"), _check_database_tool))
