# The two set-up commands of the README: `make broker` and `make test`.
VENV ?= .venv
PYTHON ?= python3
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install system-deps broker test lint bench

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test,spark]'
	touch $@

install: $(VENV)/.installed

# kcat (librdkafka 2.0.2) is the old C client the tests and benchmarks drive; redis-tools gives redis-benchmark.
system-deps:
	@command -v kcat >/dev/null && command -v redis-benchmark >/dev/null || \
	  ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq kcat redis-tools >/dev/null)

broker: install system-deps
	$(VENV)/bin/schooner broker

test: install system-deps
	$(VENV)/bin/ruff check schooner tests bench examples
	$(VENV)/bin/mypy schooner
	$(VENV)/bin/pytest -q

bench: install system-deps
	$(VENV)/bin/python -m bench
