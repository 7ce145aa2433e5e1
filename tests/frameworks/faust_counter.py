"""The faust app of tests/frameworks/test_faust.py, run as `python faust_counter.py worker` in a temp dir.

One agent reads the topic INPUT, counts each key in the Table "counts" (changelog topic
`<APP_ID>-counts-changelog`) and appends a line per processed input to the file OUT:
`<key> <value> <count after it> <partition> <offset>`, so the test sees what was processed and how often.
Settings come from the environment: APP_ID, BOOTSTRAP, INPUT, PARTITIONS, OUT, and STORE (the Table's
store: "memory://", the default, or "rocksdb://", kept in `<APP_ID>-data/` in the working directory).
"""

import os

import faust

app = faust.App(
    os.environ["APP_ID"],
    broker=f"kafka://{os.environ['BOOTSTRAP']}",
    store=os.environ.get("STORE", "memory://"),
    web_enabled=False,
    topic_partitions=int(os.environ["PARTITIONS"]),
    topic_replication_factor=1,
    # Commit soon after processing, and commit what was acked on stop without waiting for idle streams.
    broker_commit_interval=0.5,
    stream_wait_empty=False,
)
inputs = app.topic(
    os.environ["INPUT"], key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw"
)
counts = app.Table("counts", default=int, key_type=bytes, value_type=int)


@app.agent(inputs)
async def count(stream: faust.StreamT) -> None:
    async for event in stream.events():
        counts[event.key] += 1
        with open(os.environ["OUT"], "a") as out:
            message = event.message
            out.write(
                f"{event.key.decode()} {event.value.decode()} {counts[event.key]} "
                f"{message.partition} {message.offset}\n"
            )


if __name__ == "__main__":
    app.main()
