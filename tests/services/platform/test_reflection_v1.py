"""Server reflection under ``grpc.reflection.v1`` (what grpcurl, buf curl and Postman ask
for first) next to v1alpha, on a real server behind the dast interceptor."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_reflection.v1alpha import reflection_pb2 as v1alpha_pb2

from dast.v1 import game_pb2, lobby_pb2
from services.platform.reflection import (
    V1_FILE_NAME,
    V1_METHOD_PATH,
    V1_REQUEST,
    V1_RESPONSE,
    V1_SERVICE_NAME,
    V1ALPHA_SERVICE_NAME,
)
from services.platform.server import add_health_and_reflection, bind, make_server
from tests.support.tokens import TEST_KEYS

GAME_SERVICE = game_pb2.DESCRIPTOR.services_by_name["GameService"].full_name
LOBBY_SERVICE = lobby_pb2.DESCRIPTOR.services_by_name["LobbyService"].full_name
V1ALPHA_METHOD_PATH = f"/{V1ALPHA_SERVICE_NAME}/ServerReflectionInfo"


@pytest.fixture
async def channel() -> AsyncIterator[grpc.aio.Channel]:
    # Only reflection and health are mounted: reflection lists the names it is given and
    # describes whatever the default descriptor pool holds (the dast protos are imported).
    server = make_server(TEST_KEYS.ring)
    await add_health_and_reflection(server, [GAME_SERVICE, LOBBY_SERVICE])
    port = bind(server, "127.0.0.1:0")
    await server.start()
    client = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield client
    finally:
        await client.close()
        await server.stop(None)


async def _ask(
    channel: grpc.aio.Channel, path: str, request_type: type[Any], response_type: type[Any],
    requests: Sequence[dict[str, Any]],
) -> list[Any]:
    """Send ``requests`` on one reflection stream at ``path``; the responses, in order."""
    call = channel.stream_stream(
        path,
        request_serializer=request_type.SerializeToString,
        response_deserializer=response_type.FromString,
    )
    stream = call(iter([request_type(**fields) for fields in requests]), timeout=5)
    return [response async for response in stream]


async def test_v1_lists_both_reflection_services_and_the_dast_services(
    channel: grpc.aio.Channel,
) -> None:
    [response] = await _ask(channel, V1_METHOD_PATH, V1_REQUEST, V1_RESPONSE,
                            [{"list_services": ""}])

    assert response.DESCRIPTOR.full_name == "grpc.reflection.v1.ServerReflectionResponse"
    assert response.WhichOneof("message_response") == "list_services_response"
    names = [service.name for service in response.list_services_response.service]
    assert {V1_SERVICE_NAME, V1ALPHA_SERVICE_NAME, GAME_SERVICE, LOBBY_SERVICE,
            "grpc.health.v1.Health"} <= set(names)
    assert len(names) == len(set(names))
    assert response.original_request.list_services == ""


async def test_v1_describes_a_dast_service_and_itself(channel: grpc.aio.Channel) -> None:
    game, reflection = await _ask(
        channel, V1_METHOD_PATH, V1_REQUEST, V1_RESPONSE,
        [{"file_containing_symbol": GAME_SERVICE},
         {"file_containing_symbol": V1_SERVICE_NAME}],
    )

    game_files = _files(game)
    assert game.original_request.file_containing_symbol == GAME_SERVICE
    assert any(GAME_SERVICE.rsplit(".", 1)[1] in [s.name for s in f.service]
               and f.package == "dast.v1" for f in game_files)
    # What `grpcurl describe grpc.reflection.v1.ServerReflection` needs: the v1 file, with
    # its method typed by v1 messages.
    [v1_file] = _files(reflection)
    assert (v1_file.name, v1_file.package) == (V1_FILE_NAME, "grpc.reflection.v1")
    [method] = v1_file.service[0].method
    assert method.input_type == ".grpc.reflection.v1.ServerReflectionRequest"
    assert method.output_type == ".grpc.reflection.v1.ServerReflectionResponse"
    assert method.client_streaming and method.server_streaming


async def test_v1_reports_an_unknown_symbol_as_not_found(channel: grpc.aio.Channel) -> None:
    [response] = await _ask(channel, V1_METHOD_PATH, V1_REQUEST, V1_RESPONSE,
                            [{"file_containing_symbol": "dast.v1.NoSuchService"}])

    assert response.WhichOneof("message_response") == "error_response"
    assert response.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]


async def test_v1alpha_still_answers_and_lists_v1(channel: grpc.aio.Channel) -> None:
    [response] = await _ask(
        channel, V1ALPHA_METHOD_PATH, v1alpha_pb2.ServerReflectionRequest,
        v1alpha_pb2.ServerReflectionResponse, [{"list_services": ""}],
    )

    names = {service.name for service in response.list_services_response.service}
    assert {V1_SERVICE_NAME, V1ALPHA_SERVICE_NAME, GAME_SERVICE} <= names


def _files(response: Any) -> list[descriptor_pb2.FileDescriptorProto]:
    assert response.WhichOneof("message_response") == "file_descriptor_response"
    serialized = response.file_descriptor_response.file_descriptor_proto
    assert serialized
    return [descriptor_pb2.FileDescriptorProto.FromString(data) for data in serialized]
