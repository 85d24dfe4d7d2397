"""bot.edge.MemberTurns, in-process: one member's burst of signed requests waits behind itself
(at most MEMBER_IN_FLIGHT of theirs in the bot at once) while another member's request goes
straight in, and the per-member entries are dropped once a member's requests are done."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
from typing import Any

from slack_sdk.signature import SignatureVerifier

from bot.edge import MEMBER_IN_FLIGHT, SlackEdge

SECRET = "s3cr3t"


def signed_scope(body: bytes, content_type: str) -> dict[str, Any]:
    stamp = str(int(time.time()))
    signature = SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body)
    return {"type": "http", "method": "POST", "path": "/slack/events",
            "headers": [(b"content-type", content_type.encode()),
                        (b"x-slack-request-timestamp", stamp.encode()),
                        (b"x-slack-signature", signature.encode())]}


def command(user: str) -> tuple[bytes, str]:
    form = {"command": "/gpusize", "text": "13B lora", "team_id": "T0TEAM", "user_id": user,
            "channel_id": "C0CHAN"}
    return urllib.parse.urlencode(form).encode(), "application/x-www-form-urlencoded"


def mention(user: str) -> tuple[bytes, str]:
    return json.dumps({"type": "event_callback", "team_id": "T0TEAM", "event_id": "Ev1",
                       "event": {"type": "app_mention", "user": user, "channel": "C0CHAN",
                                 "ts": "1.1", "text": "hi"}}).encode(), "application/json"


def press(user: str) -> tuple[bytes, str]:
    payload = {"type": "block_actions", "team": {"id": "T0TEAM"}, "user": {"id": user},
               "actions": [{"action_id": "run_it", "value": "13B lora"}]}
    return (urllib.parse.urlencode({"payload": json.dumps(payload)}).encode(),
            "application/x-www-form-urlencoded")


def test_one_members_burst_waits_behind_itself_not_in_front_of_others() -> None:
    async def go() -> tuple[dict[str, int], list[str], SlackEdge]:
        inside: dict[str, int] = {}
        most: dict[str, int] = {}
        finished: list[str] = []
        release = asyncio.Event()

        async def app(scope: Any, receive: Any, send: Any) -> None:
            body = (await receive())["body"]
            who = next(u for u in ("U0FLOOD", "U0OTHER") if u.encode() in body)
            inside[who] = inside.get(who, 0) + 1
            most[who] = max(most.get(who, 0), inside[who])
            if who == "U0FLOOD":
                await release.wait()  # the flood's requests take as long as we say
            inside[who] -= 1
            finished.append(who)
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})

        edge = SlackEdge(app, signing_secret=SECRET, max_body_bytes=1 << 20, body_timeout_s=5)

        async def request(body: bytes, content_type: str) -> None:
            sent = False

            async def receive() -> dict[str, Any]:
                nonlocal sent
                if not sent:
                    sent = True
                    return {"type": "http.request", "body": body, "more_body": False}
                await asyncio.sleep(3600)
                return {"type": "http.disconnect"}

            async def send(_message: Any) -> None:
                return None

            await edge(signed_scope(body, content_type), receive, send)

        kinds = (command, mention, press)
        flood = [asyncio.create_task(request(*kinds[n % 3]("U0FLOOD"))) for n in range(30)]
        await asyncio.sleep(0.05)
        for kind in kinds:  # another member's command, mention and press, during the flood
            await asyncio.wait_for(request(*kind("U0OTHER")), 1.0)
        assert "U0FLOOD" not in finished  # they got in while the flood was still held
        release.set()
        await asyncio.gather(*flood)
        return most, finished, edge

    most, finished, edge = asyncio.run(go())
    assert most["U0FLOOD"] == MEMBER_IN_FLIGHT  # never more of theirs at once
    assert finished.count("U0FLOOD") == 30 and finished.count("U0OTHER") == 3
    assert edge.turns._slots == {} and edge.turns._holders == {}  # nothing kept per member
