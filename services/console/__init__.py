"""The operator console: a web application (Starlette, Jinja2 templates, served by uvicorn)
where an operator signed in with an admin token sees the system and acts on it.

It keeps no data of its own and reads no store: every page is made from the other services'
gRPC APIs (:mod:`services.console.backend`), called with the operator's own token, so the
services decide what an operator may do and the moderation log names the operator. What it
holds in memory is the sign-in sessions (:mod:`services.console.sessions`) and the last
hour of commands per second (:mod:`services.console.sampler`). docs/console.md is the
operator's guide.
"""
