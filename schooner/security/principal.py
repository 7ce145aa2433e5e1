"""Kafka's ssl.principal.mapping.rules: from a client certificate's subject to a principal name.

The setting is a comma-separated list of rules, tried in order; the first that applies names the
principal ("User:<name>"):
- DEFAULT: the whole subject, in RFC 2253 form ("CN=alice,OU=clients,O=Schooner");
- RULE:pattern/replacement/ with an optional L or U after it (lower or upper case the result): applies
  when the regular expression matches the whole subject, and the name is the subject with each match
  replaced. In the replacement, $1 ... $n are groups (a number past the pattern's groups is literal text,
  as in Kafka), ${name} a named group, and a backslash makes the next character literal. Inside the
  pattern and the replacement a backslash escapes a slash ("\\/"); commas need no escape.
No rule applying is an error (Kafka refuses such a client): NoMatchingRule.

Patterns are Python regular expressions; the Java ones Kafka users write (anchors, groups, classes, lazy
quantifiers, "(?<name>...)") read the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PRINCIPAL_TYPE = "User"
DEFAULT_RULES = "DEFAULT"
_JAVA_NAMED_GROUP = re.compile(r"\(\?<(?=[A-Za-z])")  # Java's (?<name>...), not a look-behind


class NoMatchingRule(ValueError):
    """No mapping rule applies to the subject."""


# A replacement, compiled: literal text, or a group (by number or name).
_Part = str | int | tuple[str]


@dataclass(frozen=True, slots=True)
class MappingRule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: tuple[_Part, ...] = ()
    case: str = ""  # "L", "U" or ""

    def apply(self, dn: str) -> str | None:
        """The name this rule gives the subject, or None when the rule does not apply."""
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        name = self.pattern.sub(self._expand, dn)
        if self.case == "L":
            return name.lower()
        if self.case == "U":
            return name.upper()
        return name

    def _expand(self, match: re.Match[str]) -> str:
        out = []
        for part in self.replacement:
            if isinstance(part, str):
                out.append(part)
            else:
                out.append(match.group(part if isinstance(part, int) else part[0]) or "")
        return "".join(out)


def _until_slash(text: str, pos: int, what: str) -> tuple[str, int]:
    """The text up to the next unescaped "/" (backslash escapes kept), and the position after it."""
    out = []
    while pos < len(text):
        ch = text[pos]
        if ch == "\\":
            if pos + 1 >= len(text):
                break
            out.append(text[pos : pos + 2])
            pos += 2
        elif ch == "/":
            return "".join(out), pos + 1
        else:
            out.append(ch)
            pos += 1
    raise ValueError(f"the {what} does not end with an unescaped '/'")


def _compile_replacement(text: str, pattern: re.Pattern[str]) -> tuple[_Part, ...]:
    """Java's replacement syntax, with Kafka's reading of a group number past the last group as text."""
    parts: list[_Part] = []
    literal: list[str] = []
    groups = pattern.groups
    pos = 0
    while pos < len(text):
        ch = text[pos]
        if ch == "\\":
            if pos + 1 >= len(text):
                raise ValueError("the replacement ends with a lone backslash")
            literal.append(text[pos + 1])
            pos += 2
            continue
        if ch != "$":
            literal.append(ch)
            pos += 1
            continue
        nxt = text[pos + 1 : pos + 2]
        if nxt == "{":
            close = text.find("}", pos)
            name = text[pos + 2 : close] if close > 0 else ""
            if not name or name not in pattern.groupindex:
                raise ValueError(f"the replacement names a group the pattern lacks: {text[pos:]!r}")
            parts += ["".join(literal), (name,)]
            literal = []
            pos = close + 1
        elif nxt.isdigit() and nxt.isascii():
            number = int(nxt)
            if number > groups:  # Kafka keeps "$4" as text when the pattern has fewer groups
                literal.append("$")
                pos += 1
                continue
            pos += 2
            # Further digits belong to the number while it stays a group of the pattern (Java's rule).
            while pos < len(text) and text[pos].isdigit() and number * 10 + int(text[pos]) <= groups:
                number = number * 10 + int(text[pos])
                pos += 1
            parts += ["".join(literal), number]
            literal = []
        else:
            raise ValueError(f"'$' in the replacement is not followed by a group: {text[pos:]!r}")
    parts.append("".join(literal))
    return tuple(part for part in parts if part != "")


def _rule(text: str, pos: int) -> tuple[MappingRule, int]:
    if text.startswith("DEFAULT", pos):
        return MappingRule(None), pos + len("DEFAULT")
    if not text.startswith("RULE:", pos):
        raise ValueError("a rule is DEFAULT or RULE:pattern/replacement/[L|U]")
    source, pos = _until_slash(text, pos + len("RULE:"), "pattern")
    replacement, pos = _until_slash(text, pos, "replacement")
    case = ""
    if text[pos : pos + 1] in ("L", "U"):
        case, pos = text[pos], pos + 1
    try:
        pattern = re.compile(_JAVA_NAMED_GROUP.sub("(?P<", source))
    except re.error as exc:
        raise ValueError(f"bad pattern {source!r}: {exc}") from None
    return MappingRule(pattern, _compile_replacement(replacement, pattern), case), pos


def parse_rules(text: str) -> tuple[MappingRule, ...]:
    """The rules of an ssl.principal.mapping.rules value; ValueError says what is wrong with it."""
    rules: list[MappingRule] = []
    pos = 0
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        if text[pos] == ",":  # an empty rule, skipped as Kafka does
            pos += 1
            continue
        start = pos
        try:
            rule, pos = _rule(text, pos)
        except ValueError as exc:
            raise ValueError(f"ssl_principal_mapping_rules: {exc} (at {text[start:]!r})") from None
        rules.append(rule)
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos < len(text) and text[pos] != ",":
            raise ValueError(
                f"ssl_principal_mapping_rules: unexpected {text[pos:]!r} after the rule {text[start:pos]!r}"
            )
        pos += 1
    if not rules:
        raise ValueError("ssl_principal_mapping_rules has no rule (DEFAULT maps the whole subject)")
    return tuple(rules)


def map_name(rules: tuple[MappingRule, ...], dn: str) -> str:
    """The name the first applying rule gives the subject; NoMatchingRule when none applies."""
    for rule in rules:
        name = rule.apply(dn)
        if name is not None:
            return name
    raise NoMatchingRule(f"no ssl_principal_mapping_rules rule applies to {dn!r}")


def principal_for(rules: tuple[MappingRule, ...], dn: str) -> str:
    """The principal ("User:<name>") of a certificate subject."""
    return f"{PRINCIPAL_TYPE}:{map_name(rules, dn)}"
