"""The schema registry's state in Redis: schemas by id, subjects' versions, configs and modes."""
