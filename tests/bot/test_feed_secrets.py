"""Issue 26 item 6: a feed URL's credentials (userinfo, query values, token-like path segments)
are never stored beside a price nor shown to members."""

from __future__ import annotations

import json
from datetime import date

import pytest

from bot import feeds, pricecommands

TODAY = date(2026, 11, 30)
BODY = json.dumps({"source": "Provider list https://x.example/p?token=abcdefgh12345678",
                   "prices": [{"item": "h100-sxm", "kind": "rent_card_hour", "amount": 2.49,
                               "currency": "USD", "quoted": "2026-11-01",
                               "note": "mirror: https://u:pw123456@m.example/k?key=zzz"}]}).encode()


@pytest.mark.parametrize(("url", "shown"), [
    ("https://feeds.example/prices.json", "https://feeds.example/prices.json"),
    ("https://feeds.example/prices.json?api_key=SECRET1&fmt=csv",
     "https://feeds.example/prices.json?api_key=***&fmt=***"),
    ("https://user:SECRET2@feeds.example:8443/a.csv#SECRET3", "https://feeds.example:8443/a.csv"),
    ("https://docs.example/spreadsheets/d/e/2PACX1vSECRET4abcdEFGH/pub?output=csv",
     "https://docs.example/spreadsheets/d/e/***/pub?output=***"),
    ("https://feeds.example/prices?SECRET5", "https://feeds.example/prices?***"),
])
def test_public_url_hides_every_credential_shape(url: str, shown: str) -> None:
    assert feeds.public_url(url) == shown


def test_records_from_a_feed_carry_no_credential() -> None:
    url = "https://svc:pw987654@feeds.example/v2/Tok3nTok3nTok3nTok3n/list.json?api_key=sk_0123456789"
    records = feeds.parse_feed(BODY, url=url, today=TODAY)
    stored = json.dumps([r.model_dump(mode="json") for r in records])
    for secret in ("pw987654", "Tok3nTok3nTok3nTok3n", "sk_0123456789", "abcdefgh12345678",
                   "pw123456", "zzz"):
        assert secret not in stored
    assert "feeds.example" in records[0].source  # still tells feeds apart
    # what a member reads for an older record that stored the whole URL
    old = records[0].model_copy(update={"source": f"feed list ({url})"})
    assert "sk_0123456789" not in pricecommands._origin(old)
    assert "pw987654" not in pricecommands._origin(old)
