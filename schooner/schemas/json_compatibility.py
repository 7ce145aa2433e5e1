"""Whether data written with one JSON Schema can be read with another: json_schema.py's `read_issues`.

The question asked is "is every instance valid under the writer also valid under the reader?" (a BACKWARD
check with the new schema as reader). It is answered by walking both schemas side by side, and each reason
found is named by the difference type Confluent's registry uses for it, with the JSON pointer (in the
reader's terms) where it happens: "TYPE_NARROWED at #/properties/age".

How the two sides are walked:
- The writer is flattened into cases: `allOf` members and a `$ref`'s target join the conjunction of
  constraints, each `anyOf`/`oneOf` branch makes a case of its own; every case must fit the reader. The
  tightest writer constraint of a case wins (the lowest maxLength of its conjuncts, the intersection of
  their types...).
- The reader is checked piece by piece: every `allOf` member and `$ref` target must hold, some `anyOf`
  or `oneOf` branch must.
- A writer limited to finitely many values (`enum`, `const`, or only null/boolean) is exact: each value
  the writer accepts is validated against the reader.
- A recursive schema is followed until a pair of subschemas repeats, which is then taken as compatible.

Covered, reported as incompatible:
- types: TYPE_CHANGED, TYPE_NARROWED (number to integer, a type list shortened, a type added to a schema
  without one); integer to number and type lists that grow are compatible;
- enum/const: ENUM_ARRAY_NARROWED (a writer value the reader rejects, or an enum the writer did not have);
- strings: MAX_LENGTH_ADDED/_DECREASED, MIN_LENGTH_ADDED/_INCREASED, PATTERN_ADDED/_CHANGED;
- numbers: (EXCLUSIVE_)MAXIMUM_ADDED/_DECREASED, (EXCLUSIVE_)MINIMUM_ADDED/_INCREASED (draft 4's boolean
  exclusiveMaximum/exclusiveMinimum too), MULTIPLE_OF_ADDED/_EXPANDED/_CHANGED (a multiple of the
  reader's multipleOf is fine);
- objects, by the content model of each side for every property name either side declares, open
  (additionalProperties absent or true), closed (false) or partially open (a schema, or patternProperties):
  PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL (the reader constrains a property an open writer may have written
  with any value), PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
  PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL, PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
  REQUIRED_ATTRIBUTE_ADDED, REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL, ADDITIONAL_PROPERTIES_REMOVED,
  ADDITIONAL_PROPERTIES_NARROWED, MAX_PROPERTIES_ADDED/_DECREASED, MIN_PROPERTIES_ADDED/_INCREASED,
  DEPENDENCY_ARRAY_ADDED/_EXTENDED, DEPENDENCY_SCHEMA_ADDED (dependencies, dependentRequired,
  dependentSchemas), and propertyNames compared as a subschema; nested properties recursively. Compatible,
  as in Confluent's rules: a property removed from an open reader, one added to a closed writer, a
  required property removed, and a newly required property that has a "default" in the reader
  (REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED);
- arrays: items recursively, tuples (items as a list with additionalItems, or 2020-12 prefixItems with
  items) with ITEM_ADDED_TO_OPEN_CONTENT_MODEL, ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
  ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL, ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
  ADDITIONAL_ITEMS_REMOVED/_NARROWED; MAX_ITEMS_ADDED/_DECREASED, MIN_ITEMS_ADDED/_INCREASED,
  UNIQUE_ITEMS_ADDED;
- combinations: PRODUCT_TYPE_EXTENDED (a reader allOf longer than the writer's, with a member the writer
  does not imply), SUM_TYPE_NARROWED (a writer anyOf/oneOf branch that no branch of a shorter reader list
  accepts), COMBINED_TYPE_SUBSCHEMAS_CHANGED (the same with a reader list as long or longer), and, when
  the writer had no combination, the closest reader branch's own differences; `not` compared the other way
  round (NOT_TYPE_NARROWED when the reader's `not` excludes something the writer's does not);
- `$ref` followed on both sides, to local definitions and to references; its sibling keywords count from
  draft 2019-09 on and are ignored for draft 7 and older, as validation does.

Not covered (never reported): if/then/else, contains/minContains/maxContains, unevaluatedProperties/
unevaluatedItems, $dynamicRef/$recursiveRef, format and content* (annotations), the exclusivity of a
reader's oneOf (a writer case matching two branches), and subschemas nested more than 100 levels deep.
Some reader constraints that several writer keywords imply only together are reported although they hold
(a writer maxItems closing later tuple positions, integer bounds, a required property counted towards
minProperties, two differently written patterns matching the same names): where the writer is
approximated (also beyond 64 anyOf/oneOf cases, or at an unresolvable writer $ref), the check may report
too much, not too little.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jsonschema.protocols import Validator
from referencing import Specification
from referencing.exceptions import Unresolvable

from .json_keywords import (
    ALL_TYPES,
    Case,
    Issue,
    Kind,
    Node,
    as_list,
    as_mapping,
    as_strings,
    case_types,
    content_difference,
    content_kind,
    covers,
    declared_types,
    escaped,
    extra_governing,
    item_form,
    item_governing,
    json_type,
    max_issues,
    min_issues,
    number_issues,
    pattern_governing,
    prefixed,
    product,
    property_governing,
    string_issues,
)

if TYPE_CHECKING:
    pass  # not exported by the package, but its lookups return it

# How one schema governs a given name or position: its kind and the subschemas that apply.
Governing = Callable[[Any], tuple[Kind, list[Any]]]

MAX_DEPTH = 100
DEPENDENCY_KEYWORDS = ("dependencies", "dependentRequired", "dependentSchemas")


@dataclass(frozen=True, slots=True)
class Side:
    """One schema of a comparison: its root, a validator to evolve for its subschemas, its dialect."""

    root: Node
    validator: Validator
    specification: Specification[Any]
    legacy_ref: bool  # draft 7 and older: keywords beside "$ref" are ignored


def read_issues(reader: Side, writer: Side) -> list[str]:
    """Why data valid under `writer` may be invalid under `reader`; empty when none was found."""
    checker = _Checker(writer, reader, {}, set(), True)
    return [f"{name} at #{path}" for name, path in checker.compare([writer.root], reader.root, 0)]


class _Checker:
    """Compares writer subschemas with reader subschemas; `not` flips the roles (see _not)."""

    def __init__(
        self,
        writer: Side,
        reader: Side,
        memo: dict[tuple[object, ...], list[Issue]],
        active: set[tuple[object, ...]],
        forward: bool,
    ) -> None:
        self.writer = writer
        self.reader = reader
        self._memo = memo
        self._active = active
        self._forward = forward
        self._flipped: _Checker | None = None

    def compare(self, wnodes: Sequence[Node], r: Node, depth: int) -> list[Issue]:
        """Issues for data valid under all of `wnodes` (none: any data) read with `r`."""
        key = (self._forward, tuple(sorted(id(n.schema) for n in wnodes)), id(r.schema))
        done = self._memo.get(key)
        if done is not None:
            return done
        if key in self._active or depth > MAX_DEPTH:
            return []  # a recursive schema met itself: the rest of the cycle decides
        self._active.add(key)
        try:
            issues: list[Issue] = []
            for case in self._cases(wnodes):
                issues.extend(self._case(case, r, depth))
        finally:
            self._active.discard(key)
        result = list(dict.fromkeys(issues))
        self._memo[key] = result
        return result

    # The writer, flattened into cases.

    def _cases(self, wnodes: Sequence[Node]) -> list[Case]:
        cases: list[Case] = [[]]
        for n in wnodes:
            cases = product(cases, self._flatten(n, frozenset()))
        return cases

    def _flatten(self, n: Node, seen: frozenset[int]) -> list[Case]:
        s = n.schema
        if s is False:
            return []
        if not isinstance(s, Mapping) or not s or id(s) in seen:
            return [[]]
        seen = seen | {id(s)}
        parts: list[list[Case]] = []
        ref = s.get("$ref")
        if isinstance(ref, str):
            target = self._resolve(self.writer, n, ref)
            # An unresolvable writer $ref only loses writer constraints: more may be reported, not less.
            if target is not None:
                parts.append(self._flatten(target, seen))
            if self.writer.legacy_ref:
                return parts[0] if parts else [[]]
        # The node itself carries its plain keywords; the checks below never read its combinators.
        parts.append([[n]])
        for member in as_list(s.get("allOf")):
            parts.append(self._flatten(self._child(self.writer, n, member), seen))
        for keyword in ("anyOf", "oneOf"):
            if keyword in s:
                branches = [self._flatten(self._child(self.writer, n, b), seen) for b in as_list(s[keyword])]
                parts.append([case for cases in branches for case in cases])
        cases: list[Case] = [[]]
        for part in parts:
            cases = product(cases, part)
        return cases

    def _case(self, case: Case, r: Node, depth: int) -> list[Issue]:
        values = self._finite_values(case)
        if values is None:
            return self._check(case, r, depth, frozenset(), None)
        reader = self._validator(self.reader, r)
        if all(reader.is_valid(v) for v in values):
            return []
        # The answer is exact; the structural walk only names it (with the types of the values).
        return self._check(case, r, depth, frozenset(), values) or [("ENUM_ARRAY_NARROWED", "")]

    def _finite_values(self, case: Case) -> list[Any] | None:
        """The values a case accepts when they can be listed: each is then validated against the reader."""
        candidates: list[Any] | None = None
        for n in case:
            if "const" in n.schema:
                candidates = [n.schema["const"]]
                break
            if isinstance(n.schema.get("enum"), list):
                candidates = list(n.schema["enum"])
                break
        if candidates is None:
            types = case_types(case)
            if types is None or not types or not types <= {"null", "boolean"}:
                return None
            candidates = ([None] if "null" in types else []) + ([False, True] if "boolean" in types else [])
        writer = [self._validator(self.writer, n) for n in case]
        return [v for v in candidates if all(w.is_valid(v) for w in writer)]

    # The reader, piece by piece.

    def _check(
        self, case: Case, r: Node, depth: int, rseen: frozenset[int], values: list[Any] | None
    ) -> list[Issue]:
        s = r.schema
        if s is False:
            return [("TYPE_NARROWED", "")]
        if not isinstance(s, Mapping) or id(s) in rseen:
            return []
        rseen = rseen | {id(s)}
        issues: list[Issue] = []
        ref = s.get("$ref")
        if isinstance(ref, str):
            target = self._resolve(self.reader, r, ref)
            if target is None:
                issues.append(("UNRESOLVABLE_REFERENCE", "/$ref"))
            else:
                issues.extend(self._check(case, target, depth, rseen, values))
            if self.reader.legacy_ref:
                return issues
        issues.extend(self._plain(case, r, depth, values))
        issues.extend(self._combinations(case, r, depth, rseen, values))
        if "not" in s:
            issues.extend(self._not(case, r, depth))
        return issues

    def _combinations(
        self, case: Case, r: Node, depth: int, rseen: frozenset[int], values: list[Any] | None
    ) -> list[Issue]:
        s = r.schema
        issues: list[Issue] = []
        # The writer's own combinations, as written, name the difference (the case is one branch of them).
        w_product = max((len(as_list(n.schema.get("allOf"))) for n in case), default=0)
        w_sum = max((len(as_list(n.schema.get(k))) for n in case for k in ("anyOf", "oneOf")), default=0)
        members = as_list(s.get("allOf"))
        for i, member in enumerate(members):
            sub = self._check(case, self._child(self.reader, r, member), depth, rseen, values)
            if sub and len(members) > w_product:
                issues.append(("PRODUCT_TYPE_EXTENDED", "/allOf"))
                break
            issues.extend(prefixed(f"/allOf/{i}", sub))
        for keyword in ("anyOf", "oneOf"):
            if keyword not in s:
                continue
            branches = as_list(s[keyword])
            results: list[list[Issue]] = []
            for b in branches:
                results.append(self._check(case, self._child(self.reader, r, b), depth, rseen, values))
                if not results[-1]:
                    break
            if results and not results[-1]:
                continue
            if w_sum > len(branches):
                issues.append(("SUM_TYPE_NARROWED", f"/{keyword}"))
            elif w_sum or not results:
                issues.append(("COMBINED_TYPE_SUBSCHEMAS_CHANGED", f"/{keyword}"))
            else:
                closest = min(range(len(results)), key=lambda j: len(results[j]))
                issues.extend(prefixed(f"/{keyword}/{closest}", results[closest]))
        return issues

    def _not(self, case: Case, r: Node, depth: int) -> list[Issue]:
        # Data the writer excludes with "not" W is fine for a reader excluding R when R is within W: the
        # same question with the roles swapped.
        excluded = self._child(self.reader, r, r.schema["not"])
        writer_excluded = [self._child(self.writer, n, n.schema["not"]) for n in case if "not" in n.schema]
        flipped = self._flip()
        if any(not flipped.compare([excluded], w, depth + 1) for w in writer_excluded):
            return []
        return [("NOT_TYPE_NARROWED", "/not")]

    def _plain(self, case: Case, r: Node, depth: int, values: list[Any] | None) -> list[Issue]:
        s = r.schema
        written = {json_type(v) for v in values} if values is not None else case_types(case)
        if written is not None and not written:
            return []  # the case's types exclude each other: the writer writes nothing here
        written = written if written is not None else set(ALL_TYPES)
        issues: list[Issue] = []
        read = written
        rtypes = declared_types(s)
        if rtypes is not None:
            lost = {t for t in written if not covers(rtypes, t)}
            if lost:
                narrowed = lost != written or (written == {"number"} and "integer" in rtypes)
                issues.append(("TYPE_NARROWED" if narrowed else "TYPE_CHANGED", ""))
            read = written - lost
        if "enum" in s or "const" in s:
            listed = self.reader.validator.evolve(schema={k: s[k] for k in ("enum", "const") if k in s})
            if values is None or any(not listed.is_valid(v) for v in values):
                issues.append(("ENUM_ARRAY_NARROWED", ""))
        if "string" in read:
            issues.extend(string_issues(case, s))
        if read & {"number", "integer"}:
            issues.extend(number_issues(case, s, integers_only=read <= {"integer"}))
        if "object" in read:
            issues.extend(self._object_issues(case, r, depth))
        if "array" in read:
            issues.extend(self._array_issues(case, r, depth))
        return issues

    # Objects.

    def _object_issues(self, case: Case, r: Node, depth: int) -> list[Issue]:
        s = r.schema
        issues = max_issues(case, s, "maxProperties", "MAX_PROPERTIES")
        issues += min_issues(case, s, "minProperties", "MIN_PROPERTIES")
        w_required = {p for n in case for p in as_strings(n.schema.get("required"))}
        r_required = as_strings(s.get("required"))
        r_properties = as_mapping(s.get("properties"))
        names = dict.fromkeys(
            [*(p for n in case for p in as_mapping(n.schema.get("properties"))), *r_properties, *r_required]
        )
        for p in names:
            at = "/properties/" + escaped(p)
            wkind, wnodes = self._writer_governing(case, functools.partial(property_governing, p=p))
            rkind, rsubs = property_governing(s, p)
            if p in r_required and p not in w_required:
                declared = r_properties.get(p)
                if isinstance(declared, Mapping) and "default" in declared:
                    pass  # REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED: compatible by Confluent's rules
                elif wkind in ("closed", "partial"):
                    issues.append(("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", at))
                else:
                    issues.append(("REQUIRED_ATTRIBUTE_ADDED", at))
            if wkind == "closed":
                continue  # the writer never writes p
            issues += self._governed(wnodes, wkind, r, rsubs, rkind, at, depth, "PROPERTY")
        issues += self._other_properties(case, r, depth)
        issues += self._dependency_issues(case, r, w_required, depth)
        names_schema = s.get("propertyNames")
        if names_schema is not None and content_kind(names_schema) != "open":
            wnames = [
                self._child(self.writer, n, n.schema["propertyNames"])
                for n in case
                if "propertyNames" in n.schema
            ]
            sub = self.compare(wnames, self._child(self.reader, r, names_schema), depth + 1)
            issues += prefixed("/propertyNames", sub)
        return issues

    def _other_properties(self, case: Case, r: Node, depth: int) -> list[Issue]:
        """Property names neither side declares: patternProperties and additionalProperties."""
        s = r.schema
        issues: list[Issue] = []
        r_patterns = as_mapping(s.get("patternProperties"))
        r_extra = s.get("additionalProperties", True)
        r_extra_kind = content_kind(r_extra)
        for pattern, sub_schema in r_patterns.items():
            # Names matching a reader pattern: governed in the writer by the same pattern, else by its
            # catch-all when it has no other pattern (patterns are compared as written, not by meaning).
            wkind, wnodes = self._writer_governing(
                case, functools.partial(pattern_governing, pattern=pattern)
            )
            if wkind == "closed":
                continue
            sub = self.compare(wnodes, self._child(self.reader, r, sub_schema), depth + 1)
            issues += prefixed("/patternProperties/" + escaped(pattern), sub)
        if r_extra_kind == "open":
            return issues
        extra_node = self._child(self.reader, r, r_extra)
        name = f"ADDITIONAL_PROPERTIES_{'REMOVED' if r_extra_kind == 'closed' else 'NARROWED'}"
        for n in case:
            for pattern, sub_schema in as_mapping(n.schema.get("patternProperties")).items():
                if pattern not in r_patterns:
                    wnode = self._child(self.writer, n, sub_schema)
                    if self.compare([wnode], extra_node, depth + 1):
                        issues.append((name, "/additionalProperties"))
        wkind, wnodes = self._writer_governing(case, extra_governing)
        if wkind != "closed" and self.compare(wnodes, extra_node, depth + 1):
            issues.append((name, "/additionalProperties"))
        return issues

    def _dependency_issues(self, case: Case, r: Node, w_required: set[str], depth: int) -> list[Issue]:
        issues: list[Issue] = []
        for keyword in DEPENDENCY_KEYWORDS:
            for p, dependency in as_mapping(r.schema.get(keyword)).items():
                wkind, _ = self._writer_governing(case, functools.partial(property_governing, p=p))
                if wkind == "closed":
                    continue  # the writer never writes p: the dependency never applies
                at = f"/{keyword}/{escaped(p)}"
                w_dependencies = [
                    (n, as_mapping(n.schema.get(k))[p])
                    for n in case
                    for k in DEPENDENCY_KEYWORDS
                    if p in as_mapping(n.schema.get(k))
                ]
                w_arrays = [set(as_strings(d)) for _, d in w_dependencies if isinstance(d, list)]
                if isinstance(dependency, list):
                    guaranteed = w_required.union(*w_arrays)
                    if any(q not in guaranteed for q in as_strings(dependency)):
                        name = "DEPENDENCY_ARRAY_EXTENDED" if w_arrays else "DEPENDENCY_ARRAY_ADDED"
                        issues.append((name, at))
                    continue
                w_schemas = [
                    self._child(self.writer, n, d) for n, d in w_dependencies if not isinstance(d, list)
                ]
                sub = self.compare([*case, *w_schemas], self._child(self.reader, r, dependency), depth + 1)
                if sub:
                    issues += prefixed(at, sub) if w_schemas else [("DEPENDENCY_SCHEMA_ADDED", at)]
        return issues

    # Arrays.

    def _array_issues(self, case: Case, r: Node, depth: int) -> list[Issue]:
        s = r.schema
        issues = max_issues(case, s, "maxItems", "MAX_ITEMS")
        issues += min_issues(case, s, "minItems", "MIN_ITEMS")
        if s.get("uniqueItems") is True and not any(n.schema.get("uniqueItems") is True for n in case):
            issues.append(("UNIQUE_ITEMS_ADDED", ""))
        r_form = item_form(s)
        length = max([len(r_form.prefix), *(len(item_form(n.schema).prefix) for n in case)])
        positions: list[int | None] = [*range(length), None]
        for i in positions:
            wkind, wnodes = self._writer_governing(case, functools.partial(item_governing, i=i))
            if wkind == "closed":
                continue
            rkind, rsubs = item_governing(s, i)
            declared = i is not None and i < len(r_form.prefix)
            at = f"/{r_form.prefix_keyword}/{i}" if declared else f"/{r_form.rest_keyword}"
            # Without tuples on either side "items" is simply a subschema: its own differences are named.
            noun = "ITEM" if length else ""
            issues += self._governed(wnodes, wkind, r, rsubs, rkind, at, depth, noun)
        return issues

    # Shared by properties and array positions.

    def _writer_governing(self, case: Case, governing: Governing) -> tuple[Kind, list[Node]]:
        """How the case's conjuncts together govern a name or position: closed if any closes it."""
        kinds: list[Kind] = []
        nodes: list[Node] = []
        for n in case:
            kind, subs = governing(n.schema)
            if kind == "closed":
                return "closed", []
            kinds.append(kind)
            nodes.extend(self._child(self.writer, n, sub) for sub in subs)
        for kind in ("declared", "partial"):
            if kind in kinds:
                return kind, nodes
        return "open", nodes

    def _governed(
        self,
        wnodes: list[Node],
        wkind: Kind,
        r: Node,
        rsubs: list[Any],
        rkind: Kind,
        at: str,
        depth: int,
        noun: str,
    ) -> list[Issue]:
        issues: list[Issue] = []
        for sub_schema in rsubs:
            sub = self.compare(wnodes, self._child(self.reader, r, sub_schema), depth + 1)
            if sub:
                name = content_difference(noun, wkind, rkind) if noun else None
                issues += [(name, at)] if name else prefixed(at, sub)
        return issues

    # Helpers bound to a side.

    def _child(self, side: Side, parent: Node, sub: Any) -> Node:
        resolver = parent.resolver
        if isinstance(sub, Mapping) and ("$id" in sub or "id" in sub):
            resolver = resolver.in_subresource(side.specification.create_resource(sub))
        return Node(sub, resolver)

    def _resolve(self, side: Side, n: Node, ref: str) -> Node | None:
        try:
            resolved = n.resolver.lookup(ref)
        except Unresolvable:
            return None
        return self._child(side, Node(None, resolved.resolver), resolved.contents)

    def _validator(self, side: Side, n: Node) -> Validator:
        return side.validator.evolve(schema=n.schema, _resolver=n.resolver)

    def _flip(self) -> _Checker:
        if self._flipped is None:
            self._flipped = _Checker(self.reader, self.writer, self._memo, self._active, not self._forward)
            self._flipped._flipped = self
        return self._flipped
