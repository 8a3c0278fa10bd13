"""The accounts service: players, the devices they sign in from, and their sessions."""
