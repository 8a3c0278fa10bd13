"""A game's message in a oneof of the shared protos, typed or packed, without naming the game.

Every message that carries one game's rules, command, event or view (``Command``, ``Event``,
``CreateGameRequest``, ``SubmitCommandRequest``, ``GetViewResponse``, ``TableSettings``)
has a oneof whose members are the games of the schema (``hokm``, ``hand``) and ``other``, a
``google.protobuf.Any`` for a game registered at run time (log.proto "Games outside the
schema"). A game's :class:`~engine.core.protocol.Schema` says which member is its own;
:func:`put` and :func:`take` are the only code that looks at the difference.
"""

from __future__ import annotations

from typing import TypeVar

from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message

from engine.core.errors import Code, InvalidCommand
from engine.core.protocol import OTHER_FIELD, Schema

M = TypeVar("M", bound=Message)


def put(container: Message, schema: Schema, message: Message) -> None:
    """Set ``container``'s game oneof to ``message``, in the member ``schema`` names."""
    member = getattr(container, schema.field)
    if schema.is_packed:
        member.Pack(message)
    else:
        member.CopyFrom(message)


def take(container: Message, oneof: str, schema: Schema, message_type: type[M]) -> M:
    """The ``message_type`` message ``container``'s ``oneof`` carries (an empty one when the
    oneof is unset: the game's defaults).

    :raises InvalidCommand: ``wrong_game`` when the oneof carries another game's message.
    """
    chosen = container.WhichOneof(oneof)
    if chosen is None:
        return message_type()
    if chosen != schema.field:
        raise InvalidCommand(Code.WRONG_GAME, f"{oneof} carries {chosen}, not {schema.field}")
    member = getattr(container, chosen)
    if not schema.is_packed:
        if not isinstance(member, message_type):
            raise InvalidCommand(Code.WRONG_GAME, f"{oneof} does not carry a "
                                 f"{message_type.DESCRIPTOR.full_name}")
        return member
    return unpack(member, message_type)


def unpack(packed: any_pb2.Any, message_type: type[M]) -> M:
    """The ``message_type`` message packed in ``packed``.

    :raises InvalidCommand: ``wrong_game`` for another message type; ``malformed_command``
        when its bytes do not parse.
    """
    if not packed.Is(message_type.DESCRIPTOR):
        # The type_url is the caller's: the message names what was expected only.
        raise InvalidCommand(Code.WRONG_GAME, "the packed message is not a "
                             f"{message_type.DESCRIPTOR.full_name}")
    message = message_type()
    try:
        unpacked = packed.Unpack(message)
    except DecodeError:
        unpacked = False
    if not unpacked:
        raise InvalidCommand(Code.MALFORMED_COMMAND,
                             f"unreadable {message_type.DESCRIPTOR.full_name}")
    return message


def is_packed_as(packed: any_pb2.Any, message_type: type[Message]) -> bool:
    """Whether ``packed`` holds a ``message_type`` message."""
    return bool(packed.Is(message_type.DESCRIPTOR))


__all__ = ["OTHER_FIELD", "is_packed_as", "put", "take", "unpack"]
