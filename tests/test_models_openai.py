"""OpenAI-compatible client against a real local HTTP server (127.0.0.1) backed by a tiny HF model."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

from vlamb_nb import runner
from vlamb_nb.errors import SettingError
from vlamb_nb.models import IMAGE_SLOT, DecodingParams, Request, ScriptedModel, load_model, user_message
from vlamb_nb.models.openai_compat import OpenAIModel, decoding_body, to_openai_messages
from vlamb_nb.models.serve import ChatHandler, ChatServer, request_from_openai


class FaultyHandler(ChatHandler):
    """Plays the server's scripted faults first: ('status', code) or ('sleep', seconds)."""

    def do_POST(self) -> None:  # noqa: N802
        with self.server.fault_lock:
            fault = self.server.faults.pop(0) if self.server.faults else None
            self.server.seen_auth.append(self.headers.get("Authorization"))
        if fault and fault[0] == "status":
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            self._send(fault[1], {"error": {"message": "slow down"}}, headers={"Retry-After": "0"})
            return
        if fault and fault[0] == "sleep":
            time.sleep(fault[1])
        super().do_POST()


@pytest.fixture
def server_factory():
    servers: list[ChatServer] = []

    def make(model, faults=()):
        srv = ChatServer(model, host="127.0.0.1", port=0, handler=FaultyHandler)
        srv.faults, srv.fault_lock, srv.seen_auth = list(faults), threading.Lock(), []
        servers.append(srv.start(lifetime=120))
        return srv

    yield make
    for s in servers:
        s.stop()


def _echo_model():
    """Answers with what it received, so the test can see the bytes crossed HTTP intact."""
    def respond(r: Request) -> str:
        return json.dumps({"text": r.prompt_text, "sizes": [list(im.size) for im in r.images],
                           "pixel": [list(im.getpixel((0, 0))) for im in r.images],
                           "max_new_tokens": r.params.max_new_tokens, "do_sample": r.params.do_sample})
    return ScriptedModel(respond, model_id="echo")


def _image(w=40, h=30, colour=(10, 200, 30)):
    from PIL import Image

    return Image.new("RGB", (w, h), colour)


def test_messages_and_params_round_trip():
    req = Request(id="a", messages=[user_message("Look:", IMAGE_SLOT, "what colour?")], images=[_image()],
                  params=DecodingParams(max_new_tokens=7, do_sample=True, temperature=0.7, seed=3))
    msgs, sizes = to_openai_messages(req)
    assert sizes == [(40, 30)]
    parts = msgs[0]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text"]
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    body = {"messages": msgs, **decoding_body(req.params)}
    back = request_from_openai(body)
    assert back.prompt_text == req.prompt_text and back.images[0].size == (40, 30)
    assert back.params.max_new_tokens == 7 and back.params.do_sample and back.params.seed == 3
    assert decoding_body(DecodingParams())["temperature"] == 0.0
    with pytest.raises(SettingError):
        decoding_body(DecodingParams(num_beams=2))


def test_api_key_only_from_environment_and_never_in_metadata(monkeypatch, server_factory):
    monkeypatch.setenv("VLAMB_TEST_KEY", "sk-secret-123")
    srv = server_factory(_echo_model())
    m = OpenAIModel("echo", base_url=srv.base_url, api_key_env="VLAMB_TEST_KEY")
    g = m.generate([Request(id="x", messages=[user_message("hi")])])[0]
    assert g.error is None
    assert srv.seen_auth == ["Bearer sk-secret-123"]
    assert "sk-secret" not in json.dumps(m.info.to_dict()) and "sk-secret" not in repr(vars(m))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(SettingError, match="OPENAI_API_KEY"):
        OpenAIModel("gpt-4o")  # the real API without a key is refused up front


def test_429_then_success_and_concurrency(server_factory):
    srv = server_factory(_echo_model(), faults=[("status", 429), ("status", 503)])
    m = OpenAIModel("echo", base_url=srv.base_url, backoff=0.01, concurrency=3)
    reqs = [Request(id=f"q{i}", messages=[user_message(IMAGE_SLOT, f"question {i}")], images=[_image(20 + i, 10)],
                    params=DecodingParams(max_new_tokens=5)) for i in range(6)]
    gens = m.generate(reqs)
    assert [g.request_id for g in gens] == [r.id for r in reqs]
    assert all(g.error is None for g in gens), [g.error for g in gens]
    assert m.http_attempts == 8  # six requests plus the two retried faults
    seen = [json.loads(g.text) for g in gens]
    assert [s["text"] for s in seen] == [f"question {i}" for i in range(6)]
    assert [s["sizes"] for s in seen] == [[[20 + i, 10]] for i in range(6)]
    assert seen[0]["pixel"] == [[10, 200, 30]] and seen[0]["max_new_tokens"] == 5 and not seen[0]["do_sample"]
    assert gens[0].image_sizes == [(20, 10)]


def test_non_retryable_status_and_timeout_fail_the_request_only(server_factory):
    srv = server_factory(_echo_model(), faults=[("status", 400)])
    m = OpenAIModel("echo", base_url=srv.base_url, backoff=0.01)
    g = m.generate([Request(id="x", messages=[user_message("hi")])])[0]
    assert "HTTP 400" in g.error and m.http_attempts == 1
    slow = server_factory(_echo_model(), faults=[("sleep", 1.5), ("sleep", 1.5)])
    m = OpenAIModel("echo", base_url=slow.base_url, timeout=0.3, max_retries=1, backoff=0.01)
    g = m.generate([Request(id="y", messages=[user_message("hi")])])[0]
    # bounded by the client's timeout, not the server's delay: a client that waited would get the answer
    assert "timed out" in g.error and "gave up after 2 attempts" in g.error
    ok = server_factory(_echo_model(), faults=[("sleep", 0.6)])
    m = OpenAIModel("echo", base_url=ok.base_url, timeout=0.3, max_retries=2, backoff=0.01)
    assert m.generate([Request(id="z", messages=[user_message("hi")])])[0].error is None


def test_unreachable_endpoint_is_a_recorded_failure():
    m = OpenAIModel("echo", base_url="http://127.0.0.1:9/v1", max_retries=1, backoff=0.01, timeout=1)
    out = runner.run(m, [Request(id="x", messages=[user_message("hi")])], None, progress=False)
    assert "cannot reach" in out["error"].iloc[0] or "timed out" in out["error"].iloc[0]


@pytest.mark.slow
def test_tiny_hf_model_over_http_matches_direct_calls(server_factory):
    hf = load_model("tiny:qwen2_5_vl", quantization="4bit")
    srv = server_factory(hf)
    client = load_model("openai:tiny-qwen", base_url=srv.base_url, concurrency=2, backoff=0.01)
    assert client.info.model_id == "openai:tiny-qwen" and client.info.backend == "openai"
    rng = np.random.default_rng(1)
    from PIL import Image

    imgs = [Image.fromarray(rng.integers(0, 255, (60 + 20 * i, 80, 3), dtype=np.uint8)) for i in range(3)]
    reqs = [Request(id=f"r{i}", messages=[user_message(IMAGE_SLOT, f"Describe {i}")], images=[imgs[i]],
                    params=DecodingParams(max_new_tokens=5)) for i in range(3)]
    reqs.append(Request(id="t", messages=[user_message("text only")], params=DecodingParams(max_new_tokens=5)))
    over_http = runner.run(client, reqs, None, batch_size=4, progress=False)
    direct = [hf.generate([r])[0] for r in reqs]
    assert over_http["error"].isna().all()
    assert list(over_http["text"]) == [g.text for g in direct]
    assert list(over_http["prompt_tokens"]) == [g.prompt_tokens for g in direct]


def test_a_client_gone_mid_answer_is_counted_not_a_traceback_and_other_faults_are_one_line(capfd):
    from vlamb_nb.models import ScriptedModel

    srv = ChatServer(ScriptedModel(lambda req: "A"), host="127.0.0.1", port=0)
    try:
        for err in (BrokenPipeError(32, "Broken pipe"), ConnectionResetError(104, "Connection reset by peer")):
            try:
                raise err
            except ConnectionError:
                srv.handle_error(None, ("127.0.0.1", 5))
        assert srv.dropped == 2 and capfd.readouterr().err == ""
        try:
            raise ValueError("a bad byte")
        except ValueError:
            srv.handle_error(None, ("127.0.0.1", 5))
        err = capfd.readouterr().err
        assert err.strip().splitlines() == ["vlamb-nb chat server: a request from 127.0.0.1 failed: ValueError: a bad byte"]
    finally:
        srv.server_close()
