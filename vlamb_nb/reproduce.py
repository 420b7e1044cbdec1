"""One-command reproduction: execute the paper notebooks, collect their recorded results, write a report.

``vlamb-nb reproduce [PAPER ...] [-p key=value ...]`` runs each notebook with papermill into
``runs/<run-id>/``, with its working files under ``runs/<run-id>/<paper>/`` and its figures under
``runs/<run-id>/figures/``, copies every result a notebook recorded (``vlamb_nb.notebook.record``) into
that notebook's metadata (``metadata.vlamb``), and writes ``runs/<run-id>/report.md`` and the same report as
one self-contained page, ``runs/<run-id>/report.html`` (its path is the last line printed). A failing
notebook is reported with its failing cell and error; the others still run. A notebook whose model
requests all failed is failed too (a score of 0 from nothing is not a result); a partial failure is a
warning with counts. The return value (and exit code) is the number of failed notebooks.

Notebooks run side by side, one per usable core (at most :data:`MAX_JOBS`), when none is given a model, and one
at a time otherwise (``--jobs N`` chooses); each has its own kernel, folders and generation log, so how many run
at once changes the time taken, never a result or a figure.

Notebooks given no model run under the ``offline`` profile unless ``-p profile=...`` says otherwise; a
notebook given a real model resolves the ``paper`` profile itself. Only ``--update-figures`` copies the
regenerated figures (never the pipeline demos) into the checkout's ``figures/``.

Parameters use the shared vocabulary (:mod:`vlamb_nb.notebook.parameters`): ``-p key=value`` goes to every
notebook that declares ``key`` (every notebook that runs a model declares ``model``, ``base_url``,
``quantization``, ``concurrency``, ``settings``, ``limit``, ``source``, ``store_dir``, ``seed`` and ``profile``);
``-p paper.key=value`` goes to that notebook only and is an error there if the notebook does not declare it; a
key no selected notebook declares is an error naming the notebooks; an old name is translated with a warning.
A served model (``openai:``) cannot run the notebooks that need weights (QLoRA training, saliency maps):
they are reported as not run, with the reason, never silently run on a stand-in.

The report opens with the cross-paper report card (:mod:`vlamb_nb.report_card`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlamb_nb.benchmarks import needs_weights
from vlamb_nb.errors import SettingError
from vlamb_nb.notebook import collect_figures, collect_results, jsonable
from vlamb_nb.paths import LATEST, PREVIOUS, link_latest, new_folder, repo_root

DEFAULT_PROFILE = "offline"


def __getattr__(name: str):
    if name == "NOTEBOOKS":  # execution order, from the registry: each paper's notebooks, then the cross-paper ones
        from vlamb_nb.benchmarks import notebooks

        return notebooks()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class NotebookRun:
    name: str
    path: Path
    output: Path
    parameters: dict[str, Any]
    ok: bool = False
    skipped: str | None = None  # why the notebook was not run (it needs weights a served model does not have)
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # the kernel's and this process's processor time for the notebook
    error: str | None = None
    failed_cell: int | None = None
    failed_source: str | None = None
    results: dict[str, Any] = field(default_factory=dict)
    generations: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)  # what each save_figure wrote, with its table


def notebooks_dir() -> Path:
    return repo_root() / "notebooks"


def available_notebooks(directory: Path | None = None) -> list[str]:
    from vlamb_nb.benchmarks import notebook_file, notebooks

    d = directory or notebooks_dir()
    return [n for n in notebooks() if notebook_file(n, d).is_file()]


def declared_parameters(path: Path) -> dict[str, Any]:
    import papermill

    return dict(papermill.inspect_notebook(str(path)))


def split_parameters(params: dict[str, Any], names: list[str]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Separate global ``key`` parameters from per-notebook ``paper.key`` ones; old names become the shared ones
    (with a warning)."""
    glob: dict[str, Any] = {}
    per: dict[str, dict[str, Any]] = {n: {} for n in names}
    for k, v in params.items():
        if "." in k:
            nb, key = k.split(".", 1)
            if nb not in per:
                raise SettingError(f"parameter {k!r} names notebook {nb!r}, which is not being run ({', '.join(names)})")
            per[nb][shared_name(key)] = v
        else:
            glob[shared_name(k)] = v
    return glob, per


def shared_name(key: str) -> str:
    """The shared vocabulary's name for ``key``: an old name is translated, with a warning."""
    import warnings

    from vlamb_nb.notebook.parameters import DEPRECATED

    new = DEPRECATED.get(key)
    if new is None:
        return key
    warnings.warn(f"notebook parameter {key!r} is deprecated; use {new!r}", DeprecationWarning, stacklevel=3)
    print(f"warning: notebook parameter {key!r} is deprecated; use {new!r}", flush=True)
    return new


def served_model(params: dict[str, Any]) -> bool:
    """The model is served elsewhere (``openai:``): notebooks that need its weights cannot run it."""
    from vlamb_nb.models.spec import ModelSpec

    model = params.get("model")
    return isinstance(model, str) and bool(model.strip()) and ModelSpec.parse(model).served


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


def check_run_id(run_id: str) -> str:
    """A run id names one folder of the runs folder and is written into its report: plain UTF-8 text, no folder
    separator, no control character (a command-line id of bytes that are not UTF-8 arrives with lone surrogates)."""
    shown = ascii(run_id)
    try:
        run_id.encode("utf-8")
    except UnicodeEncodeError:
        raise SettingError(f"run id {shown} is not UTF-8 text; name the run in UTF-8") from None
    if run_id.strip() in ("", ".", "..") or any(c in run_id for c in "/\\") or \
            any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in run_id):
        raise SettingError(f"run id {shown} is not a folder name: no '/', no control characters, not '.' or '..'")
    if run_id in (LATEST, PREVIOUS):
        raise SettingError(f"run id {shown} names the link to the newest runs (runs/{LATEST}, runs/{PREVIOUS}); "
                           "choose another")
    return run_id


def make_run_dir(out_dir: str | os.PathLike, run_id: str | None) -> Path:
    """The run's folder. A given id is that folder (a rerun into it replaces its report); a new id is the time of
    the start, and the folder is created exclusively (:func:`vlamb_nb.paths.new_folder`)."""
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    if run_id is not None:
        run_dir = root / check_run_id(run_id)
        run_dir.mkdir(exist_ok=True)
        return run_dir.resolve()
    return new_folder(root, new_run_id())


#: the lock file a reproduce holds in its run folder while it writes there (its pid inside)
RUN_LOCK = ".reproduce.lock"


@contextlib.contextmanager
def run_lock(run_dir: Path):
    """Hold ``run_dir`` for this process: a second ``reproduce`` into the same folder (the same ``--run-id`` at
    once) is refused in one line naming the live process that holds it. The lock is the kernel's (``flock``), so a
    process that died leaves none: its lock file's stale pid is taken over by the next run."""
    import fcntl

    from vlamb_nb.errors import InUseError

    path = run_dir / RUN_LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            raise InUseError(f"{run_dir}: another reproduce (pid {held}) is writing this run folder; wait for it "
                             "to end, or give another --run-id") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def _local_kernel_manager(stderr_log: Path | None = None):
    """A kernel manager whose kernel talks over Unix sockets in a private folder instead of TCP on localhost:
    no other user on the machine can connect to it (and ipykernel has nothing to warn about). With
    ``stderr_log`` the kernel process's own stderr (not a cell's: that comes through the kernel's messages) goes
    there: a kernel torn down by Ctrl-C complains there, not across the terminal, and :func:`execute` reads it back
    for a kernel that died."""
    import tempfile

    from jupyter_client.manager import AsyncKernelManager

    class LocalKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs: Any) -> None:
            self._socket_dir = tempfile.TemporaryDirectory(prefix="vlamb-kernel-")
            kwargs.setdefault("transport", "ipc")
            kwargs.setdefault("ip", str(Path(self._socket_dir.name) / "kernel"))
            super().__init__(**kwargs)

        async def _async_interrupt_kernel(self) -> None:
            # jupyter_client interrupts every kernel it shuts down; an idle ipykernel then logs
            # "KeyboardInterrupt caught in kernel" on a run that went well. Nothing runs at shutdown: skip it.
            if self.shutting_down:
                return
            await super()._async_interrupt_kernel()

        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            if stderr_log is None:
                return await super()._async_launch_kernel(kernel_cmd, **kw)
            with open(stderr_log, "ab") as err:  # the kernel keeps its own copy of the descriptor
                kw["stderr"] = err
                return await super()._async_launch_kernel(kernel_cmd, **kw)

    return LocalKernelManager


def execute(run: NotebookRun, *, cwd: Path, timeout: int | None = None) -> NotebookRun:
    """Execute one notebook; never raises for a notebook failure (it is recorded on ``run``)."""
    import tempfile

    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    t0, cpu0 = time.perf_counter(), _cpu_seconds()
    log = run.output.with_suffix(".generations.jsonl")
    log.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="vlamb-kernel-log-") as tmp:
        kernel_err = Path(tmp) / "stderr"
        try:
            with _env(VLAMB_GENERATION_LOG=str(log)):
                papermill.execute_notebook(str(run.path), str(run.output), parameters=run.parameters,
                                           kernel_name="python3", cwd=str(cwd), progress_bar=False,
                                           log_output=False, execution_timeout=timeout,
                                           kernel_manager_class=_local_kernel_manager(kernel_err))
            run.ok = True
        except PapermillExecutionError as e:
            run.error = f"{e.ename}: {e.evalue}"
            run.failed_cell = e.exec_count
            run.failed_source = e.source
        except Exception as e:  # noqa: BLE001 - kernel died, bad notebook file, ...: report, keep going
            said = _last_line(kernel_err)
            run.error = f"{type(e).__name__}: {e}" + (f" (the kernel's last word: {said})" if said else "")
    run.seconds, run.cpu_seconds = time.perf_counter() - t0, _cpu_seconds() - cpu0
    judge_generations(run, log)
    if run.output.is_file():
        try:
            nb = nbformat.read(run.output, as_version=4)
        except (OSError, ValueError, UnicodeError) as e:  # cut short (a full disk), damaged: one line, the run goes on
            run.ok = False
            why = e.strerror if isinstance(e, OSError) and e.strerror else type(e).__name__
            run.error = (f"the executed notebook {run.output.name} could not be read back ({why}); it was cut short "
                         "(a full disk?) or damaged: free space and run it again")
            return run
        run.results = collect_results(nb)
        run.figures = collect_figures(nb)
        nb.metadata["vlamb"] = {"results": run.results, "ok": run.ok, "error": run.error,
                                "parameters": run.parameters, "seconds": round(run.seconds, 2),
                                "cpu_seconds": round(run.cpu_seconds, 2), "generations": run.generations,
                                "warnings": run.warnings, "figures": run.figures}
        nbformat.write(nb, run.output)
    return run



def _last_line(path: Path) -> str:
    """The last non-empty line a kernel wrote to its stderr (why it died), or ""."""
    try:
        lines = [ln.strip() for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def _cpu_seconds() -> float:
    """Processor time (user + system) of this process and of its finished children: a notebook's kernel is
    counted once it has exited."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def kernel_environment(run_dir: Path, fig_dir: Path, tiny_seed: int | None = None) -> dict[str, str]:
    """The environment every notebook's kernel starts with: where it writes, and how it computes the same numbers
    in every run. A variable the caller set already (``PYTHONHASHSEED``, ``OMP_WAIT_POLICY``) is kept."""
    env = {"VLAMB_RUN_DIR": str(run_dir), "VLAMB_FIGURES_DIR": str(fig_dir),
           # a fixed string-hash seed makes set/dict-order dependent output (e.g. the font-subset names
           # matplotlib writes into PDFs) identical from run to run
           "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0"),
           # idle OpenMP threads (torch's and MKL's) sleep instead of spinning: a spinning thread holds the core that
           # another kernel, another program or the notebook's own Python is waiting for (a tiny model runs many
           # short parallel steps, so its threads spun most of the time). It changes when a thread waits, never how
           # work is split among threads, so no number moves.
           "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY") or "PASSIVE",
           # a progress bar in a notebook executed in batch is saved as the widget it started as ("0%"), a state
           # that never was the result: batch runs show none (tqdm's, and the hub's and transformers' loaders')
           "TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    if tiny_seed is not None:
        env["VLAMB_TINY_SEED"] = str(int(tiny_seed))
    return env


#: notebooks executed at once at most, whatever the cores: each kernel holds its own model and data
MAX_JOBS = 4


def default_jobs(runs: list[NotebookRun]) -> int:
    """How many notebooks run at once by default: one per usable core (at most :data:`MAX_JOBS`) when every
    notebook runs the offline stand-ins, one at a time when any is given a model (a real model wants the
    accelerator and the memory to itself)."""
    if any(r.parameters.get("model") is not None for r in runs):
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(MAX_JOBS, cores))


def execute_all(runs: list[NotebookRun], *, cwd: Path, timeout: int | None, jobs: int,
                quiet: bool = False) -> list[NotebookRun]:
    """Execute every run that is not already skipped or failed, ``jobs`` at a time, in their order; returns the
    runs in the same order. With several jobs each notebook is executed by a worker process of its own (the
    generation log is set per notebook in the worker's environment), so the kernels run side by side."""
    todo = [i for i, r in enumerate(runs) if not r.skipped and not r.error]
    total = len(runs)

    def started(i: int) -> None:
        if not quiet:
            path = runs[i].path
            shown = path.relative_to(repo_root()).as_posix() if path.is_relative_to(repo_root()) else str(path)
            print(f"[{i + 1}/{total}] {runs[i].name}: running {shown} ...", flush=True)

    def finished(i: int) -> None:
        if quiet:
            return
        run = runs[i]
        status = (run.skipped if run.skipped else f"ok in {run.seconds:.1f}s" if run.ok else f"FAILED: {run.error}")
        print(f"[{i + 1}/{total}] {run.name}: {status}", flush=True)
        for w in run.warnings:
            print(f"[{i + 1}/{total}] {run.name}: warning: {w}", flush=True)

    workers = min(jobs, len(todo))
    if workers <= 1:
        with _teardown_quiet_on_ctrl_c():
            for i in range(total):
                if i in todo:
                    started(i)
                    execute(runs[i], cwd=cwd, timeout=timeout)
                finished(i)
        return runs
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    for i in range(total):
        if i not in todo:
            finished(i)
    if not quiet:
        print(f"running {len(todo)} notebook(s), {workers} at a time: "
              f"{', '.join(runs[i].name for i in todo)} ...", flush=True)
    # spawned workers: a fresh interpreter each, nothing inherited from this process but its environment. They
    # leave Ctrl-C to this process, which stops them (their kernels follow their parent), so one Ctrl-C ends the
    # run with one line instead of a traceback from every worker.
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"), initializer=_leave_ctrl_c)
    try:
        futures = {pool.submit(execute, runs[i], cwd=cwd, timeout=timeout): i for i in todo}
        for future in as_completed(futures):
            i = futures[future]
            try:
                runs[i] = future.result()
            except Exception as e:  # noqa: BLE001 - the worker itself died (out of memory, killed): that notebook fails
                runs[i].error = f"the notebook's worker process failed: {type(e).__name__}: {e}"
            finished(i)
    except BaseException:
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.terminate()
        # waited for: the pool's manager thread sees its workers gone and ends now; left running, the interpreter's
        # exit would wake it through a pipe already closed and print a traceback after the one line of Ctrl-C
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown()
    return runs


#: what logs the teardown of a notebook cut short in this process (a kernel "died", a task's exception never read)
TEARDOWN_LOGGERS = ("papermill", "traitlets", "nbclient", "asyncio")


@contextlib.contextmanager
def _teardown_quiet_on_ctrl_c():
    """Notebooks executed in this process: on Ctrl-C, the loggers of their teardown are silenced before it starts
    (and stay so: an unread task's exception is logged when it is collected, later), so the interrupt ends in the
    one line the CLI prints. Outside the main thread there is no handler to set, and nothing changes."""
    import logging
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        for name in TEARDOWN_LOGGERS:
            logging.getLogger(name).disabled = True
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGINT, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _leave_ctrl_c() -> None:
    """A notebook worker ignores SIGINT (a terminal's Ctrl-C reaches every process of its group): the parent
    decides, and stops the workers."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def _env(**values: str | None):
    """Set environment variables for the kernels started inside the block, then restore them."""
    old = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def judge_generations(run: NotebookRun, log: Path) -> None:
    """Fail a notebook whose model requests all failed; warn (with counts) when some did."""
    from vlamb_nb.runner import failure_line

    if not log.is_file():
        return
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    run.generations = entries
    total = sum(e["requests"] for e in entries)
    failed = sum(e["failed"] for e in entries)
    if not total or not failed:
        return
    counts: dict[str, int] = {}
    for e in entries:
        for err in e["errors"]:
            counts[err["error"]] = counts.get(err["error"], 0) + err["count"]
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:3]
    line = failure_line({"requests": total, "failed": failed, "distinct_errors": len(counts),
                         "errors": [{"error": k, "count": v} for k, v in top]})
    if failed == total:
        run.ok = False
        run.error = run.error or f"every model request failed, so its scores measure nothing: {line}"
    else:
        run.warnings.append(f"partial failure: {line}; the affected items count as wrong in its scores")

def reproduce(papers: list[str] | None = None, *, params: dict[str, Any] | None = None, run_id: str | None = None,
              out_dir: str | os.PathLike = "runs", figures: str | os.PathLike | None = None,
              timeout: int | None = 1800, quiet: bool = False, notebook_dir: str | os.PathLike | None = None,
              update_figures: bool = False, tiny_seed: int | None = None, fetch: bool = False,
              jobs: int | None = None) -> int:
    """Run notebooks and write the report; return the number of failed notebooks.

    Under the paper profile a paper's notebook runs on its fetched release; when that is not in the data home the
    notebook fails with one line naming ``vlamb-nb data fetch PAPER`` (the others still run), or, with ``fetch``,
    the release is fetched first.

    ``figures``: where figures go (default ``<run>/figures``). ``update_figures``: afterwards copy each
    successful notebook's figures (not its pipeline demos) into the checkout's ``figures/``.
    ``tiny_seed``: seed of the tiny random checkpoints (a different seed is a different checkpoint).
    ``jobs``: notebooks executed at once (default :func:`default_jobs`); each is its own kernel with its own
    folders, so how many run at once changes the time taken, never what a notebook computes or writes.
    """
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise SettingError(f"jobs must be a positive number of notebooks, got {jobs!r}")
    if run_id is not None:
        check_run_id(run_id)
    nb_dir = Path(notebook_dir) if notebook_dir is not None else notebooks_dir()
    names = list(papers) if papers else available_notebooks(nb_dir)
    from vlamb_nb.benchmarks import notebook_file, notebooks

    unknown = [n for n in names if n not in notebooks()]
    if unknown:
        raise SettingError(f"unknown notebook(s) {unknown}; choose from {', '.join(notebooks())}")
    files = {n: notebook_file(n, nb_dir) for n in names}
    missing = [n for n in names if not files[n].is_file()]
    if missing:
        raise SettingError(f"notebook(s) not found: {', '.join(f'notebooks/{n}.ipynb' for n in missing)}")
    if not names:
        raise SettingError("no notebooks to run")
    glob, per = split_parameters(dict(params or {}), names)
    declared = {n: declared_parameters(files[n]) for n in names}
    unused = [k for k in glob if not any(k in d for d in declared.values())]
    if unused:
        raise SettingError(f"parameter(s) {unused} are declared by none of the notebooks being run "
                           f"({', '.join(names)}); the shared names are in vlamb_nb.notebook.parameters")

    run_dir = make_run_dir(out_dir, run_id)
    with run_lock(run_dir):  # one reproduce writes a run folder at a time
        fig_dir = Path(figures).resolve() if figures is not None else run_dir / "figures"
        env = kernel_environment(run_dir, fig_dir, tiny_seed)
        runs: list[NotebookRun] = []
        with _env(**env):
            for n in names:
                path = files[n]
                nb_params = {**{k: v for k, v in glob.items() if k in declared[n]}, **per[n]}
                nb_params = with_profile(nb_params, declared[n])
                bad = [k for k in per[n] if k not in declared[n]]
                run = NotebookRun(n, path, run_dir / f"{n}.ipynb", nb_params)
                if bad:
                    run.error = (f"SettingError: parameter(s) {bad} not declared by notebooks/{n}.ipynb "
                                 f"(declared: {sorted(declared[n])})")
                elif served_model(nb_params) and needs_weights(n):
                    run.skipped = (f"not run: {n} needs the model's weights, and {nb_params['model']} is served "
                                   "elsewhere (name a hub id or a local checkpoint to run it)")
                elif (missing_data := release_missing(n, nb_params, fetch=fetch, quiet=quiet)) is not None:
                    run.error = missing_data
                runs.append(run)
            runs = execute_all(runs, cwd=nb_dir, timeout=timeout, jobs=default_jobs(runs) if jobs is None else jobs,
                               quiet=quiet)
        page = write_report(runs, run_dir, params=glob, figures=fig_dir)
        failed = sum(not r.ok and not r.skipped for r in runs)
        latest = link_latest(out_dir, run_dir)
        if update_figures:
            kept: list[str] = []
            copied = refresh_figures([r.name for r in runs if r.ok], fig_dir, repo_root() / "figures", kept)
            if not quiet:
                print(f"figures/: {copied} file(s) refreshed from {fig_dir}")
                for line in kept:
                    print(f"figures/: {line}")
        if not quiet:
            skipped = sum(bool(r.skipped) for r in runs)
            print(f"report: {run_dir / 'report.md'}\n{len(runs) - failed - skipped} notebook(s) ok, {failed} failed"
                  + (f", {skipped} not run" if skipped else ""))
            if latest is not None:
                before = latest.parent / PREVIOUS
                print(f"{latest} -> {run_dir.name}" + (f" (the run before it: {before} -> {os.readlink(before)})"
                                                       if before.is_symlink() else ""))
            print(page)  # last, alone on its line: the page to open (`vlamb-nb reproduce | tail -n 1`)
        return failed


def release_missing(notebook: str, params: dict[str, Any], *, fetch: bool = False, quiet: bool = False) -> str | None:
    """Why a paper-profile notebook cannot run on its paper's release (one line), or None when it can: a real model
    is never run on generated data by default. With ``fetch`` the missing release is fetched first."""
    from vlamb_nb.benchmarks import registered
    from vlamb_nb.datahome import read_manifest
    from vlamb_nb.errors import VlambError
    from vlamb_nb.notebook.config import resolve_profile

    paper = next((p.name for p in registered() if p.name == notebook), None)
    if paper is None or params.get("source") is not None:
        return None
    try:
        if resolve_profile(params.get("profile"), params.get("model")) != "paper":
            return None
        manifest = read_manifest(paper)
    except VlambError as e:
        return f"{type(e).__name__}: {e}"
    if manifest is not None and manifest.get("usable", manifest.get("complete")):
        return None
    if fetch:
        from vlamb_nb.releases import fetch as fetch_release

        if not quiet:
            print(f"{paper}: fetching the paper's release first (--fetch) ...", flush=True)
        try:
            m = fetch_release(paper, progress=not quiet)
        except VlambError as e:
            return f"{type(e).__name__}: {e}"
        if m.get("usable", m.get("complete")):
            return None
        return (f"NotFetchedError: {paper}: the fetched release is incomplete; see `vlamb-nb data status`, or use it "
                f"without what cannot be had: `vlamb-nb data fetch {paper} --accept-missing`")
    state = "incomplete" if manifest is not None else "not fetched"
    return (f"NotFetchedError: {paper}: the paper's release is {state} here; run `vlamb-nb data fetch {paper}` "
            f"(or `vlamb-nb reproduce --fetch`), or pass -p {paper}.source=...")


def with_profile(params: dict[str, Any], declared: dict[str, Any]) -> dict[str, Any]:
    """``params`` plus ``profile=offline`` for a notebook that declares a profile and was given no model: the
    offline reproduction names its shortcuts explicitly, while a notebook given a model resolves its own
    profile (``paper`` for a real model), so a real run never inherits them."""
    if "profile" not in declared or "profile" in params:
        return params
    if params.get("model") is not None:
        return params
    return {**params, "profile": DEFAULT_PROFILE}


def refresh_figures(notebooks: list[str], source: Path, target: Path,
                    kept: list[str] | None = None) -> int:
    """Replace ``target/<nb>/`` with the figures a successful run wrote for each notebook (demos excluded).

    Figures of a notebook that failed are left as they were; a figure the notebook no longer draws is
    removed, so the committed folder equals what one reproduction writes — except that a committed figure drawn
    from released or given files (its PNG says so: :func:`vlamb_nb.plots.read_figure_data`) is never replaced by
    one drawn from a generated sample, nor removed by a run that did not have those files: it is kept, and
    ``kept`` gets one line saying which and why.
    """
    from vlamb_nb.plots import read_figure_data

    def stems(folder: Path) -> dict[str, list[Path]]:
        out: dict[str, list[Path]] = {}
        if folder.is_dir():
            for f in sorted(folder.iterdir()):
                if f.is_file() and f.suffix in (".png", ".pdf"):
                    out.setdefault(f.stem, []).append(f)
        return out

    def from_files(png: Path) -> Any:
        data = read_figure_data(png) if png.is_file() else None
        return data if data is not None and data.kind in ("release", "source") else None

    copied = 0
    for nb in notebooks:
        src, dst = source / nb, target / nb
        new, old, sampled = stems(src), stems(dst), stems(src / "demo")
        for stem, files in old.items():
            committed = from_files(dst / f"{stem}.png")
            drawn = read_figure_data(src / f"{stem}.png") if stem in new else None
            if committed is not None and (drawn is None or drawn.kind not in ("release", "source")):
                other = drawn or (read_figure_data(src / "demo" / f"{stem}.png") if stem in sampled else None)
                why = (f"this run drew it from {other.text}" if other is not None else
                       "this run drew it from a generated sample" if stem in sampled else
                       "this run did not draw it (its data was not there)")
                if kept is not None:
                    kept.append(f"kept figures/{nb}/{stem}.png: drawn from {committed.text}; {why}")
                new.pop(stem, None)
                continue
            for f in files:
                f.unlink()
        if new:
            dst.mkdir(parents=True, exist_ok=True)
        for files in new.values():
            for f in files:
                shutil.copy2(f, dst / f.name)
                copied += 1
    return copied


# -- the report ------------------------------------------------------------------------------------
def summaries(runs: list[NotebookRun], run_dir: Path | None = None) -> dict[str, dict[str, Any]]:
    """Each notebook's outcome and recorded results, as written to ``results.json`` (what the card and the pages
    are built from); ``figures``: what each ``save_figure`` call wrote (relative to ``run_dir``) and the recorded
    table it belongs to."""
    from vlamb_nb.report_html import figure_log

    return {r.name: {"ok": r.ok, "skipped": r.skipped, "error": r.error, "failed_cell": r.failed_cell,
                     "failed_source": r.failed_source, "warnings": r.warnings, "seconds": round(r.seconds, 2),
                     "parameters": r.parameters, "generations": r.generations,
                     "figures": figure_log(r.figures, run_dir or r.output.parent), "results": r.results}
            for r in runs}


def write_report(runs: list[NotebookRun], run_dir: Path, *, params: dict[str, Any] | None = None,
                 figures: Path | None = None) -> Path:
    """``report.md`` (the report card first, then each notebook's results, each figure linked after the table it
    belongs to), ``results.json``, and ``report.html``, the same in one self-contained page
    (:mod:`vlamb_nb.report_html`); returns the page's path. The card's figure goes to ``<figures>/card/``
    (``demo/`` under the offline profile; never refreshed into the committed ``figures/``, whose example card is
    made by ``vlamb-nb card --example``)."""
    from vlamb_nb import atomic, report_card, report_md, run_view
    from vlamb_nb.atomic import interrupts_held
    from vlamb_nb.report_html import place_figures, write_run_page

    fig_dir = figures if figures is not None else run_dir / "figures"
    results = jsonable(summaries(runs, run_dir))
    card = report_card.build(results, model=(params or {}).get("model"))
    try:
        report_card.save(card, directory=fig_dir)
    except Exception as e:  # noqa: BLE001 - a figure that cannot be drawn must not lose the report
        from vlamb_nb.errors import reason

        card_figure_error = reason(e)
    else:
        card_figure_error = None
    view = run_view.build(results, run_dir, place_figures(results, fig_dir, run_dir))  # both pages render it
    markdown = report_md.run_markdown(view, card, run_dir, outputs={r.name: r.output.name for r in runs},
                                      card_figure_error=card_figure_error)
    # all or nothing: the old page goes first, each file is renamed into place whole, the page comes last and a
    # page cut short (a full disk) is removed, so no page ever stands beside another run's report; Ctrl-C waits
    with interrupts_held():
        page = run_dir / "report.html"
        page.unlink(missing_ok=True)
        atomic.write_text(run_dir / "report.md", markdown)
        atomic.write_text(run_dir / "results.json", json.dumps(results, indent=2, ensure_ascii=False,
                                                               allow_nan=False))
        runs, items_error, items_notes = recorded_runs(run_dir)  # the items each paper's section lists
        try:
            return write_run_page(run_dir, results, card, figures=fig_dir, params=params,
                                  card_figure_error=card_figure_error, runs=runs, items_error=items_error,
                                  items_notes=items_notes, view=view)
        except BaseException:
            page.unlink(missing_ok=True)
            raise


def recorded_runs(run_dir: Path) -> tuple[list[Any], dict[str, str], dict[str, list[str]]]:
    """The run's prediction stores as the run records their notebooks wrote (the page lists their items; nothing is
    scored again after the notebooks end, the data loaded only for the items' prompts and images); why a
    paper's could not be read (``{paper: why}``, said in that paper's section; ``""``: the whole folder, never a
    lost report), so one paper's unreadable stores never hide another's items; and what was left out of a paper's
    items (``{paper: [line]}``, e.g. another split's stores, a store without its record). None at all is not an
    error."""
    from vlamb_nb.compare import load_runs
    from vlamb_nb.errors import DataError

    failed: dict[str, str] = {}
    left: list[str] = []
    try:
        runs = load_runs(run_dir, unloaded=left, failed=failed, score_missing=False)  # as the notebooks recorded them
    except DataError as e:
        if "no prediction stores" in str(e):
            return [], failed, {}
        return [], {"": str(e)}, {}
    except Exception as e:  # noqa: BLE001 - the report must be written whatever the stores hold
        from vlamb_nb.errors import reason

        return [], {"": reason(e)}, {}
    notes: dict[str, list[str]] = {}
    for line in left:  # "<paper>: …" lines name their paper; any other is the folder's
        line = line.replace(": not compared", ": not listed here")
        paper, sep, rest = line.partition(": ")
        named = bool(sep) and " " not in paper
        if named and rest.startswith("its stores under "):  # said under the paper's items: name the folder whole
            rest = f"the stores under {paper}/{rest.removeprefix('its stores under ')}"
        text = rest if named else line
        notes.setdefault(paper if named else "", []).append(text[:1].upper() + text[1:])
    return runs, failed, notes
