"""Topic configs as the config APIs show and check them: every config with its value, source and
synonyms, and the check of one name and value. Shared by the config handlers (admin_configs.py) and
CreateTopics (admin_topics.py); it handles no request itself."""

from __future__ import annotations

from collections.abc import Mapping

from ...storage.topics.config import CONFIG_DEFS, ConfigSource, ConfigValue, InvalidConfig, validate

DYNAMIC_TOPIC_CONFIG = ConfigSource.DYNAMIC_TOPIC_CONFIG
STATIC_BROKER_CONFIG = ConfigSource.STATIC_BROKER_CONFIG
DEFAULT_CONFIG = ConfigSource.DEFAULT_CONFIG


def check_config(name: str, value: str | None) -> None:
    """validate(), with a message that names the config."""
    if name not in CONFIG_DEFS:
        raise InvalidConfig(f"Unknown topic config name: {name}")
    try:
        validate(name, value)
    except InvalidConfig as exc:
        raise InvalidConfig(f"Invalid value {value} for configuration {name}: {exc}") from None


def topic_config_values(
    overrides: Mapping[str, str], defaults: Mapping[str, str], fixed: Mapping[str, str]
) -> list[ConfigValue]:
    """Every topic config with its value, source and synonyms (the topic's, then the broker's).

    fixed holds the configs set once at creation (see Topic.fixed_configs); each shows as the topic's
    own when it differs from the broker's default."""
    values = []
    overrides = {k: v for k, v in overrides.items() if k not in fixed}
    for name, value in fixed.items():
        if value != str(defaults.get(name, CONFIG_DEFS[name].default)):
            overrides[name] = value
    for name, definition in CONFIG_DEFS.items():
        broker_name = definition.broker_name
        synonyms: list[tuple[str, str | None, int]] = []
        if name in overrides:
            synonyms.append((name, overrides[name], DYNAMIC_TOPIC_CONFIG))
        if name in defaults:
            synonyms.append((broker_name, str(defaults[name]), STATIC_BROKER_CONFIG))
        # As Kafka: the default is a synonym only through a broker config that has one of its own.
        shown, source = (synonyms[0][1], synonyms[0][2]) if synonyms else (definition.default, DEFAULT_CONFIG)
        if definition.synonym is not None and definition.broker_default_listed:
            synonyms.append((broker_name, definition.default, DEFAULT_CONFIG))
        values.append(
            ConfigValue(
                name=name,
                value=shown,
                source=source,
                read_only=definition.read_only,
                config_type=definition.kind,
                synonyms=tuple(synonyms),
                documentation=definition.documentation,
            )
        )
    return values
