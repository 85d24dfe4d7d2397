"""deploy/slack/manifest.yml asks for exactly what the bot uses."""

from __future__ import annotations

from pathlib import Path

import yaml

MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "slack" / "manifest.yml"


def test_manifest_matches_the_bot() -> None:
    m = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    command = m["features"]["slash_commands"][0]
    assert command["command"] == "/gpusize" and command["url"].endswith("/slack/events")
    scopes = set(m["oauth_config"]["scopes"]["bot"])
    assert {"commands", "chat:write", "channels:history", "groups:history",
            "app_mentions:read", "users:read", "files:write"} <= scopes
    assert command["should_escape"] is True  # `digest subscribe #channel` needs <#C123|name>
    # the message shortcut, with the callback id the bot listens for
    from present.actions import SIZE_THIS
    shortcuts = m["features"]["shortcuts"]
    assert [(s["type"], s["callback_id"]) for s in shortcuts] == [("message", SIZE_THIS)]
    settings = m["settings"]
    assert set(settings["event_subscriptions"]["bot_events"]) == {
        "message.channels", "message.groups", "app_mention", "app_home_opened", "message.im"}
    home = m["features"]["app_home"]
    assert home["home_tab_enabled"] is True and home["messages_tab_read_only_enabled"] is False
    assert {"im:history", "im:write"} <= scopes  # DMs, and the form's answer sent as one
    assert settings["interactivity"]["is_enabled"] is True
    assert settings["interactivity"]["request_url"].endswith("/slack/events")
    # the form's external select over the catalog
    assert settings["interactivity"]["message_menu_options_url"].endswith("/slack/events")
