"""Security without I/O: SASL mechanisms' server side, SCRAM credentials, principals from certificates,
the ACL model and its matching, and quota rate windows.

Like protocol/, this layer is pure: bytes and values in, decisions out. The broker holds connections and
Redis state and asks these modules what to do; storage keeps what they produce (credentials, ACLs).
"""
