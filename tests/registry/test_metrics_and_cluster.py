"""The registry's metrics (requests by route and status, validation refusals by topic), and the registry on
a Redis Cluster: every key under one hash tag, so its scripts run there as on one Redis."""

from __future__ import annotations

import json
from typing import Any

import httpx
from kio.schema.errors import ErrorCode

from schooner.storage.redis.embedded import free_port
from tests import wire
from tests.broker.metrics_rig import scrape, with_metrics

SCHEMA = json.dumps({"type": "record", "name": "M", "fields": [{"name": "x", "type": "int"}]})


def test_requests_and_refusals_are_counted(broker_factory: Any) -> None:
    registry_port = free_port()
    broker, metrics_port = with_metrics(broker_factory, schema_registry_port=registry_port)
    url = f"http://127.0.0.1:{registry_port}"
    assert httpx.post(f"{url}/subjects/m-value/versions", json={"schema": SCHEMA}).status_code == 200
    assert httpx.get(f"{url}/subjects/none/versions").status_code == 404
    wire.create_topics(broker.port, "m", configs={"confluent.value.schema.validation": "true"})
    response = wire.call(broker.port, wire.produce_request("m", [b"not framed", b"nor this"]))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.invalid_record
    found = scrape(metrics_port)
    requests = found.by("schooner_schema_registry_requests_total", "route", "status")
    assert requests[("/subjects/{subject}/versions", "200")] == 1
    assert requests[("/subjects/{subject}/versions", "404")] == 1
    assert found.value("schooner_schema_validation_refusals_total", topic="m") == 2


def test_the_registry_on_a_redis_cluster(broker_factory: Any, redis_cluster: Any) -> None:
    ports = [free_port(), free_port()]
    for port in ports:  # two brokers on the cluster: one registry
        broker_factory(redis_url=redis_cluster.url, schema_registry_port=port)
    first, second = (f"http://127.0.0.1:{p}" for p in ports)
    ids = []
    for i in range(20):
        schema = json.dumps({"type": "record", "name": f"R{i}", "fields": [{"name": "x", "type": "int"}]})
        answer = httpx.post(f"{first}/subjects/s{i}/versions", json={"schema": schema})
        assert answer.status_code == 200, answer.text
        ids.append(answer.json()["id"])
    assert len(set(ids)) == 20
    assert [httpx.get(f"{second}/subjects/s{i}/versions/latest").json()["id"] for i in range(20)] == ids
    assert httpx.delete(f"{second}/subjects/s0").json() == [1]
    assert httpx.delete(f"{first}/subjects/s0", params={"permanent": "true"}).json() == [1]
    assert len(httpx.get(f"{first}/subjects").json()) == 19
