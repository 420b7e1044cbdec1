"""The OpenAI-compatible client against deliberately faulty HTTP servers on 127.0.0.1 (``fixtures_http``)."""

from __future__ import annotations

import json
import logging
import pickle
import time
from collections.abc import Callable
from email.utils import formatdate
from typing import Any

import pytest
from fixtures_http import FaultHandler, FaultServer, Script, completion

from vlamb_nb import runner
from vlamb_nb.errors import SettingError
from vlamb_nb.models import Request, user_message
from vlamb_nb.models.openai_compat import DETAIL_CHARS, OpenAIModel, retry_after_seconds

pytestmark = pytest.mark.timeout(10)

KEY_ENV = "VLAMB_FAULT_KEY"
KEY = "sk-fault-0123456789abcdef"

@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


def ok_after(n_faults: int, fault: Callable[[FaultHandler], None]) -> Script:
    """Fail the first ``n_faults`` requests with ``fault``, then answer "ok"."""
    def script(h: FaultHandler, n: int, body: Any) -> None:
        if n < n_faults:
            fault(h)
        else:
            h.reply(200, completion("ok"))
    return script


def model(srv: FaultServer, **kw: Any) -> OpenAIModel:
    kw = {"base_url": srv.base_url, "backoff": 0.01, "max_retries": 2, "timeout": 5, "api_key_env": KEY_ENV, **kw}
    return OpenAIModel("m", **kw)


def ask(m: OpenAIModel, prompt: str = "hi", rid: str = "a"):
    return m.generate([Request(id=rid, messages=[user_message(prompt)])])[0]


# -- retries ----------------------------------------------------------------------------------------

def test_500_then_success(fault_server):
    srv = fault_server(ok_after(1, lambda h: h.reply(500, {"error": {"message": "boom"}})))
    m = model(srv)
    g = ask(m)
    assert g.error is None and g.text == "ok" and g.finish_reason == "stop"
    assert m.http_attempts == 2 and len(srv.hits) == 2


def test_429_retry_after_is_honoured(fault_server):
    srv = fault_server(ok_after(1, lambda h: h.reply(429, {"error": {"message": "slow down"}},
                                                     headers={"Retry-After": "1"})))
    m = model(srv, backoff=0.01)  # without Retry-After the retry would come after ~10 ms
    g = ask(m)
    assert g.error is None and g.text == "ok"
    waited = srv.hits[1]["t"] - srv.hits[0]["t"]
    assert waited >= 0.95  # a lower bound only: a busy machine makes every wait longer, never shorter


def test_retry_after_zero_or_in_the_past_gets_the_jittered_backoff(fault_server):
    """A 429 that says "again now" to a whole fleet would bring it back in step: the backoff spreads it."""
    srv = fault_server(ok_after(1, lambda h: h.reply(429, {"error": {}}, headers={"Retry-After": "0"})))
    m = model(srv, backoff=0.4)
    g = ask(m)
    assert g.error is None and srv.hits[1]["t"] - srv.hits[0]["t"] >= 0.19  # 0.4 s x [0.5, 1): not at once
    waits = {m._sleep_for(2, v) for v in ("0", "-5", formatdate(time.time() - 60, usegmt=True)) for _ in range(5)}
    assert all(0.8 <= w <= 1.6 for w in waits) and len(waits) > 1  # 0.4 x 2^2, jittered
    assert m._sleep_for(2, "1") == 1.0


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_capped_by_max_backoff(fault_server, status):
    srv = fault_server(ok_after(1, lambda h: h.reply(status, {"error": {}}, headers={"Retry-After": "30"})))
    m = model(srv, max_backoff=0.2)
    g = ask(m)  # a 30 s wait would run into the module's 10 s timeout: the cap is what lets this pass
    assert g.error is None and len(srv.hits) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retried(fault_server, status):
    srv = fault_server(lambda h, n, b: h.reply(status, {"error": {"message": "no"}}))
    m = model(srv)
    g = ask(m)
    assert f"HTTP {status}" in g.error and m.http_attempts == 1 and len(srv.hits) == 1


@pytest.mark.parametrize("status", [408, 409])
def test_408_and_409_are_retried(fault_server, status):
    srv = fault_server(lambda h, n, b: h.reply(status, {"error": {"message": "again"}}))
    m = model(srv, max_retries=1)
    g = ask(m)
    assert "gave up after 2 attempts" in g.error and f"HTTP {status}" in g.error and len(srv.hits) == 2


def test_retry_after_parsing():
    assert retry_after_seconds("1") == 1.0 and retry_after_seconds(" 2.5 ") == 2.5
    assert retry_after_seconds("-3") == 0.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds("nan") is None and retry_after_seconds("inf") is None
    in_a_minute = retry_after_seconds(formatdate(time.time() + 60, usegmt=True))
    assert in_a_minute is not None and 55 < in_a_minute <= 60
    assert retry_after_seconds(formatdate(time.time() - 60, usegmt=True)) == 0.0


# -- a total deadline -------------------------------------------------------------------------------

def _trickle_body(h: FaultHandler, n: int, body: Any) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", "100")
    h.end_headers()
    for _ in range(100):
        h.wfile.write(b" ")
        if h.server.stopping.wait(1.0):
            return


def _trickle_headers(h: FaultHandler, n: int, body: Any) -> None:
    for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}":
        h.wfile.write(bytes([byte]))
        if h.server.stopping.wait(1.0):
            return


@pytest.mark.parametrize("script", [_trickle_body, _trickle_headers], ids=["body", "headers"])
def test_a_trickling_server_fails_at_the_total_deadline(fault_server, script):
    srv = fault_server(script)
    m = model(srv, timeout=2, max_retries=0)
    t0 = time.monotonic()
    g = ask(m)
    elapsed = time.monotonic() - t0
    assert "timed out after 2 s" in g.error and "gave up after 1 attempts" in g.error
    # every byte arrived within the per-read timeout; the total one still holds (the body would take 100 s,
    # far past the module's 10 s timeout)
    assert elapsed >= 1.8


# -- redirects and keys -----------------------------------------------------------------------------

@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_a_failure_and_is_not_followed(fault_server, key, status):
    elsewhere = fault_server(lambda h, n, b: h.reply(200, completion("stolen")))
    target = f"{elsewhere.base_url}/chat/completions"
    srv = fault_server(lambda h, n, b: h.reply(status, b"", headers={"Location": target}))
    m = model(srv)
    g = ask(m)
    assert f"HTTP {status} redirect" in g.error and target in g.error
    assert elsewhere.hits == []  # neither the request (as GET or POST) nor the key went there
    assert len(srv.hits) == 1 and srv.hits[0]["auth"] == f"Bearer {key}"
    assert key not in g.error


def test_a_401_echoing_the_key_never_shows_it(fault_server, key, caplog):
    def echo(h: FaultHandler, n: int, body: Any) -> None:
        auth = h.headers.get("Authorization")
        # the key straddles the point where the error detail is cut (DETAIL_CHARS), so cutting before
        # scrubbing would leave half of it in the message
        head = '{"error": {"message": "' + "x" * 200 + " Incorrect API key provided: "
        head += "x" * (DETAIL_CHARS - 16 - len(head))
        body = f'{head}{key}; you sent {auth}"}}}}'.encode()
        assert body.index(key.encode()) == DETAIL_CHARS - 16
        h.reply(401, body, headers={"X-Echo": auth, "X-Key": key})

    srv = fault_server(echo)
    caplog.set_level(logging.DEBUG, logger="httpcore")
    caplog.set_level(logging.DEBUG, logger="httpx")
    m = model(srv)
    g = ask(m)
    assert "HTTP 401" in g.error and m.http_attempts == 1
    assert key not in g.error and key[:12] not in g.error
    assert srv.hits[0]["auth"] == f"Bearer {key}"  # the key was sent, to the right place
    assert "X-Echo" in caplog.text  # httpcore did log the response headers...
    assert key not in caplog.text and key[:12] not in caplog.text  # ...with the key masked


def test_log_filter_masks_authorization_headers(caplog):
    caplog.set_level(logging.DEBUG, logger="httpcore")
    logging.getLogger("httpcore.http11").debug("send_request_headers %r",
                                               [(b"Authorization", b"Bearer sk-some-other-secret")])
    assert "sk-some-other-secret" not in caplog.text and "Bearer ***" in caplog.text


# -- replies without an answer ----------------------------------------------------------------------

def test_malformed_json_in_a_200_is_a_clear_failure(fault_server):
    srv = fault_server(lambda h, n, b: h.reply(200, b'{"choices": [{"message": '))
    m = model(srv)
    g = ask(m)
    assert "malformed JSON in the HTTP 200 reply" in g.error and g.text == "" and g.finish_reason == "error"
    assert m.http_attempts == 1


@pytest.mark.parametrize("payload, expected", [
    (completion(None, "content_filter"), "content filter"),
    (completion("partial", "content_filter"), "content filter"),
    (completion(None, "stop"), "no content"),
    ({"id": "c", "choices": []}, "no choices"),
    ({"id": "c"}, "no choices"),
], ids=["filtered-null", "filtered-text", "null-content", "empty-choices", "no-choices"])
def test_a_reply_without_an_answer_is_a_failure(fault_server, payload, expected):
    srv = fault_server(lambda h, n, b: h.reply(200, payload))
    g = ask(model(srv))
    assert g.error and expected in g.error and g.text == ""


def test_a_filtered_answer_is_retried_by_a_rerun(fault_server, tmp_path):
    srv = fault_server(lambda h, n, b: h.reply(200, completion(None, "content_filter") if n == 0
                                               else completion("answer")))
    m = model(srv)
    reqs = [Request(id="a", messages=[user_message("hi")])]
    first = runner.run(m, reqs, tmp_path / "preds.jsonl", progress=False)
    assert first["error"].iloc[0] and first["finish_reason"].iloc[0] == "content_filter"
    second = runner.run(m, reqs, tmp_path / "preds.jsonl", progress=False)
    assert second["error"].isna().all() and second["text"].iloc[0] == "answer" and not second["cached"].iloc[0]


# -- concurrency ------------------------------------------------------------------------------------

def test_out_of_order_replies_are_matched_to_their_requests(fault_server):
    finished: list[str] = []

    def slow_first(h: FaultHandler, n: int, body: Any) -> None:
        prompt = body["messages"][0]["content"]
        time.sleep(0.15 * (5 - int(prompt[1:])))  # p0 is slowest, p4 fastest
        with h.server.lock:  # before the reply: once the last reply is out, the client may return at once
            finished.append(prompt)
        h.reply(200, completion(f"answer to {prompt}"))

    srv = fault_server(slow_first)
    m = model(srv, concurrency=5)
    reqs = [Request(id=f"id{i}", messages=[user_message(f"p{i}")]) for i in range(5)]
    gens = m.generate(reqs)
    assert finished != sorted(finished) and finished[-1] == "p0"  # the replies really came out of order
    assert [g.request_id for g in gens] == [r.id for r in reqs]
    assert [g.text for g in gens] == [f"answer to p{i}" for i in range(5)]


def test_model_pickles_after_use_and_closes(fault_server):
    srv = fault_server(lambda h, n, b: h.reply(200, completion("ok")))
    m = model(srv)
    assert ask(m).text == "ok"
    clone = pickle.loads(pickle.dumps(m))
    assert ask(clone).text == "ok" and clone.base_url == m.base_url
    m.close()
    assert ask(m).text == "ok"  # a closed model reopens its pool on the next request


# -- a deadline across retries ------------------------------------------------------------------------

def test_a_request_stops_at_its_deadline_across_all_retries(fault_server):
    srv = fault_server(_trickle_body)  # one byte a second: every attempt runs into its timeout
    m = model(srv, timeout=1, max_retries=5, deadline=2.5)
    t0 = time.monotonic()
    g = ask(m)
    elapsed = time.monotonic() - t0
    # six attempts of 1 s each would take 6 s (of 120 s each by default: 12 minutes); the deadline ends it
    # at the third
    assert "within the request's deadline of 2.5 s" in g.error and "timed out" in g.error
    assert elapsed >= 2.3 and len(srv.hits) == 3


def test_request_settings_have_sane_defaults_and_are_checked():
    m = OpenAIModel("m", base_url="http://127.0.0.1:9/v1")
    assert m.concurrency >= 32 and m.deadline == 600 and m.timeout == 120 and m.max_retries == 5
    assert OpenAIModel("m", base_url="http://127.0.0.1:9/v1", deadline=0).deadline is None  # 0: no deadline
    for bad in ({"concurrency": 0}, {"max_retries": -1}, {"timeout": 0}, {"deadline": -1}, {"concurrency": "many"}):
        with pytest.raises(SettingError):
            OpenAIModel("m", base_url="http://127.0.0.1:9/v1", **bad)


# -- credentials in the address -----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["api_key", "key"])
def test_query_parameters_are_sent_as_parameters_and_secrets_never_shown(fault_server, tmp_path, caplog, name):
    secret = "qs-secret-0123456789"
    srv = fault_server(lambda h, n, b: h.reply(500, {"error": {"message": f"upstream failed for {h.path}"}}))
    caplog.set_level(logging.INFO, logger="httpx")
    m = model(srv, base_url=f"{srv.base_url}/?api-version=2024-06-01&{name}={secret}", max_retries=0)
    out = runner.run(m, [Request(id="a", messages=[user_message("hi")])], tmp_path / "p.jsonl", progress=False)
    # the query goes with the request, after the route, not glued in front of /chat/completions
    assert srv.hits[0]["path"] == f"/v1/chat/completions?api-version=2024-06-01&{name}={secret}"
    stored = (tmp_path / "p.jsonl").read_text()
    error = out["error"].iloc[0]
    assert "HTTP 500" in error and f"{name}=***" in error  # the server echoed the address with the key: masked
    for shown in (error, stored, json.dumps(m.info.to_dict()), caplog.text, repr(m.base_url)):
        assert secret not in shown
    assert m.info.endpoint == f"{srv.base_url}?api-version=2024-06-01&{name}=***"
    assert "HTTP Request: POST" in caplog.text  # httpx did log the request line, masked


def test_credentials_before_the_host_are_refused_without_being_shown():
    with pytest.raises(SettingError) as err:
        OpenAIModel("m", base_url="http://alice:hunter2@127.0.0.1:9/v1")
    msg = str(err.value)
    assert "hunter2" not in msg and "alice" not in msg and "credentials" in msg and "api_key_env" in msg


def test_cli_run_refuses_credentials_in_the_base_url(tmp_path, capsys):
    from vlamb_nb import cli, get_benchmark

    src = get_benchmark("refadv").make_sample(tmp_path / "data", n=1)
    out = tmp_path / "p.jsonl"
    code = cli.main(["run", "refadv", "--model", "openai:m", "--base-url", "http://alice:hunter2@127.0.0.1:9/v1",
                     "--source", str(src), "--limit", "1", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == cli.EXIT_ERROR and "credentials" in err and "hunter2" not in err and not out.exists()


# -- the endpoint is part of a run's identity ---------------------------------------------------------

def test_one_model_name_served_by_two_endpoints_is_two_runs(fault_server, tmp_path):
    from vlamb_nb.run_identity import MixedRunsError, identify_runs, select_run
    from vlamb_nb.store import read_records

    one = fault_server(lambda h, n, b: h.reply(200, completion("from one")))
    two = fault_server(lambda h, n, b: h.reply(200, completion("from two")))
    reqs = [Request(id=f"q{i}", messages=[user_message(f"q{i}")], benchmark="b", setting="s") for i in range(3)]
    store = tmp_path / "p.jsonl"
    runner.run(model(one), reqs, store, progress=False)
    out = runner.run(model(two), reqs, store, progress=False)
    assert len(two.hits) == 3 and not out["cached"].any() and (out["text"] == "from two").all()
    runs = identify_runs(read_records(store))
    assert sorted(r.endpoint for r in runs) == sorted([one.base_url, two.base_url])
    assert all(r.endpoint in r.label for r in runs)
    with pytest.raises(MixedRunsError, match="2 runs"):
        select_run(read_records(store))


# -- one image conversion for every backend -------------------------------------------------------------

def _sent_image(body: Any):
    import base64
    import io

    from PIL import Image

    url = next(p for p in body["messages"][0]["content"] if p["type"] == "image_url")["image_url"]["url"]
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))), url


@pytest.mark.parametrize("kind", ["png-16-bit", "jpeg-cmyk", "jpeg-exif-rotated"])
def test_the_endpoint_gets_the_rgb_pixels_a_local_model_gets(fault_server, tmp_path, kind):
    import numpy as np
    from PIL import Image

    from vlamb_nb.images import load_image
    from vlamb_nb.models import IMAGE_SLOT

    if kind == "png-16-bit":
        path = tmp_path / "deep.png"
        Image.fromarray(np.arange(40 * 30, dtype=np.uint16).reshape(30, 40) * 50).save(path)  # 0..59950
        assert Image.open(path).mode.startswith("I")  # a real 16-bit greyscale file
    elif kind == "jpeg-cmyk":
        path = tmp_path / "print.jpg"
        Image.new("CMYK", (40, 30), (0, 128, 255, 20)).save(path, quality=95)
        assert Image.open(path).mode == "CMYK"
    else:
        path = tmp_path / "phone.jpg"
        exif = Image.Exif()
        exif[0x0112] = 6  # stored landscape, shown rotated 90 degrees
        Image.new("RGB", (40, 30), (200, 30, 30)).save(path, exif=exif)
    seen: list[Any] = []

    def keep(h: FaultHandler, n: int, body: Any) -> None:
        seen.append(body)
        h.reply(200, completion("ok"))

    srv = fault_server(keep)
    g = model(srv).generate([Request(id="a", messages=[user_message(IMAGE_SLOT, "what?")], images=[str(path)])])[0]
    sent, _ = _sent_image(seen[0])
    local = load_image(path)  # what a Hugging Face model is given
    assert g.error is None and sent.mode == "RGB" and sent.size == local.size
    assert np.array_equal(np.asarray(sent.convert("RGB")), np.asarray(local))
    assert g.image_sizes == [local.size]


def test_an_8_bit_rgb_file_is_sent_byte_for_byte(fault_server, tmp_path):
    import base64

    from PIL import Image

    from vlamb_nb.models import IMAGE_SLOT

    path = tmp_path / "plain.jpg"
    Image.new("RGB", (40, 30), (10, 200, 30)).save(path, quality=90)
    seen: list[Any] = []
    srv = fault_server(lambda h, n, b: (seen.append(b), h.reply(200, completion("ok")))[-1])
    model(srv).generate([Request(id="a", messages=[user_message(IMAGE_SLOT, "what?")], images=[str(path)])])
    _, url = _sent_image(seen[0])
    assert url.startswith("data:image/jpeg;base64,") and base64.b64decode(url.split(",", 1)[1]) == path.read_bytes()
