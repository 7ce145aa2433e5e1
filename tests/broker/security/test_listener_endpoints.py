"""Every listener is advertised: clients are told the brokers' endpoints on the listener their request
arrived on (Metadata, DescribeCluster, FindCoordinator), and a broker without that listener is left out."""

from __future__ import annotations

import socket
from typing import Any

from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest

from schooner.storage.redis.embedded import free_port
from tests.certs import Certs
from tests.clients import SAMPLE, confluent_consume, confluent_produce
from tests.wire import call, exchange

from .tls_helpers import bootstrap, confluent_tls, tls_broker, tls_socket, wait_for


def brokers_seen(bootstrap_servers: str, **conf: Any) -> dict[int, tuple[str, int]]:
    metadata = AdminClient({"bootstrap.servers": bootstrap_servers, **conf}).list_topics(timeout=10)
    return {b.id: (b.host, b.port) for b in metadata.brokers.values()}


def cluster_and_coordinator(sock: socket.socket, group: str) -> tuple[list[tuple[int, str, int]], Any]:
    with sock:
        cluster, found = exchange(
            sock,
            [
                DescribeClusterRequest(include_cluster_authorized_operations=False),
                FindCoordinatorRequest(key_type=0, coordinator_keys=(group,)),
            ],
        )
    return [(b.broker_id, b.host, b.port) for b in cluster.brokers], found.coordinators[0]


def test_each_listener_answers_with_its_own_endpoints(broker_factory: Any, certs: Certs) -> None:
    b = tls_broker(broker_factory, certs, listeners=("PLAINTEXT", "SSL"))
    me = b.broker_id
    plain, tls = b.broker.port_of("PLAINTEXT"), b.broker.port_of("SSL")
    assert brokers_seen(bootstrap(b, "PLAINTEXT")) == {me: ("127.0.0.1", plain)}
    assert brokers_seen(bootstrap(b), **confluent_tls(certs)) == {me: ("127.0.0.1", tls)}
    for sock, port in [
        (socket.create_connection(("127.0.0.1", plain)), plain),
        (tls_socket(tls, certs), tls),
    ]:
        cluster, coordinator = cluster_and_coordinator(sock, "some-group")
        assert cluster == [(me, "127.0.0.1", port)]
        assert (coordinator.node_id, coordinator.host, coordinator.port) == (me, "127.0.0.1", port)
    # Clients of both listeners work with the same topic, and a group over SSL finds its coordinator there.
    confluent_produce(bootstrap(b, "PLAINTEXT"), "both", SAMPLE[:2])
    confluent_produce(bootstrap(b), "both", SAMPLE[2:], **confluent_tls(certs))
    assert len(confluent_consume(bootstrap(b), "both", len(SAMPLE), **confluent_tls(certs))) == len(SAMPLE)


def test_a_broker_without_the_listener_is_left_out(broker_factory: Any, certs: Certs) -> None:
    both = tls_broker(broker_factory, certs, listeners=("PLAINTEXT", "SSL"))
    plain_only = broker_factory()
    plain_port = plain_only.broker.port_of("PLAINTEXT")
    wait_for(lambda: len(brokers_seen(bootstrap(both, "PLAINTEXT"))) == 2)
    assert brokers_seen(bootstrap(both, "PLAINTEXT")) == {
        both.broker_id: ("127.0.0.1", both.broker.port_of("PLAINTEXT")),
        plain_only.broker_id: ("127.0.0.1", plain_port),
    }
    assert brokers_seen(bootstrap(both), **confluent_tls(certs)) == {
        both.broker_id: ("127.0.0.1", both.broker.port_of("SSL"))
    }
    # Over SSL every partition is led by the broker that has SSL.
    admin = AdminClient({"bootstrap.servers": bootstrap(both, "PLAINTEXT")})
    admin.create_topics([NewTopic("spread", 6, 1)])["spread"].result(10)
    ssl_view = AdminClient({"bootstrap.servers": bootstrap(both), **confluent_tls(certs)})
    leaders = {
        p.leader for p in ssl_view.list_topics("spread", timeout=10).topics["spread"].partitions.values()
    }
    assert leaders == {both.broker_id}
    # A group coordinated by the PLAINTEXT-only broker has no coordinator on the SSL listener.
    group = next(
        g
        for g in (f"group-{i}" for i in range(200))
        if cluster_and_coordinator(socket.create_connection(("127.0.0.1", plain_port)), g)[1].node_id
        == plain_only.broker_id
    )
    cluster, coordinator = cluster_and_coordinator(tls_socket(both.broker.port_of("SSL"), certs), group)
    assert cluster == [(both.broker_id, "127.0.0.1", both.broker.port_of("SSL"))]
    assert coordinator.error_code == ErrorCode.coordinator_not_available
    assert (coordinator.node_id, coordinator.host, coordinator.port) == (-1, "", -1)


def test_advertised_listeners_decide_what_clients_are_told(broker_factory: Any, certs: Certs) -> None:
    port = free_port()
    b = tls_broker(
        broker_factory,
        certs,
        listeners=("PLAINTEXT", f"SSL://127.0.0.1:{port}"),
        advertised_listeners=[f"SSL://localhost:{port}"],
    )
    plain = b.broker.port_of("PLAINTEXT")
    assert brokers_seen(bootstrap(b), **confluent_tls(certs)) == {b.broker_id: ("localhost", port)}
    assert brokers_seen(bootstrap(b, "PLAINTEXT")) == {b.broker_id: ("127.0.0.1", plain)}
    # The certificate names localhost too, so clients follow the advertised address.
    confluent_produce(f"localhost:{port}", "advertised", SAMPLE[:1], **confluent_tls(certs))
    admin = AdminClient({"bootstrap.servers": bootstrap(b, "PLAINTEXT")})
    resource = ConfigResource(ConfigResource.Type.BROKER, str(b.broker_id))
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["advertised.listeners"].value == f"PLAINTEXT://127.0.0.1:{plain},SSL://localhost:{port}"


def test_advertise_is_the_shorthand_for_one_plaintext_listener(broker_factory: Any) -> None:
    b = broker_factory(advertise="localhost:19092")
    # Asked on the wire: librdkafka would go on to the advertised address, where nothing listens.
    cluster = call(b.port, DescribeClusterRequest(include_cluster_authorized_operations=False))
    assert [(x.broker_id, x.host, x.port) for x in cluster.brokers] == [(b.broker_id, "localhost", 19092)]
