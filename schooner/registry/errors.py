"""Confluent's error answers: an HTTP status and an error code of the form XXX or XXXYY (XXX the status), with
a message, in the body {"error_code": ..., "message": ...}."""

from __future__ import annotations


class RegistryError(Exception):
    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: object) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(detail: str = "Schema not found") -> RegistryError:
    return RegistryError(404, 40403, detail)


def subject_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(
        404, 40404, f"Subject '{subject}' was soft deleted. Set permanent=true to delete permanently"
    )


def subject_not_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(
        404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted"
    )


def version_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(
        404,
        40406,
        f"Subject '{subject}' Version {version} was soft deleted. Set permanent=true to delete permanently",
    )


def version_not_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(
        404,
        40407,
        f"Subject '{subject}' Version {version} was not deleted first before being permanently deleted",
    )


def config_not_found(subject: str) -> RegistryError:
    return RegistryError(
        404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured"
    )


def mode_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")


def incompatible(messages: list[str]) -> RegistryError:
    detail = "; ".join(messages)
    return RegistryError(
        409, 409, f"Schema being registered is incompatible with an earlier schema for subject: {detail}"
    )


def invalid_schema(reason: str) -> RegistryError:
    # A parser's reason may say "Invalid schema: ..." itself: said once.
    return RegistryError(422, 42201, f"Invalid schema: {reason.removeprefix('Invalid schema: ')}")


def invalid_version(version: str) -> RegistryError:
    return RegistryError(
        422,
        42202,
        f"The specified version '{version}' is not a valid version id. Allowed values are between "
        '[1, 2^31-1] and the string "latest"',
    )


def invalid_compatibility_level(level: object) -> RegistryError:
    return RegistryError(
        422,
        42203,
        f"Invalid compatibility level {level!r}. Valid values are none, backward, forward, full, "
        "backward_transitive, forward_transitive, and full_transitive",
    )


def invalid_mode(mode: object) -> RegistryError:
    return RegistryError(
        422, 42204, f"Invalid mode {mode!r}. Valid values are READWRITE, READONLY and IMPORT"
    )


def not_permitted(message: str) -> RegistryError:
    return RegistryError(422, 42205, message)


def reference_exists(message: str) -> RegistryError:
    return RegistryError(422, 42206, message)


def id_in_use(schema_id: int) -> RegistryError:
    return RegistryError(
        422, 42207, f"Schema id {schema_id} is already in use by another schema; it cannot be overwritten"
    )


def invalid_subject(subject: str) -> RegistryError:
    return RegistryError(422, 42208, f"Invalid subject {subject!r}")


def bad_request(message: str) -> RegistryError:
    return RegistryError(400, 400, message)


def unprocessable(message: str) -> RegistryError:
    return RegistryError(422, 422, message)


def store_error(message: str) -> RegistryError:
    return RegistryError(500, 50001, f"Error in the backend data store: {message}")
