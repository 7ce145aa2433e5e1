"""The transaction coordinator's state: one key per transactional id (state.py), and offsets committed
inside a transaction, kept in the group's slot until the transaction ends (offsets.py)."""
