"""What security keeps in Redis: users (SCRAM credentials and tenant) and ACLs.

Users are global to a deployment: they live under the base keyspace, whatever tenant they belong to.
"""
