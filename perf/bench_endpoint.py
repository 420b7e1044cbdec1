"""Throughput against an OpenAI-compatible endpoint, all in one run (ratios are only comparable within a run).

A local endpoint on 127.0.0.1, in its own process (asyncio, as vLLM's server is), answers every chat
request after a fixed latency and counts, itself, how many requests it holds at once (peak in flight) and how often each request body
arrived (attempts). Real Ref-Adv requests (a generated sample via ``make_sample``, settings direct, cot,
bow and fixed) go through ``load_model("openai:...")`` and ``runner.run`` into a prediction store:

1. at 1, 4, 16 and 64 in flight: requests per second, the server's peak in flight, and the ratio to the
   ideal (latency × requests / in-flight seconds);
2. the old defaults, reproduced with the package itself: 4 in flight and ``runner.run(stream=False)``,
   i.e. batches of 8 with a barrier after each, as remote runs went before streaming (the image cache,
   which the old client lacked, is on in both: the old client decoded each image once per request);
   against them the default settings (``load_model`` and ``runner.run`` with nothing set);
3. an endpoint that accepts at most ``--capacity`` requests at once and answers the rest 429 with
   ``Retry-After``: the default settings must lose no request (every request answered in the store) and
   send none more often than its retry budget allows (attempts counted per request body by the server).

Targets (exit 1 when one is missed): 64 in flight reaches at least 0.8 of the ideal; the capacity-limited
run loses nothing and stays within the retry budget; the default settings are at least 8× the old defaults.

Usage: python perf/bench_endpoint.py [--items 150] [--latency 0.2] [--capacity 16]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

SETTINGS = ("direct", "cot", "bow", "fixed")
LEVELS = (1, 4, 16, 64)
ANSWER = '{"bbox_2d": [12, 20, 96, 140]}'
TARGET_RATIO, TARGET_SPEEDUP = 0.8, 8.0


# -- the endpoint -----------------------------------------------------------------------------------------
class Endpoint:
    """A minimal asyncio HTTP/1.1 chat endpoint (as vLLM's uvicorn is asyncio): every answer after ``latency``
    seconds; beyond ``capacity`` requests at once, 429 with ``Retry-After``. It counts, itself, the requests it
    holds at once (``peak``) and how often each request body arrived (``attempts``). ``GET /stats`` and
    ``POST /reset`` read and clear the counts. Cheap per request, so the client is what gets measured."""

    def __init__(self, latency: float, capacity: int | None = None, retry_after: float = 1.0) -> None:
        self.latency, self.capacity, self.retry_after = latency, capacity, retry_after
        self.lock = threading.Lock()  # stats() may be called from another thread
        self.now = 0
        self.answer = json.dumps({
            "id": "chatcmpl-bench", "object": "chat.completion", "model": "bench",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.peak = self.rejected = 0
            self.attempts: dict[str, int] = {}

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {"peak": self.peak, "rejected": self.rejected, "hits": sum(self.attempts.values()),
                    "attempts": dict(self.attempts)}

    async def _answer(self, method: str, path: str, body: bytes) -> tuple[int, bytes, str]:
        import asyncio

        if method == "GET" and path == "/stats":
            return 200, json.dumps(self.stats()).encode(), ""
        if method == "POST" and path == "/reset":
            self.reset()
            return 200, b"{}", ""
        digest = hashlib.sha256(body).hexdigest()
        with self.lock:
            self.attempts[digest] = self.attempts.get(digest, 0) + 1
            self.now += 1
            self.peak = max(self.peak, self.now)
            over = self.capacity is not None and self.now > self.capacity
            self.rejected += over
        try:
            if over:
                msg = json.dumps({"error": {"message": f"at most {self.capacity} requests at once"}}).encode()
                return 429, msg, f"Retry-After: {self.retry_after:g}\r\n"
            await asyncio.sleep(self.latency)
            return 200, self.answer, ""
        finally:
            with self.lock:
                self.now -= 1

    async def _connection(self, reader, writer) -> None:
        import asyncio

        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                method, path = head[0].split(" ")[:2]
                length = next((int(h.split(":", 1)[1]) for h in head[1:] if h.lower().startswith("content-length:")), 0)
                body = await reader.readexactly(length) if length else b""
                status, payload, extra = await self._answer(method, path, body)
                reason = {200: "OK", 429: "Too Many Requests"}.get(status, "")
                writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(payload)}\r\n{extra}\r\n".encode() + payload)
                await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    async def start(self, port: int = 0):
        """Listen on 127.0.0.1 (a large backlog: a burst of 64 connections must not be dropped)."""
        import asyncio

        self.server = await asyncio.start_server(self._connection, "127.0.0.1", port, backlog=1024)
        self.port = self.server.sockets[0].getsockname()[1]
        return self.server


def serve_forever(latency: float, capacity: int | None, retry_after: float, lifetime: float) -> None:
    """The endpoint process: print the port, serve until stdin closes (the parent died) or ``lifetime``."""
    import asyncio

    async def main() -> None:
        ep = Endpoint(latency, capacity, retry_after)
        await ep.start()
        print(ep.port, flush=True)
        await asyncio.sleep(lifetime)

    def parent_gone() -> None:
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=parent_gone, daemon=True).start()
    asyncio.run(main())
    os._exit(0)


class EndpointProcess:
    """An :class:`Endpoint` in a process of its own, so it never competes with the client for the GIL."""

    def __init__(self, latency: float, capacity: int | None = None, retry_after: float = 1.0,
                 lifetime: float = 900.0) -> None:
        cmd = [sys.executable, __file__, "--serve", "--latency", str(latency), "--retry-after", str(retry_after),
               "--lifetime", str(lifetime)] + (["--capacity", str(capacity)] if capacity else [])
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.strip().isdigit():
            self.close()
            raise RuntimeError(f"the endpoint process did not start (it printed {line!r})")
        self.base_url = f"http://127.0.0.1:{int(line)}/v1"

    def _call(self, method: str, route: str) -> dict[str, Any]:
        import httpx

        return httpx.request(method, self.base_url.removesuffix("/v1") + route, timeout=10).json()

    def reset(self) -> None:
        self._call("POST", "/reset")

    def stats(self) -> dict[str, Any]:
        return self._call("GET", "/stats")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def __enter__(self) -> EndpointProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EndpointThread:
    """The same endpoint on an event loop in a thread of this process (a quick check of the machinery)."""

    def __init__(self, latency: float, capacity: int | None = None, retry_after: float = 1.0) -> None:
        import asyncio

        self.ep = Endpoint(latency, capacity, retry_after)
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(self.ep.start())
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True, name="bench-endpoint")
        self.thread.start()
        if not ready.wait(10):
            raise RuntimeError("the endpoint did not start")
        self.base_url = f"http://127.0.0.1:{self.ep.port}/v1"

    def reset(self) -> None:
        self.ep.reset()

    def stats(self) -> dict[str, Any]:
        return self.ep.stats()

    def close(self) -> None:
        import asyncio

        async def shutdown() -> None:  # open connections end inside the loop, not at garbage collection
            self.ep.server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()

    def __enter__(self) -> EndpointThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- the client side ------------------------------------------------------------------------------------
def refadv_requests(directory: Path, items: int) -> list:
    """Real Ref-Adv requests (prompt text and JPEG image as the official runner sends them) on a sample."""
    from vlamb_nb import get_benchmark

    bench = get_benchmark("refadv")
    data = bench.load(bench.make_sample(directory / "data", n=items))
    return [r for s in SETTINGS for r in bench.requests(data, s)]


def measure(endpoint, reqs: list, store: Path, *, model_kwargs: dict[str, Any],
            run_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """One run into a fresh store; the server's own counts; what the store holds afterwards."""
    from vlamb_nb import runner
    from vlamb_nb.models import load_model
    from vlamb_nb.store import PredictionStore

    endpoint.reset()
    model = load_model("openai:bench", base_url=endpoint.base_url, **model_kwargs)
    t0 = time.perf_counter()
    out = runner.run(model, reqs, store, progress=False, **(run_kwargs or {}))
    seconds = time.perf_counter() - t0
    model.close()
    stats = endpoint.stats()
    st = PredictionStore(store)
    keys = [r.key(model.info) for r in reqs]
    answered = sum(1 for k in set(keys) if k in st)
    return {"requests": len(reqs), "seconds": seconds, "per_s": len(reqs) / seconds, "peak": stats["peak"],
            "hits": stats["hits"], "rejected": stats["rejected"], "attempts": stats["attempts"],
            "answered": answered, "distinct_keys": len(set(keys)), "failed": int(out["error"].notna().sum()),
            "strategy": out.attrs["strategy"], "budget": model.max_retries + 1,
            "cuts": model.last_limit.cuts if model.last_limit else 0}


def retry_budget(limited: dict[str, Any], clean: dict[str, Any]) -> dict[str, Any]:
    """Attempts per request of the limited run, counted by the server per request body.

    Two requests can send the same body (a setting that leaves an expression unchanged); the clean run
    (no 429, every request sent once) says how many requests share each body, so a body's budget is
    (max_retries + 1) times that number. With every body distinct the count is exactly per request.
    """
    shared = {b: n for b, n in clean["attempts"].items()}
    over = [b for b, n in limited["attempts"].items() if n > limited["budget"] * shared.get(b, 1)]
    worst = max((n / shared.get(b, 1) for b, n in limited["attempts"].items()), default=0.0)
    return {"over_budget": len(over), "max_attempts": worst, "bodies": len(shared),
            "shared_bodies": sum(1 for n in shared.values() if n > 1)}


def run_bench(*, items: int, latency: float, levels: tuple[int, ...] = LEVELS, capacity: int = 16,
              retry_after: float = 1.0, in_process: bool = False, workdir: Path | None = None) -> dict[str, Any]:
    """Every measurement of the module docstring; ``in_process`` runs the endpoints as threads (tests)."""
    from vlamb_nb.models.openai_compat import DEFAULT_CONCURRENCY

    make = EndpointThread if in_process else EndpointProcess
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(workdir or tmp)
        reqs = refadv_requests(root, items)
        res: dict[str, Any] = {"latency": latency, "requests": len(reqs), "levels": {},
                               "default_concurrency": DEFAULT_CONCURRENCY, "capacity": capacity,
                               "machine": f"{os.cpu_count()} CPU cores, load average {load:.1f} at the start"}
        with make(latency) as ep:
            measure(ep, reqs[:8], root / "warmup.jsonl", model_kwargs={"concurrency": 8})  # imports, first sockets
            for c in levels:
                r = measure(ep, reqs, root / f"c{c}.jsonl", model_kwargs={"concurrency": c})
                r["ideal_s"] = latency * len(reqs) / c
                r["ratio"] = r["ideal_s"] / r["seconds"]
                res["levels"][c] = r
            res["old"] = measure(ep, reqs, root / "old.jsonl", model_kwargs={"concurrency": 4},
                                 run_kwargs={"batch_size": 8, "stream": False})
            res["default"] = measure(ep, reqs, root / "default.jsonl", model_kwargs={})
        with make(latency, capacity=capacity, retry_after=retry_after) as ep:
            res["limited"] = measure(ep, reqs, root / "limited.jsonl", model_kwargs={})
    res["speedup"] = res["default"]["per_s"] / res["old"]["per_s"]
    res["limited"].update(retry_budget(res["limited"], res["default"]))
    res["clean_retries"] = res["default"]["hits"] - len(reqs)  # 0: the clean run sent each request once
    return res


def misses(res: dict[str, Any]) -> list[str]:
    """The targets a result misses (empty: all met)."""
    out = []
    top = res["levels"].get(64)
    if top is not None and top["ratio"] < TARGET_RATIO:
        out.append(f"64 in flight reached {top['ratio']:.3f} of the ideal (target {TARGET_RATIO})")
    lim = res["limited"]
    if lim["answered"] < lim["distinct_keys"] or lim["failed"]:
        out.append(f"capacity-limited endpoint: {lim['distinct_keys'] - lim['answered']} request(s) without an "
                   f"answer in the store, {lim['failed']} failed")
    if lim["over_budget"] or res["clean_retries"]:
        out.append(f"capacity-limited endpoint: {lim['over_budget']} request(s) sent more often than the retry "
                   f"budget of {lim['budget']} attempts allows" + (
                       f" (the reference run needed {res['clean_retries']} retries, so bodies were miscounted)"
                       if res["clean_retries"] else ""))
    if res["speedup"] < TARGET_SPEEDUP:
        out.append(f"default settings {res['speedup']:.1f}x the old defaults (target {TARGET_SPEEDUP:g}x)")
    return out


def report(res: dict[str, Any]) -> str:
    lat, n = res["latency"], res["requests"]
    lines = [f"{n} Ref-Adv requests ({', '.join(SETTINGS)}), endpoint latency {lat * 1000:.0f} ms, "
             "through load_model('openai:...') + runner.run into a prediction store; " + res["machine"], "",
             f"{'in flight':>9} {'seconds':>8} {'req/s':>7} {'peak (server)':>13} {'ideal s':>8} {'of ideal':>8}"]
    for c, r in res["levels"].items():
        lines.append(f"{c:>9} {r['seconds']:>8.2f} {r['per_s']:>7.1f} {r['peak']:>13} {r['ideal_s']:>8.2f} "
                     f"{r['ratio']:>8.2f}")
    old, new = res["old"], res["default"]
    lines += ["", f"old defaults (4 in flight, batches of 8 with a barrier): {old['seconds']:.2f} s, "
              f"{old['per_s']:.1f} req/s, peak {old['peak']}",
              f"default settings ({res['default_concurrency']} in flight, streamed):        {new['seconds']:.2f} s, "
              f"{new['per_s']:.1f} req/s, peak {new['peak']}",
              f"speedup of the default settings over the old defaults: {res['speedup']:.1f}x", ""]
    lim = res["limited"]
    lines.append(f"capacity {res['capacity']} at once (429 + Retry-After beyond), default settings: "
                 f"{lim['seconds']:.2f} s, {lim['per_s']:.1f} req/s, peak {lim['peak']}, {lim['rejected']} answered "
                 f"429, in-flight limit halved {lim['cuts']} time(s); {lim['answered']} of {lim['distinct_keys']} "
                 f"requests answered in the store, {lim['failed']} failed; most attempts of one request "
                 f"{lim['max_attempts']:g} (budget {lim['budget']}; {lim['shared_bodies']} request bodies shared "
                 f"by two requests or more, counted per request)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=150, help="Ref-Adv sample items (4 requests each)")
    p.add_argument("--latency", type=float, default=0.2, help="seconds the endpoint takes per answer")
    p.add_argument("--capacity", type=int, help="requests at once of the capacity-limited endpoint (default 16)")
    p.add_argument("--retry-after", type=float, default=1.0, help="its Retry-After, seconds")
    p.add_argument("--levels", default=",".join(map(str, LEVELS)), help="requests in flight to measure, e.g. 1,4,16,64")
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--lifetime", type=float, default=900.0, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.serve:
        serve_forever(a.latency, a.capacity, a.retry_after, a.lifetime)
        return 0
    levels = tuple(int(x) for x in a.levels.split(",") if x.strip())
    res = run_bench(items=a.items, latency=a.latency, levels=levels, capacity=a.capacity or 16,
                    retry_after=a.retry_after)
    print(report(res))
    missed = misses(res)
    print("\n" + ("targets missed: " + "; ".join(missed) if missed else
                  f"targets met: 64 in flight >= {TARGET_RATIO} of ideal; capacity-limited run lost nothing and "
                  f"kept every retry budget; default settings >= {TARGET_SPEEDUP:g}x the old defaults"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
