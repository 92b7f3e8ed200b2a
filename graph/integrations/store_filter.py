"""LangGraph's search filters, as `InMemoryStore` reads them, for `MiaStore`.

A filter maps top-level fields of an item's value to what they must be: a plain value (equal), a
nested dict (the field is a dict whose named keys match, recursively), a list (same length, each
element matching), or a dict of operators (`$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`; the order
ones compare as numbers). Unlike InMemoryStore, a field that is missing or not a number fails an
order comparison instead of raising, and an unknown operator is refused before any item is read.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

_ORDER = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}
OPERATORS = frozenset({"$eq", "$ne", *_ORDER})


def check_filter(wanted: object) -> dict[str, Any]:
    """The filter as a dict (None is {}), or ValueError naming what LangGraph does not define."""
    if wanted is None:
        return {}
    if not isinstance(wanted, Mapping):
        raise ValueError(f"a search filter is a dict of field -> condition, not {type(wanted).__name__}")
    for condition in wanted.values():
        _check_condition(condition)
    return dict(wanted)


def _check_condition(condition: object) -> None:
    if isinstance(condition, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in condition):
            unknown = sorted(str(k) for k in condition if k not in OPERATORS)
            if unknown:
                raise ValueError(f"unsupported filter operator(s) {unknown}; LangGraph defines {sorted(OPERATORS)}")
            return
        for nested in condition.values():
            _check_condition(nested)
    elif isinstance(condition, (list, tuple)):
        for nested in condition:
            _check_condition(nested)


def matches(value: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether an item's value passes a checked filter (every field's condition holds)."""
    return all(_holds(value.get(field), condition) for field, condition in wanted.items())


def _holds(got: Any, condition: Any) -> bool:
    if isinstance(condition, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in condition):
            return all(_apply(got, op, arg) for op, arg in condition.items())
        return isinstance(got, Mapping) and all(_holds(got.get(k), v) for k, v in condition.items())
    if isinstance(condition, (list, tuple)):
        return (
            isinstance(got, (list, tuple))
            and len(got) == len(condition)
            and all(_holds(g, c) for g, c in zip(got, condition))
        )
    return bool(got == condition)


def _apply(got: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(got == arg)
    if op == "$ne":
        return bool(got != arg)
    if op not in _ORDER:
        raise ValueError(f"unsupported filter operator {op!r}; LangGraph defines {sorted(OPERATORS)}")
    left, right = _number(got), _number(arg)
    return left is not None and right is not None and bool(_ORDER[op](left, right))


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
