"""Coordinators: consumer groups (and, later, transactions). Their state lives in Redis via storage."""
