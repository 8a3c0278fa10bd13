"""dast services: thin adapters (I/O, wiring) around the pure engine; no game rules here."""
