"""``dast audit --admin-log``: check the operators' action log of a deployment.

Reads every entry (``ModerationService.ListAdminActions``, an admin token) and checks the
chain (:func:`services.accounts.admin_log.verify_chain`): each entry's hash covers its
contents and the entry before, so an entry changed, removed or slipped in afterwards is
found, with where. It prints the head (the last entry's seq and hash): given back later as
``--since SEQ:HASH``, the next check starts there and also finds a log cut short or
rewritten before it. Exit codes as ``dast audit``: 0 the chain holds; 1 it is broken; 2 the
server could not be asked or ``--since`` could not be read.
"""

from __future__ import annotations

import asyncio
import json

import grpc
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dast.v1 import moderation_pb2, moderation_pb2_grpc
from services.accounts.admin_log import AdminEntry, verify_chain

PAGE = 1000


async def _entries(server: str, token: str, after_seq: int) -> list[AdminEntry]:
    entries: list[AdminEntry] = []
    async with grpc.aio.insecure_channel(server) as channel:
        stub = moderation_pb2_grpc.ModerationServiceStub(channel)
        while True:
            reply = await stub.ListAdminActions(
                moderation_pb2.ListAdminActionsRequest(after_seq=after_seq, page_size=PAGE),
                metadata=(("authorization", f"Bearer {token}"),), timeout=60)
            entries += [AdminEntry(e.seq, e.at_ms, e.actor, e.action, e.subject,
                                   json.loads(e.detail_json), e.prev_hash, e.hash)
                        for e in reply.entries]
            if len(reply.entries) < PAGE:
                return entries
            after_seq = reply.entries[-1].seq


def parse_head(text: str) -> tuple[int, bytes]:
    """``SEQ:HASH`` (the hash in hex), as the check prints it.

    :raises ValueError: for anything else.
    """
    seq, _, digest = text.partition(":")
    head = (int(seq), bytes.fromhex(digest))
    if head[0] < 1 or len(head[1]) != 32:
        raise ValueError(text)
    return head


def audit_admin_log(server: str, token: str, since: str, console: Console) -> int:
    """Check the action log at ``server``; the exit code."""
    try:
        after = parse_head(since) if since else None
    except ValueError:
        console.print(f"[red]--since {escape(since)} is not SEQ:HASH[/red] (as a check prints "
                      "its head)")
        return 2
    try:
        entries = asyncio.run(_entries(server, token, after[0] if after else 0))
    except grpc.aio.AioRpcError as error:
        console.print(f"[red]ListAdminActions failed: {error.code().name}:[/red] "
                      f"{escape(error.details() or '')}")
        return 2
    problems = verify_chain(entries, after=after)
    start = f"after entry {after[0]}" if after else "from the first entry"
    console.print(f"[bold]operators' action log at {escape(server)}[/bold]: {len(entries)} "
                  f"entries {start}")
    if problems:
        table = Table("entry", "what is wrong")
        for problem in problems:
            table.add_row(str(problem.seq), problem.problem)
        console.print(table)
        console.print("[red]FAILED[/red]: the log was changed after it was written")
        return 1
    if entries:
        console.print(f"head: {entries[-1].seq}:{entries[-1].hash.hex()} (keep it; check "
                      "later with --since)")
    console.print("[green]ok[/green]: every entry is chained to the one before")
    return 0
