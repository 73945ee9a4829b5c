"""Frozen value classes that are cheap to define (the bottom layer, so every layer can use them).

``@dataclass(frozen=True, slots=True)`` compiles six methods one ``exec`` at a time on Python
3.10-3.12: about 0.25 ms a class, and the way to answering ``initialize`` defines dozens of them.
``@value`` makes the same kind of class compiling only ``__init__`` (about 30 µs). Fields come from
the class's own annotations, defaults from its assignments; instances are built by position or
keyword (then checked by a ``__post_init__`` if the class has one), slotted, immutable
(``FrozenInstanceError``), equal and hashed by type and fields, with the dataclass repr and
``__match_args__``. It is no dataclass: ``dataclasses.replace``, ``fields`` and ``asdict`` do not
apply, and there is no ``field()``, ``ClassVar`` or inheriting of fields; use ``@dataclass`` for those.
"""

from __future__ import annotations

import inspect
from dataclasses import FrozenInstanceError
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: Any) -> Any:  # only type checkers read it
        return lambda decorator: decorator


C = TypeVar("C", bound=type)


@dataclass_transform(frozen_default=True)
def value(cls: C) -> C:
    """``cls`` remade as a frozen, slotted value class."""
    names = tuple(inspect.get_annotations(cls))
    defaults = {f"_default_{name}": cls.__dict__[name] for name in names if name in cls.__dict__}
    namespace = {key: item for key, item in cls.__dict__.items()
                 if key not in names and key not in ("__dict__", "__weakref__")}
    parameters = ", ".join(f"{name}=_default_{name}" if f"_default_{name}" in defaults else name for name in names)
    assignments = "".join(f"\n    _set(self, {name!r}, {name})" for name in names) or "\n    pass"
    if "__post_init__" in namespace:
        assignments += "\n    self.__post_init__()"
    exec(f"def __init__(self, {parameters}):{assignments}", {"_set": object.__setattr__, **defaults}, namespace)
    namespace["__init__"].__qualname__ = f"{cls.__qualname__}.__init__"
    namespace.update(__slots__=names, __match_args__=names, __repr__=_repr, __eq__=_eq, __hash__=_hash,
                     __setattr__=_no_assignment, __delattr__=_no_deletion)
    made: C = type(cls)(cls.__name__, cls.__bases__, namespace)
    return made


def _fields(item: Any) -> tuple[Any, ...]:
    return tuple(getattr(item, name) for name in item.__slots__)


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: object) -> object:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _fields(self) == _fields(other)


def _hash(self: Any) -> int:
    return hash(_fields(self))


def _no_assignment(self: Any, name: str, _: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _no_deletion(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")
