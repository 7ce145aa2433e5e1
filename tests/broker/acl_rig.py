"""A broker with the authorizer on, and ACLs set for the tests in tests/broker/test_authorization*.py.

On a PLAINTEXT listener every client is User:ANONYMOUS, so the tests grant and deny to that principal;
the principal is a parameter, so the same tests can run for SASL users and certificate principals. The
rig writes bindings straight into Redis (storage/security/acls.py), as another broker's CreateAcls
would, so that a test's principal needs no rights on the cluster to set up its own ACLs; each change
waits until the broker has loaded it. Topics are made by the broker itself, on no one's behalf.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from kio.schema.errors import ErrorCode

from schooner.broker.net.session import ANONYMOUS
from schooner.protocol.apis import request_type
from schooner.protocol.messages import make, sibling
from schooner.security.acls import (
    CLUSTER_NAME,
    AclBinding,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)
from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.redis.calls import run_sync
from schooner.storage.security import acls as acl_store
from tests.broker.helpers import wait
from tests.wire import call

T = 10  # seconds for one client call
Op = AclOperation
TOPIC, GROUP, CLUSTER, TXN = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
                              ResourceType.TRANSACTIONAL_ID)  # fmt: skip
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED


@dataclass
class Secured:
    """A running broker (tests/conftest.py RunningBroker) with `authorizer = true`."""

    broker: Any
    principal: str = ANONYMOUS

    def __post_init__(self) -> None:
        self.ks = Keyspace(self.broker.settings.keyspace)
        self.redis = client.connect_sync(self.broker.redis_url)

    @property
    def bootstrap(self) -> str:
        return str(self.broker.bootstrap)

    @property
    def port(self) -> int:
        return int(self.broker.port)

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap, "broker.address.family": "v4"})

    def binding(
        self,
        rtype: ResourceType,
        name: str,
        op: AclOperation,
        permission: PermissionType = PermissionType.ALLOW,
        pattern: PatternType = LITERAL,
        principal: str | None = None,
        host: str = "*",
    ) -> AclBinding:
        name = CLUSTER_NAME if rtype == CLUSTER else name
        return AclBinding(rtype, name, pattern, principal or self.principal, host, op, permission)

    def grant(self, rtype: ResourceType, name: str, *ops: AclOperation, **options: Any) -> None:
        self.change(add=[self.binding(rtype, name, op, **options) for op in ops])

    def deny(self, rtype: ResourceType, name: str, *ops: AclOperation, **options: Any) -> None:
        self.change(add=[self.binding(rtype, name, op, PermissionType.DENY, **options) for op in ops])

    def revoke(self, rtype: ResourceType, name: str, *ops: AclOperation, **options: Any) -> None:
        self.change(remove=[self.binding(rtype, name, op, **options) for op in ops])

    def change(self, add: Iterable[AclBinding] = (), remove: Iterable[AclBinding] = ()) -> None:
        """Writes the bindings into Redis, then waits until the broker's authorizer has them."""
        version = 0
        if add:
            version = run_sync(self.redis, acl_store.add(self.ks, add))[0]
        if remove:
            version = run_sync(self.redis, acl_store.remove(self.ks, remove))[0]
        authorizer = self.broker.broker.ctx.access.authorizer
        wait(lambda: authorizer.version >= version, 15, f"the broker loads ACL version {version}")

    def topic(self, name: str, partitions: int = 1) -> None:
        """Creates the topic on the broker's own behalf (no client's ACLs are involved)."""
        ctx = self.broker.broker.ctx
        self.broker.call(ctx.topics.create(name, partitions, {}))


def secure(broker_factory: Callable[..., Any], principal: str = ANONYMOUS, **settings: Any) -> Secured:
    return Secured(broker_factory(authorizer=True, **settings), principal)


def error_of(future: Any) -> int:
    """The Kafka error code a confluent-kafka admin future failed with (0 when it succeeded)."""
    try:
        future.result(T)
    except KafkaException as exc:
        error: KafkaError = exc.args[0]
        return int(error.code())
    return 0


# -- raw requests: the error codes and where a response carries them ---------------------------------
OK = ErrorCode.none
TOPIC_DENIED = ErrorCode.topic_authorization_failed
CLUSTER_DENIED = ErrorCode.cluster_authorization_failed
GROUP_DENIED = ErrorCode.group_authorization_failed
TXN_DENIED = ErrorCode.transactional_id_authorization_failed


def request(api: int, version: int, **fields: Any) -> Any:
    return make(request_type(api, version), **fields)


def nested(api: int, version: int, kind: str, /, **fields: Any) -> Any:
    """An entity of the request's version (`kind` names its class, e.g. "ListOffsetsTopic")."""
    return make(sibling(request_type(api, version), kind), **fields)


@dataclass(frozen=True)
class Case:
    """A request sent without ACLs (`denied` codes) and then with `grant` applied (`allowed` codes)."""

    build: Callable[[], Any]  # the request
    codes: Callable[[Any], list[Any]]  # where the response carries its errors
    grant: Callable[[Secured], None]  # the ACLs that allow it
    denied: list[Any]
    allowed: list[Any]

    def check(self, secured: Secured) -> None:
        """Sent on the wire: denied without the ACLs, allowed once they are granted."""
        assert self.codes(call(secured.port, self.build())) == self.denied
        self.grant(secured)
        assert self.codes(call(secured.port, self.build())) == self.allowed


def partitions_of(
    topics_field: str, partitions_field: str = "partitions"
) -> Callable[[Any], list[ErrorCode]]:
    return lambda r: [p.error_code for t in getattr(r, topics_field) for p in getattr(t, partitions_field)]


def top(r: Any) -> list[ErrorCode]:
    return [r.error_code]


def coordinators(r: Any) -> list[ErrorCode]:
    return [c.error_code for c in r.coordinators]


def grant(rtype: ResourceType, *ops: AclOperation, name: str = "w") -> Callable[[Secured], None]:
    return lambda s: s.grant(rtype, name, *ops)
