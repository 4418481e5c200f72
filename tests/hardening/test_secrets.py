"""Secrets: a Qdrant API key, given as an argument or in QDRANT_API_KEY, never shows up in logs
(DEBUG, every logger, httpx and qdrant-client included), warnings, reprs, stats, traces, results,
or error messages (and their chained causes).

There is no Qdrant server on our machines, so the key travels to two local endpoints: a port where
nothing listens (the connection is refused) and a fake endpoint, named as such, that records the
request headers and answers 401 like a server rejecting the key. Both must fail quickly.
"""

from __future__ import annotations

import http.server
import json
import logging
import socket
import threading
import traceback
import warnings
from typing import Iterator, List

import pytest

from drag_knee_retriever import Document, DragKneeIndex, StoreConfig
from drag_knee_retriever.render import trace_text
from drag_knee_retriever.store import QdrantClientStore
from hardening_support import bounded, make_store

SECRET = "qk-HARDENING-7f3a9c1e5b2d4680-SECRET"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _RejectingEndpoint(http.server.BaseHTTPRequestHandler):
    """A fake endpoint (not Qdrant): records headers, answers 401 like a server refusing the key."""

    seen: List[dict] = []

    def _reject(self) -> None:
        self.seen.append(dict(self.headers))
        body = json.dumps({"status": {"error": "Invalid api-key"}, "time": 0.0}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = _reject

    def log_message(self, *args) -> None:  # keep the test output clean
        pass


@pytest.fixture
def rejecting_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RejectingEndpoint)
    _RejectingEndpoint.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _everything_said(error: BaseException, caplog, caught) -> str:
    """All text a user or an operator could see: the error chain, traceback, log records, warnings."""
    parts = []
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        parts += [str(error), repr(error), "".join(traceback.format_exception(error))]
        error = error.__cause__ or error.__context__
    for record in caplog.records:
        parts += [record.getMessage(), repr(record.args), str(record.exc_text or "")]
    parts.append(caplog.text)
    parts += [str(w.message) for w in caught]
    return "\n".join(parts)


def _open_failing(url, caplog, **kwargs):
    caplog.set_level(logging.DEBUG)  # every logger, at the most talkative level
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = bounded(30, DragKneeIndex, url, **kwargs)
    assert outcome.error is not None, "no server there, yet the index opened"
    assert outcome.seconds < 15, f"failing to connect took {outcome.seconds:.1f}s"
    return outcome, caught


@pytest.mark.parametrize("via", ["argument", "environment"])
def test_the_key_is_not_in_the_error_or_the_logs_when_nothing_listens(via, caching_encoder, caplog, monkeypatch):
    kwargs = {"embedding": caching_encoder}
    if via == "argument":
        kwargs["store"] = StoreConfig(api_key=SECRET)
    else:
        monkeypatch.setenv("QDRANT_API_KEY", SECRET)
    outcome, caught = _open_failing(f"http://127.0.0.1:{_free_port()}", caplog, **kwargs)
    assert SECRET not in _everything_said(outcome.error, caplog, caught)


@pytest.mark.parametrize("via", ["argument", "environment"])
def test_the_key_is_sent_but_not_said_when_a_server_rejects_it(via, rejecting_url, caching_encoder, caplog, monkeypatch):
    kwargs = {"embedding": caching_encoder}
    if via == "argument":
        kwargs["store"] = StoreConfig(api_key=SECRET)
    else:
        monkeypatch.setenv("QDRANT_API_KEY", SECRET)
    outcome, caught = _open_failing(rejecting_url, caplog, **kwargs)
    sent = {k.lower(): v for h in _RejectingEndpoint.seen for k, v in h.items()}
    assert sent.get("api-key") == SECRET, "the key (from the %s) did not reach the server" % via
    assert SECRET not in _everything_said(outcome.error, caplog, caught)


def test_an_unreachable_server_is_a_clear_store_error(caching_encoder, caplog):
    from drag_knee_retriever.errors import StoreError

    url = f"http://127.0.0.1:{_free_port()}"
    outcome, _ = _open_failing(url, caplog, store=StoreConfig(api_key=SECRET), embedding=caching_encoder)
    assert isinstance(outcome.error, StoreError) and url in str(outcome.error)


def test_the_key_is_not_in_reprs_stats_results_or_traces(caching_encoder, caplog, monkeypatch):
    """An index configured for a server (its store replaced by a local one, so it can run)."""
    caplog.set_level(logging.DEBUG)
    config = StoreConfig(api_key=SECRET)
    remote_store = QdrantClientStore("secrets", url="http://127.0.0.1:1", api_key=SECRET)  # never contacted
    said = [repr(config), str(config), repr(remote_store), remote_store.describe()]
    remote_store.close()
    monkeypatch.setenv("QDRANT_API_KEY", SECRET)
    with DragKneeIndex(make_store("local", "secrets"), embedding=caching_encoder, store=StoreConfig(collection="secrets", api_key=SECRET)) as index:
        assert index.store_config.api_key == SECRET  # the key is held where the store would use it...
        index.add_documents([Document(id="doc", text="Lighthouses guide ships into the harbour at night.")])
        result = index.search("lighthouse harbour")
        said += [repr(index), str(index), repr(vars(index)), repr(index.store_config), json.dumps(index.stats()),
                 repr(index.list_documents()), result.to_json(), trace_text(result.trace), repr(result),
                 repr(index.flat_search("lighthouse"))]
    said.append(caplog.text)
    assert SECRET not in "\n".join(said)  # ...and nowhere else
