"""Bots, turn timers and presence: the clients of the game service that keep matches moving.

- :mod:`services.bot.service`: plays bot seats (and seats a bot took over) from the bus.
- :mod:`services.bot.timers`: when a turn's deadline passes, the seat's bot moves for it.
- :mod:`services.bot.presence`: a player whose game stream is gone too long is replaced.
- :mod:`services.bot.stack`: the wiring of lobby, game, bots and timers in one process.
"""
