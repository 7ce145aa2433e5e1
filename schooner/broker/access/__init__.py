"""Access: who may do what (authorizer.py, Kafka's ACLs over storage's ACL book) and how much
(quotas.py, Kafka's client quotas: byte rates, request time, the throttle they answer with). The
context holds both as `ctx.access`.
"""
