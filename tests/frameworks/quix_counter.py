"""The Quix Streams app of tests/frameworks/test_quix*.py, run as `python quix_counter.py` in a temp dir.

It reads the topic INPUT (string keys and values), counts each key in its state (a RocksDB store in
STATE_DIR, with a changelog topic that Quix creates itself) and writes one JSON record per input to the
topic OUTPUT, under the input's key: {"value": <input value>, "count": <the key's count after it>}.
Settings come from the environment: BOOTSTRAP, GROUP, INPUT, OUTPUT, PARTITIONS, STATE_DIR, GUARANTEE
("at-least-once" or "exactly-once"), and optionally COMMIT_INTERVAL (seconds, 0.5 by default) and
COMMIT_EVERY (inputs; 0, the default, for none), which say when Quix commits a checkpoint (with
exactly-once: a transaction), and CONSUMER_CONFIG / PRODUCER_CONFIG (JSON objects of librdkafka settings).
"""

import json
import os
from typing import Any

from quixstreams import Application
from quixstreams.models import TopicConfig
from quixstreams.state import State

app = Application(
    broker_address=os.environ["BOOTSTRAP"],
    consumer_group=os.environ["GROUP"],
    auto_offset_reset="earliest",
    state_dir=os.environ["STATE_DIR"],
    processing_guarantee=os.environ["GUARANTEE"],  # type: ignore[arg-type]
    commit_interval=float(os.environ.get("COMMIT_INTERVAL", "0.5")),
    commit_every=int(os.environ.get("COMMIT_EVERY", "0")),
    consumer_extra_config=json.loads(os.environ.get("CONSUMER_CONFIG", "{}")),
    producer_extra_config=json.loads(os.environ.get("PRODUCER_CONFIG", "{}")),
)
# The app creates both topics (and its changelog topic, with as many partitions as its input).
topics = TopicConfig(num_partitions=int(os.environ["PARTITIONS"]), replication_factor=1)
inputs = app.topic(os.environ["INPUT"], key_deserializer="str", value_deserializer="str", config=topics)
outputs = app.topic(os.environ["OUTPUT"], key_serializer="str", value_serializer="json", config=topics)


def count(value: str, state: State) -> dict[str, Any]:
    n = state.get("count", 0) + 1
    state.set("count", n)
    return {"value": value, "count": n}


app.dataframe(inputs).apply(count, stateful=True).to_topic(outputs)

if __name__ == "__main__":
    app.run()
