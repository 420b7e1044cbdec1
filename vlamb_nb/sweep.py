"""Sweeps: models × quantizations × benchmarks × settings from one YAML file.

One job per (model, quantization) loads the model once and runs every benchmark and setting,
each into its own prediction store, so an interrupted sweep resumes without redoing finished
items. When the jobs are done the sweep compares the models whose jobs finished on the items all of them
answered (:mod:`vlamb_nb.compare`: ``comparison.md``, ``comparison.json``, the figure and ``comparison.html`` in
``out_dir``). Jobs go through submitit: ``executor: local`` runs them one after another on this
machine (the same job code as on a cluster), ``executor: slurm`` submits them to SLURM (``gpus_per_node: 0``
asks for no GPU; sbatch's refusal is one line naming the request). A job that does not finish gets one line in
``summary.md`` with its cause: the exception it raised, cancelled, or the scheduler's state and its last error.

Example::

    name: qwen-vs-llava
    executor: local            # or slurm
    out_dir: sweeps/qwen-vs-llava
    batch_size: 8              # local models: requests per batch
    concurrency: 64            # openai: models: requests in flight (halved for a while on 429/503)
    timeout: 120               # openai: seconds per attempt
    max_retries: 5             # openai: retries per request
    deadline: 600              # openai: seconds per request, every retry included (0: none)
    quantization: [4bit]       # default for models that do not say
    slurm: {partition: gpu, gpus_per_node: 1, timeout_min: 240, mem_gb: 64, cpus_per_task: 8}
    models:
      - Qwen/Qwen2.5-VL-7B-Instruct
      - {spec: llava-hf/llava-1.5-7b-hf, quantization: [4bit, none], name: llava15}
      - {spec: "openai:Qwen/Qwen2.5-VL-72B-Instruct", options: {base_url: "http://gpu-node:8000/v1"}}
      - {spec: "openai:Qwen/Qwen2.5-VL-72B-Instruct", options: {base_url: "http://gpu-node2:8000/v1"}}
    benchmarks:
      - {name: vague, source: HazelNam/vague-bench, settings: [vlm, lm], limit: 100}
      - {name: refadv, settings: [direct]}

One ``openai:`` model name on two endpoints (unnamed) is two models, named with their endpoint's host
(``openai:Qwen/...@gpu-node-8000``), so their stores never collide. ``concurrency``, ``timeout``,
``max_retries`` and ``deadline`` apply to every ``openai:`` model (a model's own ``options`` win;
``vlamb-nb sweep --concurrency N ...`` wins over both); local models ignore them.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vlamb_nb.errors import DataError, SettingError
from vlamb_nb.models.spec import ModelSpec

#: endpoint options the file may set for all openai: models
REMOTE_KEYS = ("concurrency", "timeout", "max_retries", "deadline")
TOP_KEYS = {"name", "executor", "out_dir", "batch_size", "quantization", "slurm", "models", "benchmarks", "progress",
            *REMOTE_KEYS}
MODEL_KEYS = {"spec", "quantization", "name", "options"}
BENCH_KEYS = {"name", "source", "settings", "limit", "options"}
SLURM_KEYS = {"partition", "gpus_per_node", "timeout_min", "mem_gb", "cpus_per_task", "account", "qos",
              "constraint", "array_parallelism"}


@dataclass
class BenchmarkSpec:
    name: str
    source: str | None = None
    settings: list[str] = field(default_factory=list)
    limit: int | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class SweepJob:
    """Everything one job needs; plain data so it pickles to a cluster node."""

    model: str
    model_name: str
    quantization: str | None
    benchmarks: list[BenchmarkSpec]
    out_dir: str
    batch_size: int = 8
    model_options: dict[str, Any] = field(default_factory=dict)
    progress: bool = True
    served: bool = False  # the spec names a served model (read once, when the sweep file is read)

    @property
    def slug(self) -> str:
        return f"{_slug(self.model_name)}__{self.quantization or 'none'}"


@dataclass
class SweepConfig:
    name: str
    executor: str
    out_dir: Path
    jobs: list[SweepJob]
    slurm: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None  # the sweep file, named where a setting of it must change


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "model"


def _as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _quant(v: Any) -> str | None:
    if v in (None, "none", "None", False):
        return None
    if v not in ("4bit", "8bit"):
        raise SettingError(f"unknown quantization {v!r}; use 4bit, 8bit or none")
    return str(v)


def load_config(path: str | os.PathLike, *, remote: dict[str, Any] | None = None) -> SweepConfig:
    """Read and validate a sweep YAML; unknown keys, settings and benchmarks are errors up front.

    ``remote``: endpoint options for every ``openai:`` model, over the file's (the command line's flags)."""
    import yaml

    from vlamb_nb.benchmarks import get_benchmark

    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError("sweep config not found", source=str(path)) from None
    except yaml.YAMLError as e:
        raise DataError(f"not valid YAML: {e}", source=str(path)) from None
    if not isinstance(raw, dict):
        raise DataError("a sweep config is a mapping", source=str(path))
    bad = set(raw) - TOP_KEYS
    if bad:
        raise DataError(f"unknown key(s) {sorted(bad)}; allowed: {sorted(TOP_KEYS)}", source=str(path))
    executor = raw.get("executor", "local")
    if executor not in ("local", "slurm"):
        raise DataError(f"executor must be local or slurm, got {executor!r}", source=str(path), field="executor")
    slurm = dict(raw.get("slurm") or {})
    if set(slurm) - SLURM_KEYS:
        raise DataError(f"unknown slurm key(s) {sorted(set(slurm) - SLURM_KEYS)}", source=str(path), field="slurm")
    gpus = slurm.get("gpus_per_node", 1)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
        raise DataError(f"gpus_per_node must be a whole number of GPUs (0: none), got {gpus!r}", source=str(path),
                        field="slurm")
    out_dir = Path(raw.get("out_dir") or Path("sweeps") / _slug(raw.get("name") or path.stem))
    if not out_dir.is_absolute():
        out_dir = (path.parent / out_dir).resolve()
    default_q = _as_list(raw.get("quantization", "4bit"))

    benches: list[BenchmarkSpec] = []
    for i, b in enumerate(raw.get("benchmarks") or []):
        b = {"name": b} if isinstance(b, str) else dict(b)
        if set(b) - BENCH_KEYS:
            raise DataError(f"entry {i + 1} has unknown key(s) {sorted(set(b) - BENCH_KEYS)}", source=str(path),
                            field="benchmarks")
        bench = get_benchmark(b["name"])
        settings = [str(s) for s in _as_list(b.get("settings") or [bench.default_setting])]
        for s in settings:
            bench.check_setting(s)
        benches.append(BenchmarkSpec(bench.name, b.get("source"), settings, b.get("limit"), dict(b.get("options") or {})))
    if not benches:
        raise DataError("no benchmarks listed", source=str(path), field="benchmarks")

    file_remote = {k: raw[k] for k in REMOTE_KEYS if raw.get(k) is not None}
    cli_remote = {k: v for k, v in (remote or {}).items() if v is not None}
    jobs: list[SweepJob] = []
    for i, m in enumerate(raw.get("models") or []):
        m = {"spec": m} if isinstance(m, str) else dict(m)
        if set(m) - MODEL_KEYS or "spec" not in m:
            raise DataError(f"entry {i + 1}: a model needs 'spec' and may have {sorted(MODEL_KEYS)}", source=str(path),
                            field="models")
        options = dict(m.get("options") or {})
        served = bool(str(m["spec"]).strip()) and ModelSpec.parse(str(m["spec"])).served
        if served:  # the command line wins, then the model's options, then the file
            options = {**file_remote, **options, **cli_remote}
        for q in _as_list(m.get("quantization", default_q)):
            jobs.append(SweepJob(model=str(m["spec"]), model_name=str(m.get("name") or m["spec"]), quantization=_quant(q),
                                 benchmarks=benches, out_dir=str(out_dir), batch_size=int(raw.get("batch_size", 8)),
                                 model_options=options, progress=bool(raw.get("progress", True)), served=served))
    if not jobs:
        raise DataError("no models listed", source=str(path), field="models")
    _name_endpoints(jobs)
    slugs = [j.slug for j in jobs]
    if len(set(slugs)) != len(slugs):
        raise DataError("two models share a name; give them distinct 'name's", source=str(path), field="models")
    return SweepConfig(str(raw.get("name") or path.stem), executor, out_dir, jobs, slurm, path)


def _name_endpoints(jobs: list[SweepJob]) -> None:
    """One ``openai:`` model name served from two endpoints is two models (two checkpoints behind one name, a
    4-bit and a 16-bit server): unnamed, each gets its endpoint's host in its name, so their stores and their
    rows in the comparison never collide."""
    from urllib.parse import urlsplit

    from vlamb_nb.paths import slug

    by_name: dict[tuple[str, str | None], list[SweepJob]] = {}
    for j in jobs:
        by_name.setdefault((j.model_name, j.quantization), []).append(j)
    for group in by_name.values():
        urls = [j.model_options.get("base_url") for j in group]
        if len(group) < 2 or not all(j.served and j.model_name == j.model for j in group) \
                or len(set(urls)) < len(urls):
            continue
        for j, url in zip(group, urls, strict=True):
            host = urlsplit(str(url)).netloc.rpartition("@")[2] if url else "default-endpoint"
            j.model_name = f"{j.model_name}@{slug(host)}"


def store_path(job: SweepJob, bench: str, setting: str) -> Path:
    """The job's store for one benchmark and setting, named by the package's one rule (``paths.store_path``):
    where its run writes, unless the file holds another run of that name (then the run writes its own beside it)."""
    from vlamb_nb.paths import store_path as named

    return named(Path(job.out_dir) / "predictions", benchmark=bench, model=job.model_name,
                 quantization=job.quantization, setting=setting)


def job_store(job: SweepJob, bench: str, setting: str) -> Path:
    """The store the job's run for one benchmark and setting wrote (:func:`vlamb_nb.record.latest_store`: its own
    file where the default name held another run, a sweep rerun with other options)."""
    from vlamb_nb.record import latest_store

    return latest_store(store_path(job, bench, setting))


def run_job(job: SweepJob) -> list[dict[str, Any]]:
    """Load the model once, then run every benchmark × setting into its store; return summary rows."""
    from vlamb_nb.benchmarks import get_benchmark
    from vlamb_nb.models import load_model

    model = load_model(job.model, quantization=job.quantization, **job.model_options)
    weights = model.weight_bytes() if hasattr(model, "weight_bytes") else None  # what a quantization comparison shows
    rows = []
    for spec in job.benchmarks:
        bench = get_benchmark(spec.name)
        items = bench.load(spec.source)
        for setting in spec.settings:
            scored = bench.evaluate(model, items, setting, store=store_path(job, spec.name, setting),
                                    limit=spec.limit, batch_size=job.batch_size, progress=job.progress,
                                    **spec.options)
            row = {"model": job.model_name, "quantization": job.quantization or "none", "benchmark": spec.name,
                   "setting": setting}
            row.update(bench.summary(scored))
            if weights is not None:
                row["weights_gib"] = round(weights / 2**30, 4)
            rows.append(row)
    out = Path(job.out_dir) / "summaries" / f"{job.slug}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2, default=str), encoding="utf-8")
    return rows


def _executor(cfg: SweepConfig):
    import submitit

    folder = cfg.out_dir / "submitit" / "%j"
    if cfg.executor == "local":
        ex = submitit.AutoExecutor(folder=folder, cluster="local")
        ex.update_parameters(timeout_min=int(cfg.slurm.get("timeout_min", 24 * 60)), name=f"vlamb-{cfg.name}")
        return ex
    try:
        ex = submitit.AutoExecutor(folder=folder, cluster="slurm")
    except RuntimeError as e:  # submitit looks for srun first
        if "srun" not in str(e):
            raise
        raise SettingError(_no_slurm("srun")) from None
    params = {"timeout_min": cfg.slurm.get("timeout_min", 240), "mem_gb": cfg.slurm.get("mem_gb", 64),
              "cpus_per_task": cfg.slurm.get("cpus_per_task", 8), "name": f"vlamb-{cfg.name}"}
    if cfg.slurm.get("gpus_per_node", 1):  # 0: no GPU asked for at all (a cluster without GPUs has no gres)
        params["gpus_per_node"] = cfg.slurm.get("gpus_per_node", 1)
    for k in ("partition", "account", "qos", "constraint", "array_parallelism"):
        if k in cfg.slurm:
            params[f"slurm_{k}"] = cfg.slurm[k]
    ex.update_parameters(**params)
    return ex


def _submit(cfg: SweepConfig, ex: Any) -> list[Any]:
    """The jobs submitted as one SLURM array; sbatch's refusal is one line naming the settings it was given."""
    from submitit.core.utils import FailedJobError, FailedSubmissionError

    try:
        with contextlib.redirect_stderr(io.StringIO()):  # submitit prints sbatch's refusal itself: said once, below
            return ex.map_array(run_job, cfg.jobs)
    except FileNotFoundError:
        raise SettingError(_no_slurm("sbatch")) from None
    except (FailedJobError, FailedSubmissionError) as e:
        raise SettingError(_refused(cfg, str(e))) from None


def _no_slurm(command: str) -> str:
    return (f"executor: slurm needs SLURM's srun and sbatch on PATH, and {command} is not there (executor: local runs "
            "the jobs on this machine)")


def _refused(cfg: SweepConfig, text: str) -> str:
    """sbatch's refusal in one line, with the resources each job asked for and the setting to change."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    why = next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "no reason given")
    why = why.removeprefix("sbatch: error: ").removeprefix("Batch job submission failed: ")
    gpus = cfg.slurm.get("gpus_per_node", 1)
    asked = [f"gpus_per_node {gpus}" + ("" if "gpus_per_node" in cfg.slurm else " (the default)"),
             f"mem_gb {cfg.slurm.get('mem_gb', 64)}", f"cpus_per_task {cfg.slurm.get('cpus_per_task', 8)}"]
    asked += [f"{k} {cfg.slurm[k]}" for k in ("partition", "constraint", "account", "qos") if k in cfg.slurm]
    where = cfg.path.name if cfg.path is not None else "the sweep file"
    about_nodes = any(w in why.lower() for w in ("node configuration", "gres", "generic resource", "gpus"))
    hint = (f"; on a cluster without GPUs set `slurm: {{gpus_per_node: 0}}` in {where}" if gpus and about_nodes else
            f"; ask for what the cluster has under `slurm:` in {where}")
    return f"sbatch refused the sweep's jobs: {why} (each job asked for {', '.join(asked)}){hint}"


def job_failure(handle: Any, error: BaseException, *, scheduler: str = "SLURM") -> str:
    """What happened to a job that returned nothing, in one line: the exception it raised (its type and first
    line, from the traceback submitit kept), cancelled, or the scheduler's state with the last line of its
    stderr (submitit's ``.err``), never the path of a log."""
    from submitit.core.utils import FailedJobError, UncompletedJobError

    if isinstance(error, FailedJobError) and "failed during processing with trace:" in str(error):
        return _raised(str(error)) or "failed (no exception recorded)"
    if not isinstance(error, UncompletedJobError):
        first = (str(error).strip().splitlines() or [""])[0]
        return f"{type(error).__name__}: {first}" if first else type(error).__name__
    try:
        state = str(handle.state or "UNKNOWN")
    except Exception:  # noqa: BLE001 - the scheduler's accounting may be unreachable: say what is known
        state = "UNKNOWN"
    err = ""
    with contextlib.suppress(Exception):  # the .err log may be gone with the node
        err = handle.stderr() or ""
    last = next((ln.strip() for ln in reversed(err.splitlines()) if ln.strip()), "")
    said = f"{scheduler} state {state}"
    if state.upper().startswith("CANCELLED"):
        return f"cancelled ({said}); its stores so far are kept: run the sweep again to finish it"
    if state.upper().startswith("TIMEOUT"):
        return f"timed out ({said}): raise slurm: timeout_min, or run the sweep again to resume it"
    if state.upper().startswith("OUT_OF_MEMORY"):
        return f"out of memory ({said}): raise slurm: mem_gb"
    return f"did not finish ({said})" + (f": {last[:200]}" if last else "")


def _raised(text: str) -> str:
    """``Type: first line`` of the exception at the end of a formatted traceback (module prefix dropped)."""
    block = text.split("failed during processing with trace:", 1)[-1]
    parts = [p for p in block.split("----------------------") if p.strip()]
    trace = parts[0] if parts else block
    lines = trace.strip("\n").splitlines()
    last_frame = max((i for i, ln in enumerate(lines) if ln.startswith("  File ")), default=-1)
    rest = lines[last_frame + 1:]
    while rest and rest[0].startswith("    "):  # the frame's source line and its markers
        rest = rest[1:]
    first = next((ln for ln in rest if ln.strip()), "")
    head, sep, msg = first.partition(": ")
    head = head.rsplit(".", 1)[-1] if " " not in head else head
    return f"{head}{sep}{msg}".strip()


def sweep(config: str | os.PathLike, *, quiet: bool = False, remote: dict[str, Any] | None = None) -> int:
    """Run a sweep; write ``summary.csv`` and ``summary.md``; return the number of failed jobs.

    ``remote``: endpoint options (``concurrency``, ``timeout``, ...) for every ``openai:`` model, over the file's."""
    import pandas as pd

    from vlamb_nb.models.http import redact_url

    cfg = load_config(config, remote=remote)
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    shown = [asdict(j) for j in cfg.jobs]
    for j in shown:  # an address with a key in its query is written masked, like everywhere else
        if isinstance(j["model_options"].get("base_url"), str):
            j["model_options"]["base_url"] = redact_url(j["model_options"]["base_url"])
    (cfg.out_dir / "config.json").write_text(json.dumps(shown, indent=2, default=str))
    ex = _executor(cfg)
    rows: list[dict[str, Any]] = []
    failures: list[str] = []

    finished: list[SweepJob] = []

    def collect(job: SweepJob, handle) -> None:
        try:
            rows.extend(handle.result())
        except Exception as e:  # noqa: BLE001 - one failed job must not stop the sweep
            failures.append(f"{job.slug}: {job_failure(handle, e, scheduler=cfg.executor.replace('slurm', 'SLURM'))}")
        else:
            finished.append(job)

    if cfg.executor == "local":  # one after another: a local machine has one accelerator at most
        for job in cfg.jobs:
            if not quiet:
                print(f"[sweep] {job.slug}", flush=True)
            collect(job, ex.submit(run_job, job))
    else:
        handles = _submit(cfg, ex)
        if not quiet:
            print(f"[sweep] submitted {len(handles)} job(s): {', '.join(h.job_id for h in handles)}", flush=True)
        for job, h in zip(cfg.jobs, handles, strict=True):
            collect(job, h)
    table = pd.DataFrame(rows, columns=list(dict.fromkeys(
        ["model", "quantization", "benchmark", "setting", *(k for r in rows for k in r)])))
    table.to_csv(cfg.out_dir / "summary.csv", index=False)
    if not rows:
        md = f"No job finished: all {len(cfg.jobs)} failed (below), so there is nothing to summarize."
    else:
        md = table.to_markdown(index=False) if _has_tabulate() else table.to_string(index=False)
    text = f"# Sweep {cfg.name}\n\n{md}\n"
    if failures:
        text += "\n## Failed jobs\n\n" + "".join(f"- {f}\n" for f in failures)
    compared = write_comparison(cfg, finished)
    if compared:
        text += f"\n{compared}\n"
    for line in (write_sensitivity(cfg, finished), write_quantization(cfg, finished, rows)):
        if line:
            text += f"\n{line}\n"
    (cfg.out_dir / "summary.md").write_text(text, encoding="utf-8")
    if not quiet:
        print(text)
    return len(failures)


def write_comparison(cfg: SweepConfig, finished: list[SweepJob] | None = None) -> str:
    """The models of the jobs that finished (``finished``; default: every job) compared on the items all of them
    answered (``comparison.md``, ``.json``, the figure and ``comparison.html``, the page that shows them together,
    in the output folder), from their stores on disk, so a resumed sweep compares everything it holds. A job that
    failed or was cancelled is left out (its partial stores would shrink the items every model is compared on)
    and named. Returns a line for the summary; a comparison that cannot be made says why and never fails the
    sweep."""
    from vlamb_nb.compare import compare, score_store

    if len(cfg.jobs) < 2:
        return "Comparison: one model only, nothing to compare."
    done = cfg.jobs if finished is None else [j for j in cfg.jobs if j in finished]
    left = [j.slug for j in cfg.jobs if j not in done]
    not_in = f"; not compared, as they did not finish: {', '.join(left)}" if left else ""
    if len(done) < 2:
        return (f"Comparison not written: {len(done)} of {len(cfg.jobs)} models finished and a comparison needs two "
                f"(did not finish: {', '.join(left)}).")
    multi_quant = len({j.model_name for j in cfg.jobs}) < len(cfg.jobs)  # the names compare gives a sweep's runs
    try:
        runs = [score_store(p, source=spec.source, name=j.model_name + (f" ({j.quantization or 'none'})"
                                                                          if multi_quant else ""),
                            options=dict(spec.options))
                for j in done for spec in j.benchmarks for setting in spec.settings
                if (p := job_store(j, spec.name, setting)).is_file()]
        result = compare(runs, title=f"Sweep {cfg.name}: models compared on the same items")
        result.save(cfg.out_dir, name="comparison")
    except Exception as e:  # noqa: BLE001 - the jobs' stores are kept; the comparison can be rerun
        msg = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        return f"Comparison not written: {msg} (rerun: vlamb-nb compare {cfg.out_dir}){not_in}"
    return (f"Comparison of {len(result.models)} models: comparison.md, comparison.json, comparison.png "
            f"({len(result.pairs)} paired tests, {result.correction}-adjusted); all of it on one page: "
            f"comparison.html{not_in}.")


def write_sensitivity(cfg: SweepConfig, finished: list[SweepJob] | None = None) -> str:
    """Each finished model's prompt sensitivity where a benchmark ran a paper's base setting beside its variants
    (:mod:`vlamb_nb.sensitivity`: position bias, consistency, the paired difference against the paper's prompt),
    from the stores on disk, into ``sensitivity.md`` and ``sensitivity.json``. Returns a line for the summary
    (empty when no benchmark ran a variant); a failure says why and never fails the sweep."""
    from vlamb_nb.compare import score_store
    from vlamb_nb.sensitivity import bases_with_variants, prompt_sensitivity

    done = cfg.jobs if finished is None else [j for j in cfg.jobs if j in finished]
    results, errors = [], []
    for job in done:
        for spec in job.benchmarks:
            for base, variants in bases_with_variants(spec.name, spec.settings).items():
                try:
                    runs = {s: score_store(p, source=spec.source, name=job.model_name, options=dict(spec.options)).scored
                            for s in (base, *variants) if (p := job_store(job, spec.name, s)).is_file()}
                    res = prompt_sensitivity(spec.name, runs, base=base)
                except Exception as e:  # noqa: BLE001 - the stores are kept; the analysis can be rerun from Python
                    errors.append(f"{job.slug} {spec.name} {base}: {str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__}")
                    continue
                results.append((job, res))
    if not results and not errors:
        return ""
    md = "".join(f"# {job.model_name} ({job.quantization or 'none'})\n\n{res.markdown()}\n" for job, res in results)
    (cfg.out_dir / "sensitivity.md").write_text(md, encoding="utf-8")
    (cfg.out_dir / "sensitivity.json").write_text(json.dumps(
        [{"model": job.model_name, "quantization": job.quantization or "none", **res.to_dict()} for job, res in results],
        indent=2, default=str), encoding="utf-8")
    line = f"Prompt sensitivity of {len(results)} run(s): sensitivity.md, sensitivity.json."
    return line + (f" Not analysed: {'; '.join(errors)}." if errors else "")


def write_quantization(cfg: SweepConfig, finished: list[SweepJob] | None = None,
                       rows: list[dict[str, Any]] | None = None) -> str:
    """Each model the sweep ran at two quantizations or more (its ``quantization: [4bit, 8bit, none]`` axis):
    every benchmark and setting compared across them on the same items (:mod:`vlamb_nb.quantization`: paired
    differences, equivalence within the default margin, the items that flip, memory and tokens/s), from the
    stores on disk, into ``quantization.md`` and ``quantization.json``. Returns a line for the summary (empty when
    no model ran twice); a failure says why and never fails the sweep."""
    from vlamb_nb.compare import score_store
    from vlamb_nb.quantization import quantization_comparison

    done = cfg.jobs if finished is None else [j for j in cfg.jobs if j in finished]
    by_model: dict[str, list[SweepJob]] = {}
    for j in done:
        by_model.setdefault(j.model_name, []).append(j)
    memory = {(r["model"], r["quantization"]): r["weights_gib"] for r in rows or [] if r.get("weights_gib") is not None}
    results, errors = [], []
    for name, jobs in by_model.items():
        if len(jobs) < 2:
            continue
        for spec in jobs[0].benchmarks:
            for setting in spec.settings:
                stores = {j.quantization or "none": p for j in jobs
                          if (p := job_store(j, spec.name, setting)).is_file()}
                if len(stores) < 2:
                    continue
                try:
                    runs = {q: score_store(p, source=spec.source, name=name, options=dict(spec.options)).scored
                            for q, p in stores.items()}
                    res = quantization_comparison(spec.name, runs, memory={q: memory.get((name, q), float("nan"))
                                                                           for q in runs})
                except Exception as e:  # noqa: BLE001 - the stores are kept; the comparison can be rerun from Python
                    msg = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
                    errors.append(f"{name} {spec.name} {setting}: {msg}")
                    continue
                results.append((name, setting, res))
    if not results and not errors:
        return ""
    md = "".join(f"# {name} · {setting}\n\n{res.markdown()}\n" for name, setting, res in results)
    (cfg.out_dir / "quantization.md").write_text(md, encoding="utf-8")
    (cfg.out_dir / "quantization.json").write_text(json.dumps(
        [{"model": name, "setting": setting, **res.to_dict()} for name, setting, res in results], indent=2,
        default=str), encoding="utf-8")
    line = f"Quantizations compared for {len(results)} run(s): quantization.md, quantization.json."
    return line + (f" Not compared: {'; '.join(errors)}." if errors else "")


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True
