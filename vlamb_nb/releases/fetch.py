"""Fetch a paper's release once, verified, into the data home; import a copy made elsewhere; say what is there.

Hub files go through ``huggingface_hub`` (so ``HF_ENDPOINT``, ``HF_TOKEN``, ``HF_HOME`` and mirrors work as
users expect), files at fixed URLs and record images through httpx (``$VLAMB_MIRRORS`` rewrites URLs for a
local mirror: ``PREFIX=REPLACEMENT`` pairs separated by spaces, ``*=URL/`` maps every URL to ``URL/host/path``).

A file becomes visible under ``files/`` only when complete and verified (downloads go to ``.staging/`` and are
moved in one ``os.replace``); a killed fetch resumes its partial files (the hub client's own ``.incomplete``
files, and HTTP ``Range`` for URLs), and a file already in place and recorded in the journal is never
downloaded again. ``manifest.json`` is written last: without it the release is not read.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlamb_nb.datahome import MANIFEST, data_home, read_manifest, release_dir
from vlamb_nb.errors import FetchError, VlambError
from vlamb_nb.releases.catalog import RELEASES, HubFiles, MetricModel, RecordImages, Release, UrlFile, release

MIRRORS_ENV = "VLAMB_MIRRORS"
JOURNAL = ".journal.jsonl"
CHUNK = 1 << 20


# -- small helpers -----------------------------------------------------------------------------------
def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def git_blob_sha1(path: Path) -> str:
    """The git object id of a file (what the hub lists for files not stored with LFS)."""
    h = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def mirrored(url: str) -> str:
    """``url`` rewritten by ``$VLAMB_MIRRORS`` (unchanged when no rule matches)."""
    for rule in (os.environ.get(MIRRORS_ENV) or "").split():
        prefix, sep, repl = rule.partition("=")
        if not sep:
            continue
        if prefix == "*":
            return repl.rstrip("/") + "/" + re.sub(r"^[a-z]+://", "", url)
        if url.startswith(prefix):
            return repl + url[len(prefix):]
    return url


def _hub_endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def _unreachable(what: str, paper: str, err: BaseException) -> FetchError:
    return FetchError(f"{paper}: cannot reach {what} ({type(err).__name__}: {_first_line(err)}); on a machine "
                      f"without network, fetch elsewhere and import with `vlamb-nb data fetch {paper} --from PATH`")


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:200] if text else type(err).__name__


def _is_network_error(err: BaseException) -> bool:
    names = {c.__name__ for c in type(err).__mro__}
    return bool(names & {"ConnectError", "ConnectTimeout", "TransportError", "TimeoutException", "ConnectionError",
                         "LocalEntryNotFoundError", "OfflineModeIsEnabled", "NetworkError", "ReadTimeout",
                         "RemoteProtocolError", "ReadError"}) or isinstance(err, ConnectionError | TimeoutError)


@dataclass
class Journal:
    """Verified files in place (path, size, mtime, sha256), appended as each lands, so a rerun skips them."""

    path: Path
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    e = json.loads(line)
                    self.entries[e["path"]] = e
                except (ValueError, KeyError, TypeError):
                    continue  # a torn last line after a kill: that file is checked again

    def done(self, rel: str, final: Path, sha256: str | None) -> dict[str, Any] | None:
        e = self.entries.get(rel)
        if e is None or not final.is_file():
            return None
        st = final.stat()
        if e.get("size") != st.st_size or e.get("mtime_ns") != st.st_mtime_ns:
            return None
        if sha256 is not None and e.get("sha256") != sha256 and e.get("git_sha1") != sha256:
            return None
        return e

    def add(self, entry: dict[str, Any]) -> None:
        self.entries[entry["path"]] = entry
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


class _Fetch:
    """One paper's fetch: parts in order, every file verified before it is placed."""

    def __init__(self, rel: Release, *, token: str | None, concurrency: int, progress: bool,
                 from_path: Path | None) -> None:
        self.rel, self.token, self.concurrency, self.progress = rel, token, max(1, concurrency), progress
        self.from_path = from_path
        self.root = release_dir(rel.paper)
        self.files_dir = self.root / "files"
        self.stage = self.root / ".staging"
        for d in (self.files_dir, self.stage):
            d.mkdir(parents=True, exist_ok=True)
        self.journal = Journal(self.root / JOURNAL)
        self.records: list[dict[str, Any]] = []
        self.revisions: dict[str, str | None] = {}
        self.bar: Any = None

    # -- placing verified files --------------------------------------------------------------------
    def place(self, staged: Path, rel_path: str, *, sha256: str | None, git_sha1: str | None = None,
              how: str) -> dict[str, Any]:
        """Verify ``staged`` and move it to ``files/<rel_path>``; a wrong checksum is refused and removed."""
        got = file_sha256(staged)
        if sha256 is not None and got != sha256:
            staged.unlink(missing_ok=True)
            raise FetchError(f"{self.rel.paper}: {rel_path} has sha256 {got[:12]}…, the release lists "
                             f"{sha256[:12]}…; the file was refused (a changed upstream file, a broken mirror or "
                             "a damaged copy)")
        if git_sha1 is not None and sha256 is None and git_blob_sha1(staged) != git_sha1:
            staged.unlink(missing_ok=True)
            raise FetchError(f"{self.rel.paper}: {rel_path} does not match the hub's git object {git_sha1[:12]}…; "
                             "the file was refused")
        final = self.files_dir / rel_path
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staged, final)
        st = final.stat()
        entry = {"path": rel_path, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": got,
                 "git_sha1": git_sha1, "verified": how}
        self.journal.add(entry)
        return entry

    def grow(self, n: int) -> None:
        if self.bar is not None and n:
            self.bar.total = (self.bar.total or 0) + n
            self.bar.refresh()

    def keep(self, entry: dict[str, Any]) -> None:
        self.records.append({k: entry.get(k) for k in ("path", "size", "sha256", "verified")})
        if self.bar is not None:
            self.bar.update(1)

    def run_parallel(self, jobs: list[Any], fn: Any) -> list[BaseException]:
        """Run ``fn(job)`` on up to ``concurrency`` threads; errors are returned, never half-raised."""
        errors: list[BaseException] = []
        if not jobs:
            return errors
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(jobs))) as pool:
            futures = [pool.submit(fn, j) for j in jobs]
            for f in as_completed(futures):
                err = f.exception()
                if err is not None:
                    errors.append(err)
        return errors

    # -- hub files ---------------------------------------------------------------------------------
    def hub_listing(self, part: HubFiles) -> tuple[str, list[Any]]:
        from huggingface_hub import HfApi
        from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

        try:
            info = HfApi(token=self.token).repo_info(part.repo, repo_type=part.repo_type, files_metadata=True)
        except GatedRepoError:
            raise self.gated(part) from None
        except RepositoryNotFoundError:
            raise FetchError(f"{self.rel.paper}: {part.repo} was not found at {_hub_endpoint()} (a private or gated "
                             "repository also answers so without access: set HF_TOKEN)") from None
        except HfHubHTTPError as e:
            if _is_network_error(e):
                raise _unreachable(_hub_endpoint(), self.rel.paper, e) from None
            raise FetchError(f"{self.rel.paper}: the hub refused the listing of {part.repo}: "
                             f"{_first_line(e)}") from None
        except Exception as e:  # noqa: BLE001 - the transport's own errors: one line, never a traceback
            if _is_network_error(e):
                raise _unreachable(_hub_endpoint(), self.rel.paper, e) from None
            raise
        files = [s for s in info.siblings or [] if any(fnmatch.fnmatch(s.rfilename, p) for p in part.patterns)]
        if not files:
            raise FetchError(f"{self.rel.paper}: {part.repo} at {info.sha} has no file matching "
                             f"{', '.join(part.patterns)}")
        return str(info.sha), files

    def gated(self, part: HubFiles) -> FetchError:
        page = f"{_hub_endpoint()}/{'datasets/' if part.repo_type == 'dataset' else ''}{part.repo}"
        return FetchError(f"{self.rel.paper}: {part.repo} is gated: request access at {page} and set HF_TOKEN to a "
                          "token of that account" + ("" if self.token else " (HF_TOKEN is not set)"))

    def hub_part(self, part: HubFiles) -> None:
        sha, files = self.hub_listing(part)
        self.revisions[part.repo] = sha
        self.grow(len(files))
        todo = []
        for s in files:
            rel_path = str(Path(part.dest) / s.rfilename) if part.dest else s.rfilename
            want = s.lfs.sha256 if s.lfs else None
            done = self.journal.done(rel_path, self.files_dir / rel_path, want or s.blob_id)
            if done is not None:
                self.keep(done)
            else:
                todo.append((s, rel_path, want))
        errors = self.run_parallel(todo, lambda job: self.hub_file(part, sha, *job))
        self.raise_first(errors, _hub_endpoint())

    def hub_file(self, part: HubFiles, sha: str, sibling: Any, rel_path: str, want: str | None) -> None:
        """One hub file into ``.staging`` through the hub client's own transport (endpoint, token, proxies),
        resuming a partial file a killed fetch left there, then verified and placed."""
        from huggingface_hub import hf_hub_url
        from huggingface_hub.errors import GatedRepoError
        from huggingface_hub.file_download import http_get
        from huggingface_hub.utils import build_hf_headers

        staged = self.stage / "hub" / part.repo.replace("/", "--") / (sibling.rfilename + ".part")
        staged.parent.mkdir(parents=True, exist_ok=True)
        have = staged.stat().st_size if staged.is_file() else 0
        if sibling.size is not None and have > sibling.size:
            staged.unlink()
            have = 0
        url = hf_hub_url(part.repo, sibling.rfilename, repo_type=part.repo_type, revision=sha)
        try:
            with open(staged, "ab") as fh:
                http_get(url, fh, resume_size=have, headers=build_hf_headers(token=self.token),
                         expected_size=sibling.size, displayed_filename=sibling.rfilename)
        except GatedRepoError:
            raise self.gated(part) from None
        except Exception as e:  # noqa: BLE001 - transport errors: one line each; the partial file stays to resume
            if _is_network_error(e):
                raise _unreachable(_hub_endpoint(), self.rel.paper, e) from None
            raise FetchError(f"{self.rel.paper}: {part.repo}/{sibling.rfilename}: {_first_line(e)}") from None
        if sibling.size is not None and staged.stat().st_size != sibling.size:
            got = staged.stat().st_size
            staged.unlink(missing_ok=True)
            raise FetchError(f"{self.rel.paper}: {rel_path} has {got} bytes, the hub lists {sibling.size}; refused")
        self.keep(self.place(staged, rel_path, sha256=want, git_sha1=None if want else sibling.blob_id,
                             how="hub listing"))

    # -- files at URLs -----------------------------------------------------------------------------
    def url_parts(self, parts: list[UrlFile]) -> None:
        self.grow(len(parts))
        todo = []
        for part in parts:
            done = self.journal.done(part.dest, self.files_dir / part.dest, part.sha256)
            if done is not None:
                self.keep(done)
            else:
                todo.append(part)
        errors = self.run_parallel(todo, self.url_file)
        self.raise_first(errors, "the release's URLs")

    def url_file(self, part: UrlFile) -> None:
        staged = self.stage / "url" / (part.dest + ".part")
        self.download(mirrored(part.url), staged)
        self.keep(self.place(staged, part.dest, sha256=part.sha256, how="pinned sha256"))

    def download(self, url: str, staged: Path, *, client: Any = None) -> None:
        """GET ``url`` into ``staged``, resuming a partial file with a Range request."""
        import httpx

        staged.parent.mkdir(parents=True, exist_ok=True)
        have = staged.stat().st_size if staged.is_file() else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        own = client is None
        client = client or httpx.Client(follow_redirects=True, timeout=httpx.Timeout(60.0, connect=15.0))
        try:
            with client.stream("GET", url, headers=headers) as resp:
                if resp.status_code == 416 and have:  # the partial file is already whole
                    return
                if resp.status_code >= 400:
                    raise FetchError(f"{self.rel.paper}: {url} answered HTTP {resp.status_code}")
                mode = "ab" if resp.status_code == 206 and have else "wb"
                with open(staged, mode) as fh:
                    for block in resp.iter_bytes(CHUNK):
                        fh.write(block)
        except FetchError:
            raise
        except Exception as e:  # noqa: BLE001 - httpx's transport errors: one line
            if _is_network_error(e) or isinstance(e, OSError):
                host = re.sub(r"^([a-z]+://[^/]+).*$", r"\1", url)
                raise _unreachable(host, self.rel.paper, e) from None
            raise
        finally:
            if own:
                client.close()

    # -- images named by the records ---------------------------------------------------------------
    def record_images(self, part: RecordImages) -> None:
        """Each URL once, ``concurrency`` at a time; an image that cannot be had is counted, not raised."""
        import httpx

        from vlamb_nb.images import ImageCache

        urls = part.urls(self.files_dir)
        cache = ImageCache(self.files_dir / part.dest)
        todo = []
        for url in urls:
            hit = cache.lookup(url)
            if hit is not None:
                self.keep({"path": str(hit.relative_to(self.files_dir)), "size": hit.stat().st_size,
                           "sha256": None, "verified": "in place"})
            else:
                todo.append(url)
        self.grow(len(urls))
        failures: list[str] = []
        unreachable: list[BaseException] = []
        with httpx.Client(follow_redirects=True, timeout=httpx.Timeout(60.0, connect=15.0),
                          limits=httpx.Limits(max_connections=self.concurrency)) as client:
            def one(url: str) -> None:
                target = cache.candidates(url)[0]
                staged = self.stage / "img" / (target.name + ".part")
                try:
                    self.download(mirrored(url), staged, client=client)
                except FetchError as e:
                    if "cannot reach" in str(e):
                        unreachable.append(e)
                    failures.append(url)
                    if self.bar is not None:
                        self.bar.update(1)
                    return
                self.keep(self.place(staged, str(target.relative_to(self.files_dir)), sha256=None,
                                     how="downloaded (no published checksum)"))

            self.run_parallel(todo, one)
        if unreachable and len(unreachable) == len(todo):
            raise unreachable[0]

    # -- metric models ------------------------------------------------------------------------------
    def model(self, m: MetricModel) -> dict[str, Any]:
        """A scorer's model into the Hugging Face cache (``HF_HOME``), where the scorer will look for it."""
        from huggingface_hub import HfApi, snapshot_download

        try:
            info = HfApi(token=self.token).repo_info(m.repo, files_metadata=False)
            names = [s.rfilename for s in info.siblings or []]
            allow = list(m.allow)
            if any(n.endswith(".safetensors") for n in names):
                allow = [p for p in allow if p != "*.bin"]  # one copy of the weights
            # the default branch, so the cache's refs/main points at it and a scorer asking for the repo by name
            # finds it offline
            path = snapshot_download(m.repo, allow_patterns=allow, token=self.token)
        except Exception as e:  # noqa: BLE001 - recorded per model; the data stays usable
            return {"repo": m.repo, "why": m.why, "error": _first_line(e)}
        return {"repo": m.repo, "why": m.why, "revision": Path(path).name}

    def raise_first(self, errors: list[BaseException], what: str) -> None:
        if not errors:
            return
        for e in errors:
            if isinstance(e, VlambError):
                raise e
        e = errors[0]
        if _is_network_error(e):
            raise _unreachable(what, self.rel.paper, e)
        raise FetchError(f"{self.rel.paper}: {type(e).__name__}: {_first_line(e)}")

    # -- importing a copy ---------------------------------------------------------------------------
    def import_part(self, part: Any) -> None:
        src = self.from_path
        assert src is not None
        if isinstance(part, UrlFile):
            cand = _find_copy(src, [part.dest, Path(part.dest).name, f"data/{Path(part.dest).name}"])
            if cand is None:
                raise FetchError(f"{self.rel.paper}: {Path(part.dest).name} is not in {src}")
            done = self.journal.done(part.dest, self.files_dir / part.dest, part.sha256)
            if done is None:
                staged = self.stage / "copy" / part.dest
                staged.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(cand, staged)
                done = self.place(staged, part.dest, sha256=part.sha256, how="pinned sha256")
            self.grow(1)
            self.keep(done)
        elif isinstance(part, HubFiles):
            base, sha = _hub_copy_base(src, part)
            self.revisions[part.repo] = sha
            matched = [p for p in (sorted(base.rglob("*")) if base.is_dir() else []) if p.is_file() and ".cache" not in p.parts
                       and any(fnmatch.fnmatch(p.relative_to(base).as_posix(), pat) for pat in part.patterns)]
            if not matched and part.what == "images":
                return  # counted as missing by the release's check
            if not matched:
                raise FetchError(f"{self.rel.paper}: no file of {part.repo} matching {', '.join(part.patterns)} "
                                 f"in {src}")
            listed = _listed_hashes(src)
            for p in matched:
                name = p.relative_to(base).as_posix()
                rel_path = str(Path(part.dest) / name) if part.dest else name
                want = listed.get(rel_path)
                done = self.journal.done(rel_path, self.files_dir / rel_path, want)
                if done is None:
                    staged = self.stage / "copy" / rel_path
                    staged.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(p, staged)
                    done = self.place(staged, rel_path, sha256=want,
                                      how="the copy's manifest" if want else "counts only (imported copy)")
                self.grow(1)
                self.keep(done)
        elif isinstance(part, RecordImages):
            from vlamb_nb.images import ImageCache

            folder = _find_copy(src, [part.dest, "images"])
            if folder is None or not folder.is_dir():
                return  # counted as missing by the release's check
            there, here = ImageCache(folder), ImageCache(self.files_dir / part.dest)
            for url in part.urls(self.files_dir):
                hit = there.lookup(url)
                if hit is None or here.lookup(url) is not None:
                    continue
                target = here.candidates(url)[0]
                staged = self.stage / "copy" / target.name
                staged.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(hit, staged)
                self.grow(1)
                self.keep(self.place(staged, str(target.relative_to(self.files_dir)), sha256=None,
                                     how="imported copy"))


def _find_copy(src: Path, names: list[str]) -> Path | None:
    for n in names:
        if (src / n).exists():
            return src / n
    return None


def _hub_copy_base(src: Path, part: HubFiles) -> tuple[Path, str | None]:
    """Where a hub copy's files start, and its revision when the copy says (a cache snapshot's folder name, or
    the manifest of another data home)."""
    slug = f"{part.repo_type}s--{part.repo.replace('/', '--')}"
    for snap_root in (src / slug / "snapshots", src / "snapshots"):
        if snap_root.is_dir():
            snaps = sorted(p for p in snap_root.iterdir() if p.is_dir())
            if snaps:
                return snaps[-1], snaps[-1].name if re.fullmatch(r"[0-9a-f]{40}", snaps[-1].name) else None
    manifest = src / MANIFEST
    rev = None
    if manifest.is_file():
        try:
            rev = (json.loads(manifest.read_text(encoding="utf-8")).get("revisions") or {}).get(part.repo)
        except ValueError:
            rev = None
        base = src / "files" / part.dest if part.dest else src / "files"
        return base, rev
    if part.dest:  # a part kept in its own folder (MUCAR's images) is looked for only there
        return src / part.dest, rev
    return src, rev


def _listed_hashes(src: Path) -> dict[str, str]:
    """sha256 per file from another data home's manifest (a copy of a fetched release verifies against it)."""
    manifest = src / MANIFEST
    if not manifest.is_file():
        return {}
    try:
        files = json.loads(manifest.read_text(encoding="utf-8")).get("files") or []
    except ValueError:
        return {}
    return {f["path"]: f["sha256"] for f in files if f.get("sha256")}


# -- the public entry points ------------------------------------------------------------------------
def fetch(paper: str, *, from_path: str | os.PathLike | None = None, allow_mismatch: bool = False,
          models: bool = True, token: str | None = None, concurrency: int = 8,
          progress: bool = True) -> dict[str, Any]:
    """Fetch (or import ``from_path``) one paper's release into the data home; returns its manifest.

    Raises :class:`~vlamb_nb.errors.FetchError` with one line when something cannot be had or verified; images
    that cannot be had leave the release "incomplete" (counted, first ids shown) rather than failing.
    """
    rel = release(paper)
    token = token or os.environ.get("HF_TOKEN") or None
    src = Path(from_path).expanduser() if from_path is not None else None
    if src is not None and not src.exists():
        raise FetchError(f"{rel.paper}: --from {src}: no such file or folder")
    job = _Fetch(rel, token=token, concurrency=concurrency, progress=progress, from_path=src)
    from tqdm.auto import tqdm

    try:
        from huggingface_hub.utils import disable_progress_bars, enable_progress_bars
    except ImportError:  # pragma: no cover - huggingface_hub ships with transformers
        disable_progress_bars = enable_progress_bars = lambda: None  # noqa: E731
    disable_progress_bars()  # one bar per paper: ours
    job.bar = tqdm(total=0, desc=f"fetch {rel.paper}", unit="file", disable=not progress)
    try:
        for part in rel.parts:
            if src is not None:
                job.import_part(part)
            elif isinstance(part, HubFiles):
                job.hub_part(part)
            elif isinstance(part, UrlFile):
                job.url_parts([part])
            elif isinstance(part, RecordImages):
                job.record_images(part)
        model_rows = ([job.model(m) for m in rel.models] if models and src is None else
                      [{"repo": m.repo, "why": m.why, "error": "not fetched (--no-models)" if not models else
                        "not imported with --from: fetch it where there is network, or copy the Hugging Face cache"}
                       for m in rel.models])
    finally:
        job.bar.close()
        enable_progress_bars()
    return _finish(job, allow_mismatch=allow_mismatch, models=model_rows)


def _finish(job: _Fetch, *, allow_mismatch: bool, models: list[dict[str, Any]]) -> dict[str, Any]:
    rel = job.rel
    try:
        counts = rel.count(job.files_dir)
    except VlambError as e:
        raise FetchError(f"{rel.paper}: the fetched files cannot be read as the release: {e}") from None
    deviations = []
    diff = {k: (v, counts.get(k)) for k, v in rel.expected.items() if counts.get(k) != v}
    if diff:
        text = "; ".join(f"{k}: expected {v:,}, found {f if f is None else format(f, ',')}"
                         for k, (v, f) in diff.items())
        if not allow_mismatch:
            raise FetchError(f"{rel.paper}: the release does not have the paper's counts ({text}); pass "
                             "--allow-mismatch to use it anyway (recorded as a deviation)")
        deviations.append(f"counts differ from the paper's ({text}), accepted with --allow-mismatch")
    missing = rel.check(job.files_dir) if rel.check is not None else {}
    revision = rel.pinned_revision or next((r for r in job.revisions.values() if r), None)
    n_items = rel.n_items if not diff else int(next(iter(counts.values())))
    manifest = {
        "paper": rel.paper, "release": rel.name, "revision": revision, "revisions": job.revisions,
        "label": f"{rel.name}{'@' + revision[:7] if revision else ''} ({n_items:,} items)",
        "n_items": n_items, "licence": rel.licence, "counts": counts, "expected": rel.expected,
        "deviations": deviations, "missing": missing, "complete": not missing,
        "files": sorted(job.records, key=lambda r: r["path"]), "models": models, "load": rel.load,
        "fetched": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "how": f"imported from {job.from_path}" if job.from_path is not None else "downloaded",
        "notes": list(rel.notes),
    }
    tmp = job.root / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, job.root / MANIFEST)
    shutil.rmtree(job.stage, ignore_errors=True)
    return manifest


def status(*, verify: bool = False) -> list[dict[str, Any]]:
    """One row per paper: what is in the data home, how big, and whether it verifies.

    Without ``verify`` every recorded file is checked for presence and size; with it, every sha256 again."""
    rows = []
    for paper in RELEASES:
        root = release_dir(paper)
        row: dict[str, Any] = {"paper": paper, "state": "not fetched", "items": None, "revision": None,
                               "bytes": 0, "missing": "", "models": "", "problems": []}
        try:
            manifest = read_manifest(paper)
        except VlambError as e:
            row.update(state="damaged", problems=[str(e)])
            rows.append(row)
            continue
        if manifest is None:
            if any(p.is_file() and p.stat().st_size for d in ("files", ".staging") if (root / d).is_dir()
                   for p in (root / d).rglob("*")):
                row["state"] = "partial (no manifest: fetch again to finish)"
            rows.append(row)
            continue
        problems = []
        for f in manifest.get("files") or []:
            p = root / "files" / f["path"]
            if not p.is_file():
                problems.append(f"missing {f['path']}")
            elif p.stat().st_size != f["size"]:
                problems.append(f"{f['path']}: {p.stat().st_size} bytes, recorded {f['size']}")
            elif verify and f.get("sha256") and file_sha256(p) != f["sha256"]:
                problems.append(f"{f['path']}: sha256 differs from the manifest")
            else:
                row["bytes"] += f["size"]
        missing = manifest.get("missing") or {}
        state = "complete" if manifest.get("complete") else "incomplete"
        if manifest.get("deviations"):
            state += " (counts accepted with --allow-mismatch)"
        if problems:
            state = "damaged"
        failed_models = [m["repo"] for m in manifest.get("models") or [] if m.get("error")]
        row.update(state=state, items=manifest.get("n_items"), revision=manifest.get("revision"), problems=problems,
                   missing="; ".join(f"{v['count']} {k} (first: {', '.join(map(str, v['first']))})"
                                     for k, v in missing.items()),
                   models=("missing: " + ", ".join(failed_models)) if failed_models else
                   ("ok" if manifest.get("models") else "none needed"),
                   release=manifest.get("release"), fetched=manifest.get("fetched"))
        rows.append(row)
    return rows


def home() -> Path:
    return data_home()
