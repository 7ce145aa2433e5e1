"""What the broker knows of topics and brokers: the topic cache (topic_cache.py; every change writes
through to storage and drops its own entry), the cluster view (cluster_view.py: live brokers, partition
leaders, the controller) and Kafka's internal topics, listed but never stored (internal_topics.py).
"""
