"""gRPC server reflection under both ``grpc.reflection.v1alpha`` and ``grpc.reflection.v1``.

grpcio-reflection serves only ``grpc.reflection.v1alpha.ServerReflection``, while newer
tools (grpcurl, buf curl, Postman) ask for ``grpc.reflection.v1.ServerReflection`` first.
The two services have the same messages with the same field numbers under another
package, so this module serves v1 with v1alpha's logic instead of a copy of it:

* the v1 schema is built at run time from v1alpha's file descriptor (file and package
  renamed) and added to the default descriptor pool, so reflection can describe itself
  under v1 too (``grpcurl describe grpc.reflection.v1.ServerReflection``);
* the v1 method is a generic stream-stream handler whose requests are parsed *as v1alpha*
  and whose v1alpha responses are sent as they are: identical field numbers make the bytes
  of one version valid messages of the other, so the conversion both ways is the wire
  format itself, with nothing to copy field by field;
* one v1alpha servicer answers both methods and lists both reflection services.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FileDescriptor
from google.protobuf.message import Message
from grpc_reflection.v1alpha import reflection as reflection_v1alpha
from grpc_reflection.v1alpha import reflection_pb2 as v1alpha_pb2
from grpc_reflection.v1alpha import reflection_pb2_grpc as v1alpha_pb2_grpc

_V1ALPHA_PACKAGE: Final = v1alpha_pb2.DESCRIPTOR.package
V1_PACKAGE: Final = "grpc.reflection.v1"
V1_FILE_NAME: Final = "grpc/reflection/v1/reflection.proto"
"""The v1 file's name in the official gRPC protos, so tools that know it find it."""
V1ALPHA_SERVICE_NAME: Final[str] = reflection_v1alpha.SERVICE_NAME
V1_SERVICE_NAME: Final = f"{V1_PACKAGE}.ServerReflection"
V1_METHOD: Final = "ServerReflectionInfo"
V1_METHOD_PATH: Final = f"/{V1_SERVICE_NAME}/{V1_METHOD}"
REFLECTION_SERVICE_NAMES: Final = (V1ALPHA_SERVICE_NAME, V1_SERVICE_NAME)


def _v1_file_proto() -> descriptor_pb2.FileDescriptorProto:
    """v1alpha's file descriptor moved to the v1 package (file name and type references)."""
    proto = descriptor_pb2.FileDescriptorProto()
    v1alpha_pb2.DESCRIPTOR.CopyToProto(proto)
    proto.name = V1_FILE_NAME
    proto.package = V1_PACKAGE
    old_prefix, new_prefix = f".{_V1ALPHA_PACKAGE}.", f".{V1_PACKAGE}."

    def moved(type_name: str) -> str:
        # CopyToProto writes fully qualified references; only v1alpha's own ones move.
        if type_name.startswith(old_prefix):
            return new_prefix + type_name[len(old_prefix):]
        return type_name

    messages = list(proto.message_type)
    while messages:  # nested messages too, should a later v1alpha have any
        message = messages.pop()
        messages.extend(message.nested_type)
        for field in message.field:
            if field.HasField("type_name"):  # scalars have none, and an empty one is invalid
                field.type_name = moved(field.type_name)
    for service in proto.service:
        for method in service.method:
            method.input_type = moved(method.input_type)
            method.output_type = moved(method.output_type)
    return proto


def _v1_file() -> FileDescriptor:
    """The v1 file in the default pool (the one reflection describes), added once."""
    pool = descriptor_pool.Default()  # type: ignore[no-untyped-call]
    try:
        # Already there: added by an earlier call, or by a library shipping the v1 protos.
        found: FileDescriptor = pool.FindFileByName(V1_FILE_NAME)
    except KeyError:
        pool.AddSerializedFile(_v1_file_proto().SerializeToString())
        found = pool.FindFileByName(V1_FILE_NAME)
    return found


V1_FILE: Final = _v1_file()
V1_REQUEST: Final[type[Message]] = message_factory.GetMessageClass(
    V1_FILE.message_types_by_name["ServerReflectionRequest"]
)
"""``grpc.reflection.v1.ServerReflectionRequest``, for clients of the v1 service."""
V1_RESPONSE: Final[type[Message]] = message_factory.GetMessageClass(
    V1_FILE.message_types_by_name["ServerReflectionResponse"]
)
"""``grpc.reflection.v1.ServerReflectionResponse``, for clients of the v1 service."""


def _v1_handler(
    servicer: v1alpha_pb2_grpc.ServerReflectionServicer,
) -> grpc.GenericRpcHandler:
    """The v1 service answered by ``servicer``: v1 bytes parsed as v1alpha requests, v1alpha
    responses serialized as v1 bytes (the two share every field number)."""
    method = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=v1alpha_pb2.ServerReflectionRequest.FromString,
        response_serializer=v1alpha_pb2.ServerReflectionResponse.SerializeToString,
    )
    handler: grpc.GenericRpcHandler = grpc.method_handlers_generic_handler(
        V1_SERVICE_NAME, {V1_METHOD: method}
    )
    return handler


def enable_server_reflection(server: grpc.aio.Server, service_names: Sequence[str]) -> None:
    """Serve reflection on ``server`` under v1alpha and v1, listing ``service_names`` and
    the two reflection services, and describing everything in the default pool."""
    listed = dict.fromkeys([*service_names, *REFLECTION_SERVICE_NAMES])  # once each, in order
    servicer = reflection_v1alpha.aio.ReflectionServicer(list(listed))
    v1alpha_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    server.add_generic_rpc_handlers((_v1_handler(servicer),))
