"""ssl_principal_mapping_rules (Kafka's ssl.principal.mapping.rules): parsing, rule order, groups, case."""

from __future__ import annotations

import pytest

from schooner.security.principal import NoMatchingRule, map_name, parse_rules, principal_for

ALICE = "CN=alice,OU=clients,O=Schooner"


def name(rules: str, dn: str = ALICE) -> str:
    return map_name(parse_rules(rules), dn)


def test_default_is_the_whole_subject() -> None:
    assert name("DEFAULT") == ALICE
    assert principal_for(parse_rules("DEFAULT"), ALICE) == f"User:{ALICE}"


def test_a_rule_applies_only_when_its_pattern_matches_the_whole_subject() -> None:
    assert name("RULE:CN=([^,]*),OU=clients,.*/$1/") == "alice"
    assert name("RULE:CN=([^,]*),OU=clients/$1/, DEFAULT") == ALICE  # a prefix match is not a match
    with pytest.raises(NoMatchingRule, match="CN=alice"):
        name("RULE:^CN=(.*),OU=admins,.*$/$1/")


def test_rules_are_tried_in_order() -> None:
    rules = "RULE:^CN=([^,]*),OU=admins,.*$/admin-$1/, RULE:^CN=([^,]*),OU=clients,.*$/client-$1/, DEFAULT"
    assert name(rules) == "client-alice"
    assert name(rules, "CN=root,OU=admins,O=Schooner") == "admin-root"
    assert name(rules, "CN=svc,O=Elsewhere") == "CN=svc,O=Elsewhere"
    assert name("DEFAULT, RULE:^CN=([^,]*),.*$/$1/") == ALICE  # DEFAULT applies to everything


def test_several_groups_and_case_flags() -> None:
    rule = "RULE:^CN=([^,]*),OU=([^,]*),O=(.*)$/$1@$2.$3/"
    assert name(rule) == "alice@clients.Schooner"
    assert name(rule + "L") == "alice@clients.schooner"
    assert name(rule + "U") == "ALICE@CLIENTS.SCHOONER"


def test_group_numbers_past_the_pattern_groups_are_text() -> None:
    assert name("RULE:^CN=([^,]*),.*$/$1-$2/") == "alice-$2"
    assert name("RULE:^CN=([^,]*),.*$/$12/") == "alice2"  # $12 with one group: $1, then "2"
    assert name(r"RULE:^CN=([^,]*),.*$/\$1=$1/") == "$1=alice"  # an escaped dollar is literal
    assert name("RULE:^CN=([^,]*),.*$/[$0]/") == f"[{ALICE}]"


def test_named_groups_in_java_and_python_spelling() -> None:
    assert name("RULE:^CN=(?<user>[^,]*),.*$/${user}/U") == "ALICE"
    assert name("RULE:^CN=(?P<user>[^,]*),.*$/${user}/") == "alice"


def test_slashes_commas_and_whitespace_inside_and_between_rules() -> None:
    dn = "CN=team/alice,OU=clients,O=Schooner"
    assert name(r"RULE:^CN=([^\/]*)\/([^,]*),.*$/$2 of $1/", dn) == "alice of team"
    assert name(r"RULE:^CN=([^,]*),.*$/a\/b-$1/") == "a/b-alice"
    rules = (
        "\n  RULE:^CN=([^,]*),OU=nobody,.*$/x/ ,"
        "\n  RULE:^CN=([^,]*),OU=clients,O=Schooner$/$1/L ,,\n DEFAULT \n"
    )
    assert name(rules) == "alice"


@pytest.mark.parametrize(
    ("rules", "why"),
    [
        ("", "no rule"),
        (" , ", "no rule"),
        ("NOPE", "DEFAULT or RULE"),
        ("DEFAULTS", "unexpected 'S'"),
        ("RULE:^CN=.*$", "pattern does not end"),
        ("RULE:^CN=.*$/x", "replacement does not end"),
        ("RULE:^CN=.*$/x/Q", "unexpected 'Q'"),
        ("RULE:^CN=(.*$/x/", "bad pattern"),
        ("RULE:^CN=(.*)$/$x/", "not followed by a group"),
        ("RULE:^CN=(.*)$/${who}/", "group the pattern lacks"),
        ("RULE:^CN=(.*)$/x\\/", "replacement does not end"),
    ],
)
def test_bad_rules_are_refused_with_the_reason(rules: str, why: str) -> None:
    with pytest.raises(ValueError, match="ssl_principal_mapping_rules") as raised:
        parse_rules(rules)
    assert why in str(raised.value)
