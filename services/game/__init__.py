"""The game service: gRPC adapter between clients and the engines (no game rules here).

Modules: :mod:`~services.game.repository` (load, replay and cache game states; append),
:mod:`~services.game.commands` (the command pipeline), :mod:`~services.game.streams`
(Subscribe's replay-then-live merge), :mod:`~services.game.service` (the gRPC servicer),
:mod:`~services.game.app` (wiring for ``dast serve``).
"""
