"""Bots, turn timers and presence: the clients of the game service that keep matches moving.

- :mod:`services.bot.service`: plays bot seats (and seats a bot took over) from the bus.
- :mod:`services.bot.timers`: when a turn's deadline passes, the seat's bot moves for it.
- :mod:`services.bot.presence`: a player no game replica has seen for the grace period is
  replaced by a bot, through the game service (an event of the game's log).
- :mod:`services.bot.stack`: the bots and timers of one process (the composition root,
  :mod:`services.compose`, starts them).
"""
