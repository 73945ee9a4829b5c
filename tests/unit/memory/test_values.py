"""``@value`` classes behave as ``@dataclass(frozen=True, slots=True)`` ones do, checked side by side."""

from __future__ import annotations

import dataclasses
from typing import Any, cast
from unittest.mock import ANY

import pytest

from acp_hermes_memory.values import value


@value
class Point:
    """A value with a default, a method and a check."""

    x: int
    y: int = 0
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.x < 0:
            raise ValueError("x must not be negative")

    @property
    def total(self) -> int:
        return self.x + self.y


@dataclasses.dataclass(frozen=True, slots=True)
class Twin:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()


@value
class Other:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()


def test_built_by_position_or_keyword_with_defaults() -> None:
    assert (Point(1).x, Point(1).y, Point(1).tags) == (1, 0, ())
    assert Point(1, 2, ("a",)) == Point(tags=("a",), y=2, x=1)
    assert Point(2, 3).total == 5


@pytest.mark.parametrize("make", [lambda: Point(), lambda: Point(1, 2, (), 4), lambda: Point(1, z=3)])  # type: ignore[call-arg]
def test_wrong_arguments_are_a_type_error(make: Any) -> None:
    with pytest.raises(TypeError, match=r"Point\.__init__"):
        make()


def test_post_init_checks_every_instance() -> None:
    with pytest.raises(ValueError, match="negative"):
        Point(-1)


def test_equal_hashed_and_shown_as_the_dataclass() -> None:
    point, twin, other = Point(1, 2, ("a",)), Twin(1, 2, ("a",)), Other(1, 2, ("a",))
    assert point == Point(1, 2, ("a",)) and point != Point(1, 3, ("a",))
    assert point != cast(object, other) and point != cast(object, twin)  # other types with the same fields
    assert [point] == [ANY]  # another type's __eq__ still gets its turn
    assert hash(point) == hash(twin) and len({point, Point(1, 2, ("a",))}) == 1
    assert repr(point).removeprefix("Point") == repr(twin).removeprefix("Twin") == "(x=1, y=2, tags=('a',))"


def test_frozen_and_slotted() -> None:
    point = Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'x'"):
        del point.x
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.z = 3  # type: ignore[attr-defined]
    assert not hasattr(point, "__dict__") and vars(Point)["__slots__"] == ("x", "y", "tags")


def test_matched_by_position() -> None:
    match Point(4, 5):
        case Point(x, y):
            assert (x, y) == (4, 5)
        case _:
            pytest.fail("no match")
