"""The lobby: guests, tables, seats and bots; it starts matches in the game service."""
