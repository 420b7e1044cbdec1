"""Streaming to remote endpoints: no batch barrier, each answer stored as it arrives, crash safety under
SIGKILL, the adaptive in-flight limit, images encoded once, and the endpoint benchmark's machinery.

The servers are the faulty-server machinery of ``fixtures_http`` (127.0.0.1, stopped after each test).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures_http import FaultHandler, FaultServer, completion

from vlamb_nb import runner
from vlamb_nb.models import IMAGE_SLOT, Request, ScriptedModel, StreamingVLM, user_message
from vlamb_nb.models.openai_compat import AdaptiveLimit, OpenAIModel
from vlamb_nb.models.replay import ReplayModel
from vlamb_nb.store import PredictionStore

pytestmark = pytest.mark.timeout(60)
REPO = Path(__file__).resolve().parent.parent


def _model(srv: FaultServer, **kw: Any) -> OpenAIModel:
    return OpenAIModel("m", base_url=srv.base_url, **{"backoff": 0.01, "timeout": 10, **kw})


def _reqs(n: int) -> list[Request]:
    return [Request(id=f"q{i}", messages=[user_message(f"q{i}")], benchmark="b", setting="s") for i in range(n)]


def _prompt(body: Any) -> str:
    return body["messages"][0]["content"]


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


# -- which strategy ------------------------------------------------------------------------------------

def test_the_runner_streams_to_endpoints_and_batches_local_models(fault_server, tmp_path):
    srv = fault_server(lambda h, n, b: h.reply(200, completion("ok")))
    remote = _model(srv)
    assert isinstance(remote, StreamingVLM)  # declared by the backend, not chosen by the caller
    assert runner.run(remote, _reqs(3), None, progress=False).attrs["strategy"] == "stream"
    scripted = ScriptedModel(lambda r: "x")
    replay = ReplayModel([{"prompt": "q0", "text": "a", "turn": 0}])
    for local in (scripted, replay):
        assert not isinstance(local, StreamingVLM)
        assert runner.run(local, _reqs(3), None, progress=False).attrs["strategy"] == "batch"
    forced = runner.run(remote, _reqs(3), None, progress=False, stream=False)  # the old barrier, on request
    assert forced.attrs["strategy"] == "batch" and forced["text"].eq("ok").all()
    with pytest.raises(ValueError, match="batches only"):
        runner.run(scripted, _reqs(1), None, progress=False, stream=True)


# -- no barrier, each answer kept as it arrives -----------------------------------------------------------

def test_a_slow_request_holds_back_nothing_and_each_answer_is_stored_on_arrival(fault_server, tmp_path, monkeypatch):
    store = tmp_path / "p.jsonl"
    moved: list[int] = []

    class Bar:
        def update(self, n: int) -> None:
            moved.append(n)

        def write(self, text: str) -> None:
            pass

        def close(self) -> None:
            pass

    monkeypatch.setattr(runner, "_progress", lambda total, enabled, desc: Bar())
    while_slow: dict[str, int] = {}

    def script(h: FaultHandler, n: int, body: Any) -> None:
        if _prompt(body) == "q0":  # held until the other eleven are answered and stored (5 s at most)
            give_up = time.monotonic() + 5
            while time.monotonic() < give_up and (_lines(store) < 11 or sum(moved) < 11):
                time.sleep(0.01)
            while_slow.update(stored=_lines(store), bar=sum(moved), sent=len(h.server.hits))
        else:
            time.sleep(0.02)
        h.reply(200, completion(f"answer {_prompt(body)}"))

    srv = fault_server(script)
    out = runner.run(_model(srv, concurrency=4), _reqs(12), store, batch_size=4)
    # with a barrier after each batch of 4, nothing after q0's batch could be sent while q0 was pending
    assert while_slow == {"stored": 11, "bar": 11, "sent": 12}
    assert out["error"].isna().all() and out["text"].tolist() == [f"answer q{i}" for i in range(12)]
    assert sum(moved) == 12 and len(PredictionStore(store).keys()) == 12


def test_the_store_takes_records_from_many_threads_one_at_a_time(tmp_path):
    st = PredictionStore(tmp_path / "p.jsonl").open()

    def write(t: int) -> None:
        for i in range(50):
            st.append_many([{"key": f"{t}-{i}-{j}", "text": "x" * 500} for j in range(3)])

    threads = [threading.Thread(target=write, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    st.close()
    lines = (tmp_path / "p.jsonl").read_text().splitlines()
    assert len(lines) == 8 * 50 * 3 and len({json.loads(ln)["key"] for ln in lines}) == len(lines)


# -- crash safety ----------------------------------------------------------------------------------------

CHILD = """
import sys
from vlamb_nb import runner
from vlamb_nb.models import Request, load_model, user_message
reqs = [Request(id=f"q{i}", messages=[user_message(f"q{i}")], benchmark="b", setting="s") for i in range(40)]
runner.run(load_model("openai:m", base_url=sys.argv[1], concurrency=4, max_retries=0), reqs, sys.argv[2],
           progress=False)
"""


def test_sigkill_mid_run_loses_only_requests_in_flight_and_a_rerun_duplicates_nothing(fault_server, tmp_path):
    def slow(h: FaultHandler, n: int, body: Any) -> None:
        time.sleep(0.15)
        h.reply(200, completion(f"answer {_prompt(body)}"))

    srv = fault_server(slow)
    store = tmp_path / "p.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, srv.base_url, str(store)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    give_up = time.monotonic() + 40
    while time.monotonic() < give_up and proc.poll() is None and _lines(store) < 8:
        time.sleep(0.005)
    assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.3)  # requests already on the wire reach the server
    # a request the dying process had not finished uploading arrives without a readable body
    sent_before = {_prompt(h["body"]) for h in srv.hits if h["body"] is not None}
    kept = {r["request_id"] for r in PredictionStore(store).records()}
    assert 8 <= len(kept) < 40 and kept <= sent_before
    assert len(sent_before - kept) <= 4  # lost: at most the 4 requests in flight when it died

    hits_before = len(srv.hits)
    out = runner.run(_model(srv, concurrency=4), _reqs(40), store, progress=False)
    resent = [_prompt(h["body"]) for h in srv.hits[hits_before:]]
    assert out["error"].isna().all() and int((~out["cached"]).sum()) == 40 - len(kept)
    assert sorted(resent) == sorted({f"q{i}" for i in range(40)} - kept)  # only what was not stored
    keys = [json.loads(ln)["key"] for ln in store.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 40  # nothing stored twice


# -- the adaptive in-flight limit -------------------------------------------------------------------------

def test_adaptive_limit_halves_once_per_round_trip_pauses_and_climbs_back():
    lim = AdaptiveLimit(8)
    sent = [lim.acquire() for _ in range(8)]
    assert lim.active == lim.peak == 8
    for s in sent[:4]:  # four 429s from one round trip are one congestion signal
        lim.release(s, overloaded=True)
    assert lim.allowed == 4 and lim.cuts == 1
    for s in sent[4:]:
        lim.release(s, ok=True)
    s = lim.acquire()  # sent after the cut: its 429 is news, and cuts again
    lim.release(s, overloaded=True)
    assert lim.allowed == 2 and lim.cuts == 2
    for _ in range(60):
        lim.release(lim.acquire(), ok=True)
    assert lim.allowed == 8  # back to the maximum, never past it
    lim.release(lim.acquire(), overloaded=True, retry_after=0.3)
    t0 = time.monotonic()
    lim.release(lim.acquire(), ok=True)
    assert time.monotonic() - t0 >= 0.25  # Retry-After held the next send back


def test_an_overloaded_endpoint_gets_fewer_requests_in_flight_and_loses_none(fault_server):
    capacity, state, lock = 3, {"now": 0, "peak_served": 0, "rejected": 0}, threading.Lock()

    def limited(h: FaultHandler, n: int, body: Any) -> None:
        with lock:
            state["now"] += 1
            over = state["now"] > capacity
            state["rejected"] += over
            if not over:
                state["peak_served"] = max(state["peak_served"], state["now"])
        try:
            if over:
                h.reply(429, {"error": {"message": "busy"}}, headers={"Retry-After": "0"})
            else:
                time.sleep(0.05)
                h.reply(200, completion(f"answer {_prompt(body)}"))
        finally:
            with lock:
                state["now"] -= 1

    srv = fault_server(limited)
    m = _model(srv, concurrency=16, max_retries=8)  # probing past the capacity costs retries; 8 loses none
    out = runner.run(m, _reqs(60), None, progress=False)
    attempts: dict[str, int] = {}
    for h in srv.hits:
        attempts[_prompt(h["body"])] = attempts.get(_prompt(h["body"]), 0) + 1
    assert out["error"].isna().all() and out["text"].tolist() == [f"answer q{i}" for i in range(60)]
    assert max(attempts.values()) <= 9  # nobody past the retry budget
    assert m.last_limit is not None and m.last_limit.cuts >= 1 and state["rejected"] >= 1
    assert state["peak_served"] <= capacity


# -- images encoded once -----------------------------------------------------------------------------------

def test_each_image_is_encoded_once_per_model_and_the_cache_is_bounded(fault_server, tmp_path):
    import io

    from PIL import Image

    path = tmp_path / "a.png"
    Image.new("RGB", (30, 20), (1, 2, 3)).save(path)
    buf = io.BytesIO()
    Image.new("RGB", (50, 40), (9, 9, 9)).save(buf, format="JPEG")
    pil = Image.new("RGBA", (20, 20), (200, 0, 0, 128))
    images = [str(path), buf.getvalue(), pil]
    urls: dict[str, set[str]] = {}

    def keep(h: FaultHandler, n: int, body: Any) -> None:
        parts = body["messages"][0]["content"]
        url = next(p for p in parts if p["type"] == "image_url")["image_url"]["url"]
        text = next(p for p in parts if p["type"] == "text")["text"]
        with h.server.lock:
            urls.setdefault(text.split()[0], set()).add(url)
        time.sleep(0.02)
        h.reply(200, completion("ok"))

    srv = fault_server(keep)
    reqs = [Request(id=f"r{i}", messages=[user_message(IMAGE_SLOT, f"img{i % 3} request {i}")],
                    images=[images[i % 3]]) for i in range(18)]
    m = _model(srv, concurrency=9)
    gens = m.generate(reqs)
    assert all(g.error is None for g in gens)
    assert m.images.encodings == 3 and len(m.images) == 3  # 18 requests, 3 images, 9 at once
    assert all(len(u) == 1 for u in urls.values()) and len(urls) == 3  # the same bytes every time
    small = _model(srv, image_cache_bytes=len(next(iter(urls["img0"]))) + 10)
    small.generate(reqs[:3])
    assert len(small.images) == 1 and small.images.size <= small.images.max_bytes  # least recently used dropped


# -- the benchmark script's machinery, tiny (no timing asserted) ------------------------------------------

def _bench_module():
    spec = importlib.util.spec_from_file_location("bench_endpoint", REPO / "perf" / "bench_endpoint.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules["bench_endpoint"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_endpoint_benchmark_runs_tiny_and_checks_its_targets(tmp_path):
    bench = _bench_module()
    res = bench.run_bench(items=2, latency=0.01, levels=(1, 4), capacity=2, retry_after=0.0, in_process=True,
                          workdir=tmp_path)
    assert res["requests"] == 8 and set(res["levels"]) == {1, 4}
    for c, r in res["levels"].items():
        assert r["peak"] <= c and r["answered"] == 8 and r["failed"] == 0 and r["strategy"] == "stream"
    assert res["old"]["strategy"] == "batch" and res["old"]["peak"] <= 4
    lim = res["limited"]
    assert lim["answered"] == lim["distinct_keys"] == 8 and lim["failed"] == 0 and lim["over_budget"] == 0
    assert res["clean_retries"] == 0
    text = bench.report(res)
    assert "of ideal" in text and "speedup" in text and "capacity 2 at once" in text
    # the checker flags what it must, whatever the timings were
    broken = json.loads(json.dumps(res))
    broken["limited"].update(answered=7, over_budget=1)
    broken["levels"]["64"] = {"ratio": 0.5}
    broken["levels"] = {int(k): v for k, v in broken["levels"].items()}
    broken["speedup"] = 2.0
    missed = " ".join(bench.misses(broken))
    assert "without an answer" in missed and "retry budget" in missed and "of the ideal" in missed
    assert "old defaults" in missed


def test_a_judge_sets_its_own_requests_in_flight(fault_server):
    from vlamb_nb.scorers.judge import JudgeSpec, first_token_parser, run_judge

    state, lock = {"now": 0, "peak": 0}, threading.Lock()

    def answer(h: FaultHandler, n: int, body: Any) -> None:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        h.reply(200, completion("yes"))

    srv = fault_server(answer)
    spec = JudgeSpec("yn", template="Is {x} fine?", parse=first_token_parser(["yes", "no"]))
    rows = [{"request_id": f"r{i}", "x": i} for i in range(12)]
    judged = run_judge(_model(srv), spec, rows, progress=False, concurrency=2)  # the model's own is 64
    assert judged["judge_label"].eq("yes").all() and state["peak"] == 2
