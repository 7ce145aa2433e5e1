"""The keyword-level comparisons of json_compatibility.py: content models, types, string and number bounds,
and small readers of schema documents. Pure functions over the schemas' JSON."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from referencing._core import Resolver  # not exported by the package, but its lookups return it

# A difference type and the JSON pointer, relative to the compared subschema, where it was found.
Issue = tuple[str, str]
# How a schema governs one property name (or array position): a subschema of its own, any value, a
# catch-all schema (additionalProperties / patternProperties / additionalItems), or not at all.
Kind = Literal["declared", "open", "partial", "closed"]
Case = list["Node"]

# "integer" is not listed: it is a part of "number".
ALL_TYPES = frozenset({"null", "boolean", "object", "array", "string", "number"})
MAX_CASES = 64  # writer cases beyond this are approximated (reports more, never less)


@dataclass(frozen=True, slots=True)
class Node:
    """A subschema and the resolver its "$ref"s resolve with (its document and base URI)."""

    schema: Any
    resolver: Resolver[Any]


def content_difference(noun: str, wkind: Kind, rkind: Kind) -> str | None:
    """The name of a difference in how the two sides govern a name or position, None for a nested one."""
    extra = "ADDITIONAL_PROPERTIES" if noun == "PROPERTY" else "ADDITIONAL_ITEMS"
    if wkind != "declared" and rkind != "declared":
        return f"{extra}_REMOVED" if rkind == "closed" else f"{extra}_NARROWED"
    if rkind == "closed":
        return f"{noun}_REMOVED_FROM_CLOSED_CONTENT_MODEL"
    if rkind == "partial" and wkind == "declared":
        return f"{noun}_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
    if rkind == "declared" and wkind == "open":
        return f"{noun}_ADDED_TO_OPEN_CONTENT_MODEL"
    if rkind == "declared" and wkind == "partial":
        return f"{noun}_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
    return None


def content_kind(extra: Any) -> Kind:
    if extra is False:
        return "closed"
    if extra is True or extra == {}:
        return "open"
    return "partial"


def _catch_all(extra: Any) -> tuple[Kind, list[Any]]:
    kind = content_kind(extra)
    return kind, [] if kind == "open" else [extra]  # closed: [False], which rejects whatever comes


def property_governing(s: Any, p: str) -> tuple[Kind, list[Any]]:
    if not isinstance(s, Mapping):
        return _catch_all(s)
    declared = as_mapping(s.get("properties"))
    matched = [v for pattern, v in as_mapping(s.get("patternProperties")).items() if _search(pattern, p)]
    if p in declared:
        return "declared", [declared[p], *matched]
    if matched:
        return "partial", matched
    return _catch_all(s.get("additionalProperties", True))


def pattern_governing(s: Any, pattern: str) -> tuple[Kind, list[Any]]:
    if not isinstance(s, Mapping):
        return _catch_all(s)
    patterns = as_mapping(s.get("patternProperties"))
    if pattern in patterns:
        return "declared", [patterns[pattern]]
    if patterns:
        return "open", []  # another pattern may match the same names: taken as allowing any value
    return _catch_all(s.get("additionalProperties", True))


def extra_governing(s: Any) -> tuple[Kind, list[Any]]:
    return _catch_all(s.get("additionalProperties", True) if isinstance(s, Mapping) else s)


@dataclass(frozen=True, slots=True)
class _ItemForm:
    prefix: list[Any]  # the tuple's positions
    rest: Any  # the schema of the items after them (of all items without a tuple)
    prefix_keyword: str
    rest_keyword: str


def item_form(s: Mapping[str, Any]) -> _ItemForm:
    if "prefixItems" in s:
        return _ItemForm(as_list(s["prefixItems"]), s.get("items", True), "prefixItems", "items")
    items = s.get("items", True)
    if isinstance(items, list):
        return _ItemForm(items, s.get("additionalItems", True), "items", "additionalItems")
    return _ItemForm([], items, "items", "items")


def item_governing(s: Any, i: int | None) -> tuple[Kind, list[Any]]:
    if not isinstance(s, Mapping):
        return _catch_all(s)
    form = item_form(s)
    if i is not None and i < len(form.prefix):
        return "declared", [form.prefix[i]]
    return _catch_all(form.rest)


# Keyword-level checks: the case's tightest constraint against the reader's.


def declared_types(s: Mapping[str, Any]) -> set[str] | None:
    t = s.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return {x for x in t if isinstance(x, str)}
    return None


def case_types(case: Case) -> set[str] | None:
    """The types a case writes (None: any), "integer" standing for the integers among numbers."""
    result: set[str] | None = None
    for n in case:
        t = declared_types(n.schema)
        if t is not None:
            result = t if result is None else _meet(result, t)
    return result


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _meet(a: set[str], b: set[str]) -> set[str]:
    both = a & b
    if ("integer" in a and "number" in b) or ("integer" in b and "number" in a):
        both.add("integer")
    return both


def covers(types: set[str], t: str) -> bool:
    return t in types or (t == "integer" and "number" in types)


def string_issues(case: Case, s: Mapping[str, Any]) -> list[Issue]:
    issues = max_issues(case, s, "maxLength", "MAX_LENGTH")
    issues += min_issues(case, s, "minLength", "MIN_LENGTH")
    pattern = s.get("pattern")
    if isinstance(pattern, str):
        written = {n.schema["pattern"] for n in case if isinstance(n.schema.get("pattern"), str)}
        if pattern not in written:
            issues.append(("PATTERN_CHANGED" if written else "PATTERN_ADDED", ""))
    return issues


def max_issues(case: Case, s: Mapping[str, Any], keyword: str, name: str) -> list[Issue]:
    limit = _number(s.get(keyword))
    if limit is None:
        return []
    written = [v for n in case if (v := _number(n.schema.get(keyword))) is not None]
    if not written:
        return [(f"{name}_ADDED", "")]
    return [(f"{name}_DECREASED", "")] if min(written) > limit else []


def min_issues(case: Case, s: Mapping[str, Any], keyword: str, name: str) -> list[Issue]:
    limit = _number(s.get(keyword))
    if limit is None or limit <= 0:
        return []  # a count or length is at least 0 anyway
    written = [v for n in case if (v := _number(n.schema.get(keyword))) is not None]
    if not written:
        return [(f"{name}_ADDED", "")]
    return [(f"{name}_INCREASED", "")] if max(written) < limit else []


Bound = tuple[float, bool, str]  # value, exclusive, the difference type's stem


def _bounds(s: Mapping[str, Any], upper: bool) -> list[Bound]:
    inclusive, exclusive = ("maximum", "exclusiveMaximum") if upper else ("minimum", "exclusiveMinimum")
    stem = inclusive.upper()
    out: list[Bound] = []
    value = _number(s.get(inclusive))
    if value is not None:
        out.append((value, s.get(exclusive) is True, stem))  # draft 4: exclusiveMaximum is a flag
    value = _number(s.get(exclusive))
    if value is not None:
        out.append((value, True, "EXCLUSIVE_" + stem))
    return out


def _implies(writer: Bound, reader: Bound, upper: bool) -> bool:
    if writer[0] == reader[0]:
        return writer[1] or not reader[1]
    return writer[0] < reader[0] if upper else writer[0] > reader[0]


def number_issues(case: Case, s: Mapping[str, Any], integers_only: bool) -> list[Issue]:
    issues: list[Issue] = []
    for upper in (True, False):
        written = [b for n in case for b in _bounds(n.schema, upper)]
        for bound in _bounds(s, upper):
            if not written:
                issues.append((f"{bound[2]}_ADDED", ""))
            elif not any(_implies(w, bound, upper) for w in written):
                issues.append((f"{bound[2]}_{'DECREASED' if upper else 'INCREASED'}", ""))
    step = _decimal(s.get("multipleOf"))
    if step is not None:
        steps = [d for n in case if (d := _decimal(n.schema.get("multipleOf"))) is not None]
        # Integers are all multiples of 1, hence of any divisor of 1.
        if not any(w % step == 0 for w in [*steps, *([Decimal(1)] if integers_only else [])]):
            if not steps:
                issues.append(("MULTIPLE_OF_ADDED", ""))
            elif any(step % w == 0 for w in steps):
                issues.append(("MULTIPLE_OF_EXPANDED", ""))
            else:
                issues.append(("MULTIPLE_OF_CHANGED", ""))
    return issues


# Small helpers.


def product(cases: list[Case], part: list[Case]) -> list[Case]:
    if len(cases) * len(part) > MAX_CASES:
        return cases  # too many cases: leave this writer constraint out (reports more, never less)
    return [[*a, *b] for a in cases for b in part]


def prefixed(at: str, issues: Iterable[Issue]) -> list[Issue]:
    return [(name, at + path) for name, path in issues]


def escaped(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _number(x: Any) -> float | None:
    return x if isinstance(x, int | float) and not isinstance(x, bool) else None


def _decimal(x: Any) -> Decimal | None:
    if _number(x) is None:
        return None
    try:
        return Decimal(str(x))  # exact decimal arithmetic: 0.3 is a multiple of 0.1
    except InvalidOperation:
        return None


def as_mapping(x: Any) -> Mapping[str, Any]:
    return x if isinstance(x, Mapping) else {}


def as_list(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


def as_strings(x: Any) -> list[str]:
    return [p for p in x if isinstance(p, str)] if isinstance(x, list) else []


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None  # an ECMA 262 pattern Python's re cannot read: taken as matching nothing


def _search(pattern: str, name: str) -> bool:
    compiled = _compiled(pattern)
    return compiled is not None and compiled.search(name) is not None
