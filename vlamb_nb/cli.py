"""``vlamb-nb``: dataset statistics, scoring, runs, comparisons, reference checks and the one-command reproduction.

Every subcommand dispatches to the benchmark's own methods, so the CLI adds no logic of
its own. Expected failures (bad input, missing feature) print one line and exit non-zero.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from vlamb_nb.errors import NotAvailableError, VlambError

EXIT_ERROR = 2
EXIT_NOT_AVAILABLE = 3
EXIT_RUN_FAILED = 4  # every model request failed (run), or no item was answered (score): nothing to score
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports a process ended by SIGINT


def _kv(items: Sequence[str] | None) -> dict[str, Any]:
    """``key=value`` pairs; values parsed as YAML scalars (numbers, booleans, null, lists). A value YAML cannot
    read (an unclosed bracket or quote, a tab, ``a: b`` not meant as a mapping) is one line naming the pair, and
    so is a pair that is not UTF-8 text: it would be written into notebooks, stores and pages, which must be."""
    import yaml

    out: dict[str, Any] = {}
    for it in items or []:
        if "=" not in it:
            raise VlambError(f"expected key=value, got {_shown(it)}")
        plain_text(it, f"-p/-o {_shown(it)}")
        k, v = it.split("=", 1)
        if not k.strip():
            raise VlambError(f"expected key=value, got {_shown(it)}: the key is empty")
        try:
            value = yaml.safe_load(v) if v != "" else ""
        except yaml.YAMLError as e:
            why = str(getattr(e, "problem", None) or "not a value YAML reads").strip()
            raise VlambError(f"{_shown(it)}: the value is not a number, true/false, null, [list] or text ({why}); "
                             "quote text that starts with [ { ' \" or holds ': '") from None
        if isinstance(value, dict) and not v.lstrip().startswith("{"):  # `a: b` read as a mapping by accident
            raise VlambError(f"{_shown(it)}: YAML reads this value as a mapping; quote text that holds ': ' "
                             "(or write a mapping as {key: value})")
        out[k.strip()] = value
    return out


def writable_folder(folder: Any, flag: str) -> None:
    """Refuse, before any work, a folder that cannot be written: a file where it or a folder above it should be,
    or a read-only place (the nearest folder that exists decides, as creating it would)."""
    import os
    from pathlib import Path

    p = Path(folder).absolute()
    if p.exists() and not p.is_dir():
        raise VlambError(f"{flag} {p}: a file, not a folder")
    probe = p
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise VlambError(f"{flag} {p}: {probe} is a file, not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise VlambError(f"{flag} {p}: {probe} cannot be written (read-only or no permission); write elsewhere")


def _shown(text: str, n: int = 80) -> str:
    """``text`` for a one-line message: escaped (no control byte, no lone surrogate reaches the terminal), short."""
    r = ascii(text) if any(0xD800 <= ord(c) <= 0xDFFF for c in text) else repr(text)
    return r if len(r) <= n else r[: n - 1] + "…"


def plain_text(text: str, what: str) -> str:
    """``text`` when it is UTF-8 text, else one line naming ``what``: a command-line argument with bytes that are not
    UTF-8 arrives holding lone surrogates, which no file of a run can be written with."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        bad = text[e.start].encode("utf-8", "surrogateescape")
        raise VlambError(f"{what} is not UTF-8 text (byte 0x{bad.hex()} at character {e.start + 1}); "
                         "give it in UTF-8") from None
    return text


def _emit(obj: Any, as_json: bool) -> None:
    if as_json:
        print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))
    else:
        print(render_text(obj))


# -- human-readable output: aligned tables ------------------------------------------------------------------
def _scalar(v: Any) -> bool:
    return not isinstance(v, (dict, list, tuple)) or (isinstance(v, (list, tuple)) and all(map(_plain, v)))


def _plain(v: Any) -> bool:
    return not isinstance(v, (dict, list, tuple))


def _interval(v: Any) -> bool:
    return isinstance(v, dict) and {"ci_low", "ci_high"} <= set(v) and all(map(_plain, v.values()))


def format_value(v: Any) -> str:
    """One cell: whole numbers as integers, other numbers to 4 significant digits (1 decimal from 100 up),
    missing values as "–", an estimate with its interval as "x [lo, hi]", short lists comma-separated."""
    import math

    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == round(v) and abs(v) < 1e15:
            return str(int(v))
        return f"{v:.1f}" if abs(v) >= 100 else f"{v:.4g}"
    if _interval(v):
        est = next((v[k] for k in ("estimate", "value", "ours", "accuracy", "share") if k in v), None)
        ci = f"[{format_value(v['ci_low'])}, {format_value(v['ci_high'])}]"
        return ci if est is None else f"{format_value(est)} {ci}"
    if isinstance(v, (list, tuple)):
        return ", ".join(format_value(x) for x in v)
    return str(v)


def aligned(rows: list[list[str]], header: list[str] | None = None) -> str:
    """Rows of cells as columns padded to a common width (numbers right-aligned), with a rule under a header."""
    table = ([header] if header else []) + rows
    if not table:
        return ""
    width = [max(len(r[i]) if i < len(r) else 0 for r in table) for i in range(max(map(len, table)))]

    def numeric(cell: str) -> bool:
        return bool(cell) and cell.lstrip("-+").replace(".", "", 1).replace(",", "").isdigit()

    body = rows or table
    right = [all(numeric(r[i]) or r[i] in ("", "–") for r in body if i < len(r)) for i in range(len(width))]

    def line(r: list[str]) -> str:  # a column of numbers is right-aligned, anything else left-aligned
        cells = [(c.rjust(w) if ok else c.ljust(w)) for c, w, ok in zip(r, width, right, strict=False)]
        return "  ".join(cells).rstrip()

    out = [line(r) for r in table]
    if header:
        out.insert(1, "  ".join("-" * w for w in width))
    return "\n".join(out)


def _records_table(records: list[dict[str, Any]]) -> str:
    cols = list(dict.fromkeys(k for r in records for k in r))
    return aligned([[format_value(r.get(c)) for c in cols] for r in records], cols)


def _mapping_table(d: dict[str, Any]) -> str:
    """A mapping of scalars as two columns; a mapping of mappings as a grid (the longer side down)."""
    if all(isinstance(v, dict) and not _interval(v) and all(map(_scalar, v.values())) for v in d.values()) and d:
        outer = [str(k) for k in d]
        inner = list(dict.fromkeys(k for v in d.values() for k in v))
        if len(inner) > len(outer):  # e.g. many statistics for two subsets: statistics down, subsets across
            return aligned([[str(k)] + [format_value(d[o].get(k)) for o in d] for k in inner], ["", *outer])
        return aligned([[o] + [format_value(v.get(k)) for k in inner] for o, v in zip(outer, d.values(),
                                                                                     strict=True)], ["", *inner])
    return aligned([[str(k), format_value(v)] for k, v in d.items()])


def render_text(obj: Any, title: str | None = None) -> str:
    """A result (nested dicts, records, scalars) as aligned plain-text tables: the scalars first, then one
    titled table per nested part. ``--json`` prints the same result as data."""
    blocks: list[str] = []
    if isinstance(obj, dict):
        flat = {k: v for k, v in obj.items() if _scalar(v) or _interval(v)}
        if flat:
            blocks.append((f"{title}\n" if title else "") + aligned([[str(k), format_value(v)] for k, v in flat.items()]))
        for k, v in obj.items():
            if k in flat:
                continue
            name = f"{title} / {k}" if title else str(k)
            if isinstance(v, list) and v and all(isinstance(r, dict) for r in v):
                blocks.append(f"{name}\n{_records_table(v)}")
            elif isinstance(v, dict) and v and (
                    all(_scalar(x) or _interval(x) for x in v.values())
                    or all(isinstance(x, dict) and not _interval(x) and all(map(_scalar, x.values()))
                           for x in v.values())):
                blocks.append(f"{name}\n{_mapping_table(v)}")
            elif isinstance(v, (dict, list)) and not v:
                blocks.append(f"{name}\n(none)")
            else:
                blocks.append(render_text(v, name))
    elif isinstance(obj, list) and obj and all(isinstance(r, dict) for r in obj):
        blocks.append((f"{title}\n" if title else "") + _records_table(obj))
    elif isinstance(obj, list):
        blocks.append((f"{title}\n" if title else "") + "\n".join(format_value(x) for x in obj))
    else:
        blocks.append((f"{title}: " if title else "") + format_value(obj))
    return "\n\n".join(b for b in blocks if b)


def cmd_data_stats(a: argparse.Namespace) -> int:
    from vlamb_nb import get_benchmark

    bench = get_benchmark(a.benchmark)
    items = bench.load(a.source, **_kv(a.option))
    _emit(bench.data_stats(items), a.json)
    return 0


def cmd_data_fetch(a: argparse.Namespace) -> int:
    """Fetch (or import) each paper's release; one line per paper that fails, never a traceback; Ctrl-C stops it
    with one line (exit 130) and the next fetch resumes."""
    from vlamb_nb.benchmarks import BrokenPaper
    from vlamb_nb.releases import FetchInterrupted, fetch
    from vlamb_nb.releases.catalog import release, releases

    broken: dict[str, Any] = {}  # a paper that cannot be loaded: its one line, and the others are fetched
    papers: list[str] = [] if a.papers else list(releases(broken=broken))  # all: those that declare one
    if a.papers:
        for p in a.papers:
            try:
                papers.append(release(p).paper)
            except BrokenPaper as e:
                broken[e.paper] = e
    if a.from_path and len(papers) + len(broken) != 1:
        raise VlambError("--from imports one paper's copy: name the paper (vlamb-nb data fetch PAPER --from PATH)")
    if a.revision and len(papers) + len(broken) != 1:
        raise VlambError("--revision moves one paper's source: name the paper (vlamb-nb data fetch PAPER --revision "
                         "REV)")
    failed = len(broken)
    for e in broken.values():
        print(f"vlamb-nb: {e}", file=sys.stderr)
    for paper in papers:
        try:
            m = fetch(paper, from_path=a.from_path, revision=a.revision, accept_missing=a.accept_missing,
                      allow_mismatch=a.allow_mismatch, models=not a.no_models, concurrency=a.concurrency,
                      progress=not a.quiet, stall=a.timeout)
        except (FetchInterrupted, KeyboardInterrupt) as e:
            print(f"vlamb-nb: {e or f'{paper}: stopped (Ctrl-C); run the same command again to resume'}",
                  file=sys.stderr)
            return 130
        except VlambError as e:
            print(f"vlamb-nb: {e}", file=sys.stderr)
            failed += 1
            continue
        failed += 0 if fetch_lines(m) else 1
    return 1 if failed else 0


def fetch_lines(m: dict[str, Any]) -> bool:
    """Print what one fetch left in the data home; True when the release can be used."""
    from vlamb_nb.datahome import LeftOut

    files = m["files"]
    print(f"{m['paper']}: {m['label']} {m['state'].upper() if m['state'] == 'incomplete' else m['state']}: "
          f"{len(files)} files, {_size(sum(f['size'] for f in files))}")
    for e in m.get("left_out") or []:
        lo = LeftOut.from_dict(e)
        print(f"  left out: {lo.text()}")
        if e.get("kind") == "defect":
            keys = e.get("keys") or []
            shown = ", ".join(keys[:40]) + (f", … ({len(keys)})" if len(keys) > 40 else "")
            print(f"    {lo.column} values ({len(keys)}): {shown}")
            cands = e.get("candidates") or {}
            k = next(iter(cands), None)
            if k is not None:
                print(f"    each with candidates that all exist, e.g. {k}: {', '.join(cands[k])} (none is guessed)")
    for what, v in (m.get("missing") or {}).items():
        print(f"  {v['count']} {what} could not be had ({v.get('why', '')}): {v.get('items', '?')} "
              f"{m.get('unit', 'items')} (first: {', '.join(map(str, v['first']))}); fetch again later to retry "
              f"only those, or accept them with `vlamb-nb data fetch {m['paper']} --accept-missing` (their items are "
              "then left out, and every result says so)")
    if not m.get("current", True):
        print(f"  this revision is not used: the current one ({m.get('kept')}) stays until one is complete")
    unverified = sum(str(f.get("verified", "")).startswith("unverified") for f in files)
    recorded = sum("recorded at first fetch" in str(f.get("verified", "")) for f in files)
    if unverified:
        print(f"  unverified (no published checksum; their sha256 is recorded now): {unverified} of {len(files)} "
              "files")
    if recorded:
        print(f"  recorded at first fetch, not pinned: the sha256 of {recorded} files")
    for source, how in (m.get("pinning") or {}).items():
        if how != "known-good (pinned in the release)":
            print(f"  revision of {source}: {(m.get('revisions') or {}).get(source)} ({how})")
    for d in m.get("deviations") or []:
        print(f"  deviation: {d}")
    for note in m.get("notes") or []:
        if note.startswith("a known defect is not"):
            print(f"  note: {note}")
    for mod in m.get("models") or []:
        if mod.get("error"):
            print(f"  metric model {mod['repo']}: {mod['error']}", file=sys.stderr)
    return bool(m.get("usable", m.get("complete")))


def cmd_data_status(a: argparse.Namespace) -> int:
    from vlamb_nb.datahome import data_home
    from vlamb_nb.releases import status

    rows = status(verify=a.verify)
    if a.json:
        _emit({"data_home": str(data_home()), "papers": rows}, True)
    else:
        print(f"data home: {data_home()}")
        table = [{"paper": r["paper"], "state": r["state"], "items": r["items"],
                  "revision": (r["revision"] or "")[:7], "size": _size(r["bytes"]) if r["bytes"] else "",
                  "unverified": r["unverified"] or "", "missing": r["missing"], "metric models": r["models"]}
                 for r in rows]
        print(render_text(table))
        for r in rows:
            for line in r["left_out"]:
                print(f"{r['paper']}: left out: {line}")
            if r["recorded"]:
                print(f"{r['paper']}: the sha256 of {r['recorded']} files was recorded at first fetch, not pinned")
            for source, how in (r.get("pinning") or {}).items():
                if how != "known-good (pinned in the release)":
                    print(f"{r['paper']}: revision of {source}: {how}")
            for problem in r["problems"]:
                print(f"{r['paper']}: {problem}")
            for line in r["pending"]:
                print(f"{r['paper']}: {line}")
    # nothing fetched is a state to report, not an error; a fetched release that is incomplete or fails its
    # checks is (exit 1: something to repair with `vlamb-nb data fetch PAPER`)
    return 0 if all(r["state"].startswith(("complete", "usable", "not fetched")) for r in rows) else 1


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def cmd_score(a: argparse.Namespace) -> int:
    from vlamb_nb import get_benchmark
    from vlamb_nb.metrics import nothing_answered

    bench = get_benchmark(a.benchmark)
    opts = _kv(a.option)
    if a.scorer is not None:
        opts["scorer"] = a.scorer
    if a.record is not None:
        opts["record"] = a.record
    if "quantization" in opts and opts["quantization"] in (None, ""):
        opts["quantization"] = "none"  # YAML reads `null` and an empty value as no value: here, unquantized
    source = a.source
    if source is None:  # a store of a paper-profile run names the fetched release it stood on
        source = _stored_release(bench.name, a.predictions)
    out = bench.score_file(a.predictions, source=source, **opts)
    reason = nothing_answered(out)
    if reason:
        print(f"vlamb-nb: error: nothing to score in {a.predictions}: {reason}", file=sys.stderr)
        return EXIT_RUN_FAILED
    _emit(out, a.json)
    return 0


def _stored_release(paper: str, path: str) -> Any:
    """The fetched release a prediction store's run stood on (its records' data identity), else None."""
    from vlamb_nb.datahome import release_source
    from vlamb_nb.store import is_store, read_records

    if not is_store(path):
        return None
    recs = read_records(path)
    data = next((r["run"].get("data") for r in recs if isinstance(r.get("run"), dict) and r["run"].get("data")), None)
    return release_source(paper, data, origin=str(path))


#: options of an openai: model settable on the command line (run and sweep)
REMOTE_FLAGS = ("base_url", "api_key_env", "concurrency", "timeout", "max_retries", "deadline")


def remote_options(a: argparse.Namespace) -> dict[str, Any]:
    """The endpoint options given on the command line (None where not given; ``--deadline 0``: no deadline)."""
    return {k: getattr(a, k, None) for k in REMOTE_FLAGS}


def _add_remote_flags(p: argparse.ArgumentParser, *, endpoint: bool) -> None:
    if endpoint:
        p.add_argument("--base-url", help="OpenAI-compatible endpoint for openai:MODEL (default $OPENAI_BASE_URL); "
                                          "query parameters are sent with every request; no user:password@")
        p.add_argument("--api-key-env", help="environment variable holding the endpoint's key "
                                             "(default OPENAI_API_KEY)")
    p.add_argument("--concurrency", type=int, metavar="N",
                   help="openai: requests in flight (default 64; halved for a while by 429/503 answers)")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="openai: seconds per attempt (default 120)")
    p.add_argument("--max-retries", type=int, metavar="N", help="openai: retries per request (default 5)")
    p.add_argument("--deadline", type=float, metavar="SECONDS",
                   help="openai: seconds per request, every retry included (default 600; 0: none)")


def cmd_run(a: argparse.Namespace) -> int:
    from vlamb_nb import get_benchmark, runner
    from vlamb_nb.models import ModelSpec, load_model

    plain_text(a.model, f"--model {_shown(a.model)}")
    bench = get_benchmark(a.benchmark)
    if a.store_dir is None and a.out is None:
        raise VlambError("give --store-dir DIR: the folder the prediction store goes in (a rerun resumes it)")
    names = [s.strip() for s in (a.settings or "").split(",") if s.strip()]
    if len(names) > 1:
        raise VlambError(f"run takes one setting, got {', '.join(names)}; run once per setting")
    setting = bench.check_setting(names[0] if names else bench.default_setting)
    items = bench.load(a.source)
    extra: dict[str, Any] = {k: v for k, v in remote_options(a).items() if v is not None}
    spec = ModelSpec.parse(a.model)
    if extra and not spec.served:
        flags = ", ".join("--" + k.replace("_", "-") for k in extra)
        raise VlambError(f"{flags} go with an openai:MODEL spec (a remote endpoint), not {a.model}")
    quant = a.quantization or ("4bit" if spec.weights_local else "none")
    if quant != "none" and not spec.weights_local:
        raise VlambError(f"--quantization {quant} does not apply to {spec.kind}: models (the weights are "
                         "not loaded here)")
    model = load_model(spec, quantization=None if quant == "none" else quant, **extra)
    store = a.out if a.out is not None else bench.store_path(a.store_dir, model.info, setting)
    out = bench.run(model, items, setting, store=store, limit=a.limit, batch_size=a.batch_size, **_kv(a.option))
    summary = runner.failure_summary(out)
    store = out.attrs.get("store", store)  # its own file where the default held another run
    print(f"{summary['requests']} requests, {summary['failed']} failed; predictions in {store}")
    if summary["requests"] and summary["failed"] == summary["requests"]:
        print(f"vlamb-nb: error: nothing was generated: {runner.failure_line(summary)}", file=sys.stderr)
        return EXIT_RUN_FAILED
    if summary["failed"]:
        print(f"vlamb-nb: warning: {runner.failure_line(summary)}; a rerun retries them", file=sys.stderr)
    return 0


def cmd_reference(a: argparse.Namespace) -> int:
    from vlamb_nb import get_benchmark, reference

    if a.action == "show":
        df = reference.load(a.paper, table=a.table)
        if a.json:
            _emit(df.drop(columns=["value_num"]).to_dict(orient="records"), True)
        else:
            print(df.drop(columns=["value_num"]).to_string(index=False))
        return 0
    findings = get_benchmark(a.paper).reference_check()
    rows = [f.to_dict() if hasattr(f, "to_dict") else dict(f) for f in findings]
    if a.json:
        _emit({"paper": a.paper, "checked": len(rows), "mismatches": sum(not r["ok"] for r in rows),
               "findings": rows}, True)
    else:
        bad = [r for r in rows if not r["ok"]]
        print(f"{a.paper}: {len(rows)} cells checked, {len(bad)} mismatches")
        for r in bad:
            print(f"  {r['table']} | {r['row']} | {r['column']}: published {r['published']}, "
                  f"recomputed {r['recomputed']} ({r['kind']}) {r['note']}")
    return 0


def cmd_coverage(a: argparse.Namespace) -> int:
    """Each paper's inventory (what is rebuilt, run or not derivable, and where), or the README's generated parts
    written (``--readme``) or checked (``--check``: exit 1 naming the stale parts)."""
    from vlamb_nb import coverage

    if a.readme:
        old = coverage.update_readme(a.readme, check=a.check)
        if old and a.check:
            print(f"vlamb-nb: {a.readme}: generated part(s) stale: {', '.join(old)}; run `vlamb-nb coverage "
                  f"--readme {a.readme}`", file=sys.stderr)
            return 1
        print(f"{a.readme}: {'rewrote ' + ', '.join(old) if old else 'up to date'}")
        return 0
    invs = coverage.inventories(a.papers or None)
    if a.json:
        _emit({inv.paper: [dict(item=i.item, kind=i.kind, status=i.status, where=i.where, calls=list(i.calls),
                                reason=i.reason) for i in inv.items] for _, inv in invs}, True)
        return 0
    for title, inv in invs:
        counts = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in inv.counts().items() if n)
        print(f"{title}: {len(inv.items)} items ({counts})")
        for i in inv.items:
            print(f"  [{i.status.replace('_', ' ')}] {i.item}: {i.reason if i.reason else i.where}")
    return 0


def cmd_reproduce(a: argparse.Namespace) -> int:
    from pathlib import Path

    from vlamb_nb.reproduce import reproduce

    params = _kv(a.param)
    if a.runs_dir is not None:
        writable_folder(Path(plain_text(a.runs_dir, f"--runs-dir {_shown(a.runs_dir)}")), "--runs-dir")
    return reproduce(a.papers or None, params=params, run_id=a.run_id, out_dir=a.runs_dir,
                     timeout=a.cell_timeout or None, update_figures=a.update_figures, tiny_seed=a.tiny_seed,
                     fetch=a.fetch, jobs=a.jobs)


def cmd_card(a: argparse.Namespace) -> int:
    """The cross-paper report card: of a reproduce run (its results.json), or the example from real outputs."""
    from pathlib import Path

    from vlamb_nb import report_card
    from vlamb_nb.paths import LATEST, repo_root

    if a.example:
        from vlamb_nb.benchmarks.refadv.report import example_headlines

        rows, subtitle = example_headlines()
        card = report_card.one_paper(rows, subtitle=subtitle)
        target = repo_root() / "figures" if a.update_figures else Path(a.run_dir or "runs") / "figures"
    else:
        if a.update_figures:
            raise VlambError("--update-figures refreshes only the committed example card (with --example)")
        run_dir = Path(a.run_dir) if a.run_dir else Path("runs") / LATEST
        if not a.run_dir and not run_dir.exists():
            raise VlambError(f"no run here yet ({run_dir} is missing): `vlamb-nb reproduce` (or `make reproduce`) "
                             "writes runs/<id> and links runs/latest to it; or give a run folder, or --example")
        card = report_card.from_run(run_dir, model=a.model)
        target = run_dir / "figures"
    report_card.save(card, directory=target)
    print(report_card.markdown(card))
    where = target / "card" / ("demo" if card.demo else "") / "report_card.png"
    print(f"figure: {where}", file=sys.stderr)
    return 0


def _sources(items: Sequence[str] | None) -> dict[str, str] | str | None:
    """``--source PAPER=PATH`` (repeatable), or one ``--source PATH`` for stores of one paper."""
    if not items:
        return None
    if len(items) == 1 and "=" not in items[0]:
        return items[0]
    out = {}
    for it in items:
        paper, sep, path = it.partition("=")
        if not sep or not path:
            raise VlambError(f"expected --source PAPER=PATH, got {it!r}")
        out[paper.strip()] = path
    return out


def cmd_compare(a: argparse.Namespace) -> int:
    """Models compared on the items all of them answered: values, paired differences and tests, ranks."""
    import time
    from pathlib import Path

    from vlamb_nb import compare
    from vlamb_nb.paths import new_folder, repo_root

    if a.example:
        if a.runs:
            raise VlambError("--example compares the released Ref-Adv runs; give no RUN with it")
        from vlamb_nb.benchmarks.refadv.report import EXAMPLE_COMPARISON, example_runs

        result = compare.example(example_runs(), title=EXAMPLE_COMPARISON, n_resamples=a.n_resamples, seed=a.seed)
    else:
        if len(a.runs) < 1:
            raise VlambError("give at least one RUN (a reproduce run folder, a sweep folder or a prediction store)")
        if a.update_figures:
            raise VlambError("--update-figures refreshes only the committed example (with --example)")
        writable_folder(Path(a.out or "runs/comparisons"), "--out")  # before the scoring, not after it
        result = compare.compare(a.runs, baseline=a.baseline, correction=a.correction,
                                 allow_different_data=a.allow_different_data,
                                 allow_different_settings=a.allow_different_settings, sources=_sources(a.source),
                                 n_resamples=a.n_resamples, seed=a.seed)
    if a.example and a.update_figures:  # only the committed figure: nothing else is written into the checkout
        import matplotlib.pyplot as plt

        from vlamb_nb.plots import save_figure

        fig = result.figure()
        save_figure(fig, "compare", EXAMPLE_NAME, directory=repo_root() / "figures")
        plt.close(fig)
        written = [repo_root() / "figures" / "compare" / f"{EXAMPLE_NAME}.{x}" for x in ("png", "pdf")]
    else:
        out = Path(a.out) if a.out else new_folder(Path("runs") / "comparisons", time.strftime("%Y%m%d-%H%M%S"))
        written = result.save(out, name=EXAMPLE_NAME if a.example else "comparison")
    if a.json:
        _emit(result.to_dict(), True)
    else:
        print(result.markdown())
    print("written: " + ", ".join(str(w) for w in written), file=sys.stderr)
    page = next((w for w in written if w.suffix == ".html"), None)
    if page is not None:  # last, alone on its line: the page to open (stderr under --json, which owns stdout)
        print(page, file=sys.stderr if a.json else sys.stdout)
    return 0


def cmd_noise(a: argparse.Namespace) -> int:
    """Every comparison a paper states in words beside its test set's noise floor (and the test on released runs)."""
    from vlamb_nb import get_benchmark, noise

    items = None
    if a.source is not None:
        items = get_benchmark(a.paper).load(a.source)
    table = noise.noise_table(a.paper, items=items, alpha=a.alpha, power=a.power, profile=a.profile)
    if a.json:
        _emit({"paper": a.paper, "conclusion": table.attrs["conclusion"], "agreement": table.attrs["agreement"],
               "test_sets": table.attrs["test_sets"], "alpha": a.alpha, "power": a.power,
               "comparisons": json.loads(table.to_json(orient="records"))}, True)
    else:
        print(noise.render(table))
    return 0


#: the committed example's file name under figures/compare/
EXAMPLE_NAME = "refadv_released_runs"


def cmd_lab(a: argparse.Namespace) -> int:
    """JupyterLab on the checkout's notebooks, as root in a container or on a remote node too."""
    from vlamb_nb import lab
    from vlamb_nb.paths import repo_root

    return lab.main(repo_root() / "notebooks", port=a.port, ip=a.ip, browser=a.browser)


def cmd_make_tiny(a: argparse.Namespace) -> int:
    from vlamb_nb.models.tiny import build_tiny

    path = build_tiny(a.family, a.dir, seed=a.seed)
    print(path)
    return 0


def cmd_sweep(a: argparse.Namespace) -> int:
    from vlamb_nb.sweep import sweep

    return sweep(a.config, remote={k: v for k, v in remote_options(a).items() if v is not None})


def cmd_serve(a: argparse.Namespace) -> int:
    """Serve a model (``replay:FILE`` included) as an OpenAI-compatible endpoint on this machine."""
    import time

    from vlamb_nb.models import load_model
    from vlamb_nb.models.serve import serve

    model = load_model(a.model, quantization=None if a.quantization == "none" else a.quantization)
    server = serve(model, host=a.host, port=a.port, lifetime=a.lifetime, model_name=a.name)
    print(f"serving {model.info.model_id} at {server.base_url} for {a.lifetime:.0f} s", flush=True)
    try:
        while server.running:
            time.sleep(0.5)
    except KeyboardInterrupt:
        server.stop()
    return 0


SETTINGS_PLACEHOLDER = "{settings}"


class _HelpFormatter(argparse.HelpFormatter):
    """Fills ``{settings}`` in a help text from the benchmark registry only when help is printed, so
    ``vlamb-nb`` starts without importing the benchmarks and the list can never go stale."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = super()._get_help_string(action)
        if text and SETTINGS_PLACEHOLDER in text:
            from vlamb_nb.benchmarks import settings_help

            text = text.replace(SETTINGS_PLACEHOLDER, settings_help().replace("%", "%%"))
        return text


def _benchmarks() -> list[str]:
    from vlamb_nb.benchmarks import list_benchmarks

    return list_benchmarks()


class _OldSpelling(argparse.Action):
    """An earlier spelling of a flag, still accepted: it sets the new flag's value and says so on stderr."""

    def __init__(self, option_strings: list[str], dest: str, *, new: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"vlamb-nb: warning: {option_string} is deprecated; use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def _old_spelling(p: argparse.ArgumentParser, old: str, new: str, **kwargs: Any) -> None:
    """Accept ``old`` for ``new`` (the notebooks' vocabulary), hidden from help; the value lands in ``new``'s
    destination unless ``dest`` says otherwise."""
    kwargs.setdefault("dest", new.lstrip("-").replace("-", "_"))
    kwargs.setdefault("default", argparse.SUPPRESS)
    p.add_argument(old, action=_OldSpelling, new=new, help=argparse.SUPPRESS, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    from vlamb_nb import __version__

    p = argparse.ArgumentParser(prog="vlamb-nb", description=__doc__.splitlines()[0], formatter_class=_HelpFormatter)
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    data = sub.add_parser("data", help="dataset utilities").add_subparsers(dest="data_command", required=True)
    ds = data.add_parser("stats", help="statistics of a benchmark's data")
    ds.add_argument("benchmark", metavar="BENCHMARK", help=f"one of {', '.join(_benchmarks())}")
    ds.add_argument("--source", help="hub id, file or folder (default: the benchmark's default source)")
    ds.add_argument("-o", "--option", action="append", metavar="KEY=VALUE", help="loader option")
    ds.add_argument("--json", action="store_true", help="print machine-readable JSON instead of text")
    ds.set_defaults(func=cmd_data_stats)
    df = data.add_parser("fetch", help="download each paper's release once into the data home, verified")
    df.add_argument("papers", nargs="*", metavar="PAPER", help=f"any of {', '.join(_benchmarks())} (default: all)")
    df.add_argument("--from", dest="from_path", metavar="PATH",
                    help="import a copy made elsewhere (a hub cache or snapshot folder, the files as released, a zip "
                         "or tar archive, or another data home's paper folder) instead of downloading")
    df.add_argument("--revision", action="append", metavar="[SOURCE=]REV",
                    help="fetch another revision than the known-good one: a commit, branch, tag or short sha, "
                         "recorded as the commit it names; a release with several sources names one: "
                         "--revision kevindragon221/MUCAR=REV (repeatable)")
    df.add_argument("--accept-missing", action="store_true",
                    help="use the release although some files could not be had after retries (dead image links): "
                         "their items are left out and every result says so; a later fetch retries only those")
    df.add_argument("--allow-mismatch", action="store_true",
                    help="use a release whose counts differ from the paper's (recorded as a deviation)")
    df.add_argument("--timeout", type=float, metavar="S",
                    help="seconds without a byte before a download counts as stalled (default 30)")
    df.add_argument("--no-models", action="store_true", help="skip the metric models the default scorers load")
    df.add_argument("--concurrency", type=int, default=8, help="files downloaded at once (images, shards)")
    df.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    df.set_defaults(func=cmd_data_fetch)
    dst = data.add_parser("status", help="what is in the data home ($VLAMB_DATA), how big, and whether it verifies")
    dst.add_argument("--verify", action="store_true", help="hash every file again against its manifest")
    dst.add_argument("--json", action="store_true", help="print machine-readable JSON instead of text")
    dst.set_defaults(func=cmd_data_status)

    sc = sub.add_parser("score", help="score a predictions file")
    sc.add_argument("benchmark", metavar="BENCHMARK", help=f"one of {', '.join(_benchmarks())}")
    sc.add_argument("--predictions", required=True)
    sc.add_argument("--source", help="the benchmark data the predictions refer to (default for a store of a "
                    "paper-profile run: the fetched release it stood on)")
    sc.add_argument("--scorer", help="explanation scorer (V-FLUTE): name, or 'none'")
    sc.add_argument("-o", "--option", action="append", metavar="KEY=VALUE")
    sc.add_argument("--record", metavar="PATH", help="write the run record there (default: beside a prediction "
                    "store; a released prediction file gets none unless named)")
    sc.add_argument("--json", action="store_true", help="print machine-readable JSON instead of text")
    sc.set_defaults(func=cmd_score)

    rn = sub.add_parser("run", help="generate predictions for a benchmark with a model", formatter_class=_HelpFormatter)
    rn.add_argument("benchmark", metavar="BENCHMARK", help=f"one of {', '.join(_benchmarks())}")
    rn.add_argument("--model", required=True, help="hub id, local checkpoint, tiny:FAMILY or openai:MODEL")
    rn.add_argument("--settings", metavar="SETTING",
                    help="the benchmark's setting, one per run (default: the benchmark's default); "
                         + SETTINGS_PLACEHOLDER)
    _old_spelling(rn, "--setting", "--settings")
    rn.add_argument("--source")
    rn.add_argument("--quantization", choices=["4bit", "8bit", "none"],
                    help="weight quantization (default: 4bit for local weights, none for openai: and replay:)")
    _old_spelling(rn, "--quant", "--quantization", choices=["4bit", "8bit", "none"])
    _add_remote_flags(rn, endpoint=True)
    rn.add_argument("--limit", type=int)
    rn.add_argument("--batch-size", type=int, default=8)
    rn.add_argument("--store-dir", metavar="DIR", help="folder of prediction stores (required): the run's store is "
                    "DIR/<model>/<benchmark>__<setting>.jsonl, as in notebooks; rerunning resumes it")
    _old_spelling(rn, "--out", "--store-dir", dest="out", default=None, metavar="FILE")  # the store file itself
    rn.add_argument("-o", "--option", action="append", metavar="KEY=VALUE")
    rn.set_defaults(func=cmd_run)

    rf = sub.add_parser("reference", help="published numbers: show them, or audit the paper's arithmetic")
    rf.add_argument("action", choices=["show", "check"])
    rf.add_argument("paper")
    rf.add_argument("--table")
    rf.add_argument("--json", action="store_true", help="print machine-readable JSON instead of text")
    rf.set_defaults(func=cmd_reference)

    cv = sub.add_parser("coverage", help="what of each paper is rebuilt, run or not derivable (its inventory)")
    cv.add_argument("papers", nargs="*")
    cv.add_argument("--json", action="store_true", help="print machine-readable JSON instead of text")
    cv.add_argument("--readme", metavar="PATH", help="write the README's generated parts from the inventories")
    cv.add_argument("--check", action="store_true", help="with --readme: exit 1 if they are stale, write nothing")
    cv.set_defaults(func=cmd_coverage)

    rp = sub.add_parser("reproduce", help="execute the paper notebooks and write figures/ and a report")
    rp.add_argument("papers", nargs="*")
    rp.add_argument("-p", "--param", action="append", metavar="KEY=VALUE", help="notebook parameter")
    rp.add_argument("--run-id")
    rp.add_argument("--runs-dir", default="runs", metavar="DIR", help="where run folders go (DIR/<run-id>)")
    _old_spelling(rp, "--out", "--runs-dir")
    rp.add_argument("--cell-timeout", type=int, default=1800, metavar="SECONDS",
                    help="fail a notebook cell that runs longer (0: no limit, for long real-model runs)")
    rp.add_argument("--update-figures", action="store_true",
                    help="copy the regenerated figures (never pipeline demos) into the checkout's figures/")
    rp.add_argument("--tiny-seed", type=int, metavar="N",
                    help="seed of the tiny random checkpoints (a different seed is a different checkpoint)")
    rp.add_argument("--fetch", action="store_true",
                    help="fetch a paper's release first when a paper-profile notebook needs it and it is not there")
    rp.add_argument("--jobs", type=int, metavar="N",
                    help="notebooks executed at once (default: one per core, at most 4, when no model is given; "
                         "1 with a model)")
    rp.set_defaults(func=cmd_reproduce)

    cd = sub.add_parser("card", help="the cross-paper report card of a reproduce run, or the example from real outputs")
    cd.add_argument("run_dir", nargs="?", help="a reproduce run folder (runs/<id>) holding results.json (default: "
                    "runs/latest, the newest run)")
    cd.add_argument("--model", help="the model's name in the title (default: the names the notebooks recorded)")
    cd.add_argument("--example", action="store_true",
                    help="the example card: a released Ref-Adv run replayed through the run path (needs ../shared)")
    cd.add_argument("--update-figures", action="store_true",
                    help="with --example: write the figure into the checkout's figures/card/")
    cd.set_defaults(func=cmd_card)

    cm = sub.add_parser("compare", help="compare models (or one model's settings) on the items all of them "
                                        "answered: differences, tests, ranks")
    cm.add_argument("runs", nargs="*", metavar="RUN",
                    help="a reproduce run folder, a sweep's output folder (every model in it), a prediction store, "
                         "a run record (*.record.json: compared from it alone, no data needed) or an official Ref-Adv "
                         "per-row file")
    cm.add_argument("--baseline", metavar="NAME", help="compare every model with this one instead of all pairs")
    cm.add_argument("--correction", choices=["holm", "bh"], default="holm",
                    help="multiple-testing correction within each metric and slice (default holm; bh: Benjamini-Hochberg)")
    cm.add_argument("--source", action="append", metavar="[PAPER=]PATH",
                    help="the data a prediction store was run on (repeatable, one per paper)")
    cm.add_argument("--allow-different-data", action="store_true",
                    help="compare runs of different data (release, revision, a sample) on their common items; "
                         "recorded in the output")
    cm.add_argument("--allow-different-settings", action="store_true",
                    help="compare models that ran different settings on the settings they share; recorded")
    cm.add_argument("--out", help="folder for comparison.md, .json, the figure and comparison.html, the page that "
                                  "shows them together (default: a new runs/comparisons/<time>)")
    cm.add_argument("--n-resamples", type=int, default=2000, metavar="B",
                    help="bootstrap resamples behind every interval and rank (default 2000)")
    cm.add_argument("--seed", type=int, default=0, help="seed of the resamples")
    cm.add_argument("--json", action="store_true", help="print machine-readable JSON instead of markdown")
    cm.add_argument("--example", action="store_true",
                    help="the released Ref-Adv direct runs on their common rows (needs ../shared)")
    cm.add_argument("--update-figures", action="store_true",
                    help="with --example: write the figure into the checkout's figures/compare/")
    cm.set_defaults(func=cmd_compare)

    lb = sub.add_parser("lab", help="JupyterLab on the notebooks (what `make lab` runs): prints the URL with its token "
                                    "and, on a remote machine, the ssh tunnel that opens it from a laptop")
    lb.add_argument("--port", type=int, help="the port (default: the first free one from 8888)")
    lb.add_argument("--ip", default="127.0.0.1", help="the address to listen on (default 127.0.0.1: reach it "
                    "through the printed ssh tunnel, not the open network)")
    lb.add_argument("--browser", action=argparse.BooleanOptionalAction, default=None,
                    help="open a browser (default: only where this machine has a display and is not remote)")
    lb.set_defaults(func=cmd_lab)

    nz = sub.add_parser("noise", help="every comparison a paper states beside the smallest difference its test set "
                                      "can detect (its noise floor), with the test on released per-item runs")
    nz.add_argument("paper", metavar="PAPER", help=f"one of {', '.join(_benchmarks())}")
    nz.add_argument("--source", help="the paper's release (its whole test set: its structure is counted from it; "
                                     "default: the released per-item runs' rows where a paper released some, else the "
                                     "structure the paper declares)")
    nz.add_argument("--profile", choices=["offline", "paper"], default="offline",
                    help="where released per-item runs are read from: beside the checkout (offline) or the data "
                         "home (paper)")
    nz.add_argument("--alpha", type=float, default=0.05, help="two-sided level (default 0.05)")
    nz.add_argument("--power", type=float, default=0.8, help="power the floor is computed at (default 0.8)")
    nz.add_argument("--json", action="store_true", help="print machine-readable JSON instead of the table")
    nz.set_defaults(func=cmd_noise)

    mt = sub.add_parser("make-tiny-model", help="build a tiny random checkpoint (tests, offline demos)")
    mt.add_argument("family")
    mt.add_argument("dir")
    mt.add_argument("--seed", type=int, default=0)
    mt.set_defaults(func=cmd_make_tiny)

    sv = sub.add_parser("serve", help="serve a model (e.g. replay:FILE of recorded outputs) as an OpenAI-compatible "
                                      "endpoint on 127.0.0.1")
    sv.add_argument("model", help="a load_model spec: hub id, local folder, tiny:FAMILY or replay:FILE")
    sv.add_argument("--quantization", choices=["4bit", "8bit", "none"], default="none")
    _old_spelling(sv, "--quant", "--quantization", choices=["4bit", "8bit", "none"])
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8000)
    sv.add_argument("--name", help="the model name clients send (default: the model's id)")
    sv.add_argument("--lifetime", type=float, default=3600.0, help="seconds before the server stops by itself")
    sv.set_defaults(func=cmd_serve)

    sw = sub.add_parser("sweep", help="run models × benchmarks × settings from a YAML config")
    sw.add_argument("config")
    _add_remote_flags(sw, endpoint=False)  # for its openai: models; over the file's keys of the same names
    sw.set_defaults(func=cmd_sweep)
    return p


def _warning_line(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  line: str | None = None) -> str:
    """A warning as the command line says it: one line, ``vlamb-nb: warning: ...``, never Python's two lines
    with the source line that raised it."""
    return f"vlamb-nb: warning: {_one_line(message)}\n"


def main(argv: Sequence[str] | None = None) -> int:
    import signal
    import threading
    import warnings

    shown = warnings.formatwarning
    warnings.formatwarning = _warning_line
    held = threading.current_thread() is threading.main_thread() \
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if held:
        signal.signal(signal.SIGINT, ctrl_c_after_imports)
    try:
        return _main(argv)
    finally:
        warnings.formatwarning = shown
        if held:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def ctrl_c_after_imports(signum: int, frame: Any) -> None:
    """Ctrl-C, raised once no module is being imported. Raised inside an extension module's import (pybind11:
    matplotlib's ft2font, SciPy's HiGHS) it becomes that module's ``ImportError`` and leaves it half-made, so the
    command died with a traceback, or went on (an import error caught as any other) instead of stopping; a pure
    Python import is safe to stop, but it ends in a moment anyway. So inside an import the signal is sent again
    50 ms later, until the import is done."""
    import os
    import signal
    import threading

    f = frame
    while f is not None:
        if f.f_code.co_filename.startswith("<frozen importlib"):
            again = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
            again.daemon = True
            again.start()
            return
        f = f.f_back
    raise KeyboardInterrupt


def _main(argv: Sequence[str] | None) -> int:
    try:  # the parser lists the registered papers: a registry that refuses a paper says so in one line
        args = build_parser().parse_args(argv)
    except VlambError as e:
        print(f"vlamb-nb: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's exit status for it, no traceback
        print(f"vlamb-nb: {args.command}: stopped (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except NotAvailableError as e:
        print(f"vlamb-nb: {e}", file=sys.stderr)
        return EXIT_NOT_AVAILABLE
    except (VlambError, FileNotFoundError, KeyError) as e:
        print(f"vlamb-nb: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as e:  # a read-only or full disk, a folder under a file, ...: what failed, on what, in one line
        print(f"vlamb-nb: error: {os_error_line(e)}", file=sys.stderr)
        return EXIT_ERROR
    except UnicodeError as e:  # a name or path that is not UTF-8 text, met where it must be written as text
        print(f"vlamb-nb: error: text that is not UTF-8 ({_shown(str(e), 200)}); give names and values in UTF-8",
              file=sys.stderr)
        return EXIT_ERROR


def _one_line(e: object) -> str:
    """An error's message on one line, with nothing a terminal could not print (a lone surrogate is escaped)."""
    text = " ".join(str(e).split("\n"))
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def os_error_line(e: OSError) -> str:
    """``runs/x: Read-only file system (write elsewhere: ...)`` rather than a traceback: the file and the cause."""
    import errno
    import os

    why = e.strerror or (os.strerror(e.errno) if e.errno else str(e))
    hint = {errno.ENOSPC: " (the disk is full: free space or write elsewhere)",
            errno.EROFS: " (write elsewhere: --out, --runs-dir)",
            errno.EACCES: " (no permission: write elsewhere)",
            errno.ENOTDIR: " (a file stands where a folder is needed)"}.get(e.errno or 0, "")
    target = f"{_one_line(os.fsdecode(e.filename))}: " if e.filename is not None else ""
    return f"{target}{_one_line(why)}{hint}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
