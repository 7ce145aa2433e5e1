"""Operations: the CLI (cli.py and its *_cli.py commands; kafka/ holds the commands that talk to a broker as
a Kafka client), log formats (logs.py), several broker processes on one host (processes.py), the
pre-flight check (check.py) and the web console (console/). The broker's Prometheus metrics live in
schooner.broker.metrics."""
