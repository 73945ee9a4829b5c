"""Checking a call's arguments against a schema from outside (an MCP server's tool): it cannot hang the agent.

The registry checks arguments on the event loop's thread. jsonschema evaluates ``pattern`` and
``patternProperties`` with Python's ``re``, a backtracking engine that holds the GIL while it matches:
a server that declares ``"pattern": "^(a+)+$"`` freezes the whole agent on ``"aaa…a!"``, and a thread
would not help (the loop's thread waits for the GIL all the same). So a server's schema is checked by
``SchemaCheck``:

* **Regexes run on RE2** (``google-re2``, linear in the text) for every ``pattern``, every
  ``patternProperties`` key and ``additionalProperties`` beside them, wherever RE2 compiles the pattern.
* **Every check has a time limit** (``CHECK_LIMIT``), enforced with ``SIGALRM`` on the main thread
  (where the agent's event loop runs): the alarm's handler raises inside the check, and Python's
  ``re`` polls for signals while it backtracks. It covers what RE2 cannot: a pattern RE2 refuses
  (lookarounds, backreferences), an installation without RE2, regexes jsonschema evaluates itself
  (``unevaluatedProperties`` beside ``patternProperties``), and a ``$ref`` graph that fans out
  exponentially. The loop stalls for at most that long; a check that runs out refuses the call
  with a clear error. Where no alarm can be used (another thread, Windows, a timer already set),
  a schema that needs Python's ``re`` refuses its calls instead of risking a hang.
* **No remote ``$ref`` is fetched** (jsonschema's default would, with urllib, on the event loop).

A schema that cannot be applied at all (an invalid regex, a ``$ref`` to nowhere, a wrong keyword
value) refuses the call with the reason; nothing here raises into a turn.
"""

from __future__ import annotations

import importlib
import logging
import re
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from acp_hermes_tools.registry import JSONSCHEMA_IMPORT

log = logging.getLogger(__name__)

CHECK_LIMIT = 0.5  # seconds one check of a call's arguments may take (the event loop waits that long at most)
_SHOWN = 80  # characters of a value quoted in an error

Matcher = Callable[[str], bool]


class CheckTimedOut(BaseException):
    """Raised by the alarm inside a check that ran out of time.

    A ``BaseException``, like ``KeyboardInterrupt`` (it arrives the same way): the ``except Exception``
    clauses inside jsonschema and referencing must not swallow it. The alarm is one-shot, so it is
    raised at most once per check, and only the check's own ``except`` sees it.
    """


class SchemaCheck:
    """The argument check of one external schema; the validator is built on the first call and kept.

    ``use_re2=False`` checks as an installation without RE2 does (for tests).
    """

    def __init__(self, schema: Mapping[str, Any], *, use_re2: bool = True) -> None:
        self.schema = schema
        self._use_re2 = use_re2
        self._regexes: Regexes | None = None
        self._validator: Any = None
        self._needs_python_re: bool | None = None

    def problem(self, arguments: dict[str, Any]) -> str | None:
        """Why ``arguments`` do not fit the schema (or cannot be checked), or None when they do."""
        from acp_hermes_tools.registry import describe_errors

        try:
            validator = self._validator_for()  # imports and builds before the clock starts (quick, once)
            with _time_limit(CHECK_LIMIT) as bounded:
                if not bounded and self._unbounded_risk():
                    return ("its input schema has regular expressions only a backtracking engine can check, "
                            "and no time limit can be set here; the call was refused")
                errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        except CheckTimedOut:
            log.warning("checking arguments against an external schema ran out of %g s", CHECK_LIMIT)
            return (f"checking them against the tool's input schema took longer than {CHECK_LIMIT:g} s "
                    "(its regular expressions or references are too costly); the call was refused")
        except RecursionError:
            return "the tool's input schema could not be applied: it nests or refers to itself too deeply"
        except Exception as error:  # a server's schema must never break a turn
            return f"the tool's input schema could not be applied: {_one_line(error)}"
        return describe_errors(errors)

    def _validator_for(self) -> Any:
        if self._validator is None:
            self._regexes = Regexes(_re2() if self._use_re2 else None)
            self._validator = _validator_class(self._regexes)(self.schema, registry=_offline_registry())
        return self._validator

    def _unbounded_risk(self) -> bool:
        """Whether some regex of the schema would run on Python's ``re`` (compiled here, which is quick)."""
        if self._needs_python_re is None:
            assert self._regexes is not None, "built with the validator"
            patterns = list(_patterns(self.schema))
            self._needs_python_re = any(not self._regexes.linear(pattern) for pattern in patterns) or (
                bool(patterns) and _has_key(self.schema, "unevaluatedProperties"))
        return self._needs_python_re


class Regexes:
    """One schema's compiled regexes: RE2 where it compiles the pattern, Python's ``re`` otherwise.

    RE2 leaves ``\\d`` and ``\\w`` ASCII and ``$`` at the very end, as ECMA-262 (JSON Schema's dialect)
    does; Python's ``re`` is only the fallback.
    """

    def __init__(self, re2: Any) -> None:
        self._re2 = re2
        self._matchers: dict[str, tuple[Matcher, bool]] = {}

    def search(self, pattern: str, text: str) -> bool:
        return self._compiled(pattern)[0](text)

    def linear(self, pattern: str) -> bool:
        """Whether ``pattern`` runs on RE2 (raises ``re.error`` when no engine can compile it)."""
        return self._compiled(pattern)[1]

    def _compiled(self, pattern: str) -> tuple[Matcher, bool]:
        found = self._matchers.get(pattern)
        if found is None:
            found = self._matchers[pattern] = self._compile(pattern)
        return found

    def _compile(self, pattern: str) -> tuple[Matcher, bool]:
        if self._re2 is not None:
            options = self._re2.Options()
            options.log_errors = False  # RE2 would print each refusal to stderr
            options.never_capture = True
            try:
                compiled = self._re2.compile(pattern, options)
            except self._re2.error:
                pass  # lookarounds, backreferences, huge repeats: Python's engine, under the time limit
            else:
                return (lambda text: compiled.search(text) is not None), True
        fallback = re.compile(pattern)
        return (lambda text: fallback.search(text) is not None), False


def _re2() -> Any:
    """The ``re2`` module of ``google-re2``, or None where it is not installed."""
    try:
        return importlib.import_module("re2")
    except ImportError:
        log.info("google-re2 is not installed: MCP schema regexes run on Python's re, under a time limit")
        return None


@contextmanager
def _time_limit(seconds: float) -> Iterator[bool]:
    """Raise ``CheckTimedOut`` in the block after ``seconds``; yields whether a limit could be set."""
    if not _alarm_usable():
        yield False
        return
    previous = signal.signal(signal.SIGALRM, _timed_out)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield True
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)


def _alarm_usable() -> bool:
    return (hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()
            and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0))


def _timed_out(signum: int, frame: Any) -> None:
    raise CheckTimedOut


def _offline_registry() -> Any:
    """A registry that resolves the schema's own ``$ref``s and the drafts' meta-schemas, and fetches nothing."""
    with JSONSCHEMA_IMPORT:
        from referencing import Registry

    return Registry()


def _validator_class(regexes: Regexes) -> Any:
    """Draft 2020-12 with every regex keyword running through ``regexes``."""
    with JSONSCHEMA_IMPORT:
        from jsonschema.exceptions import ValidationError
        from jsonschema.validators import Draft202012Validator, extend

    def pattern(validator: Any, patrn: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
        if validator.is_type(instance, "string") and not regexes.search(patrn, instance):
            yield ValidationError(f"{_shown(instance)} does not match {_shown(patrn)}")

    def pattern_properties(validator: Any, patterns: Mapping[str, Any], instance: Any,
                           schema: Mapping[str, Any]) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in patterns.items():
            for key, value in instance.items():
                if regexes.search(patrn, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=patrn)

    def additional_properties(validator: Any, allowed: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        properties = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        extras = [key for key in instance
                  if key not in properties and not any(regexes.search(patrn, key) for patrn in patterns)]
        if validator.is_type(allowed, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], allowed, path=extra)
        elif not allowed and extras:
            names = ", ".join(_shown(extra) for extra in sorted(extras))
            if patterns:
                yield ValidationError(f"{names} match none of the allowed property patterns")
            else:
                yield ValidationError(f"Additional properties are not allowed ({names} unexpected)")

    keywords = {"pattern": pattern, "patternProperties": pattern_properties,
                "additionalProperties": additional_properties}
    return extend(Draft202012Validator, keywords)


def _patterns(schema: Any) -> Iterator[str]:
    """Every regex in ``schema``: ``pattern`` values and ``patternProperties`` keys, at any depth."""
    if isinstance(schema, Mapping):
        for key, value in schema.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            elif key == "patternProperties" and isinstance(value, Mapping):
                yield from (patrn for patrn in value if isinstance(patrn, str))
            yield from _patterns(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _patterns(item)


def _has_key(schema: Any, wanted: str) -> bool:
    if isinstance(schema, Mapping):
        return wanted in schema or any(_has_key(value, wanted) for value in schema.values())
    return isinstance(schema, list) and any(_has_key(item, wanted) for item in schema)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}…' ({len(str(value)):,} characters)"


def _one_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:300]
