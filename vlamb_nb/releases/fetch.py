"""Fetch a paper's release once, verified, into the data home; import a copy made elsewhere; say what is there.

A fetch asks for exactly the revisions the release declares known-good (``--revision`` takes another, recorded).
A name that moves (a branch, a tag, a short sha) is resolved once per source to the commit it names, and every file
of that source comes from that commit; a commit a server answers must be 40 hex digits, and the commit asked for
where one was (pinned, recorded, given): anything else is refused in one line, never recorded.

Hub files are listed through ``huggingface_hub`` (so ``HF_ENDPOINT``, ``HF_TOKEN`` and ``HF_HOME`` work as users
expect); every byte is downloaded by :mod:`.transfer` (retries, resume, size limits, stall timeouts, Ctrl-C) and
placed by :mod:`.folder` (one writer per paper, names kept inside, each file verified before it is visible).

A revision is fetched into its own folder and becomes current — ``manifest.json`` rewritten last — only when it
holds the release's counts and every file verified; until then the previous revision stays the one read, and
after it the previous one is removed. A release's known defects are data (:class:`~vlamb_nb.release_spec.KnownDefect`):
the items they touch are named and left out, and the release is usable. Files that cannot be had after retries (a
dead image link) leave it incomplete until the user accepts them (``accept_missing``); a later fetch retries only
those. An item left out for two reasons counts once. A fetch re-verifies what is in place (stamp, then sha256)
rather than trusting its journal, so it repairs what ``data status`` calls damaged; on a data home that cannot be
written, one that finds everything in place and recorded reports it and writes nothing.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import tarfile
import threading
import time
import zipfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlamb_nb.datahome import (
    MANIFEST,
    STAMPS,
    LeftOut,
    check_release,
    leave_out,
    read_by_another,
    read_manifest,
    release_base,
    release_dir,
    remove_unless_read,
)
from vlamb_nb.errors import FetchError, SettingError, VlambError
from vlamb_nb.release_spec import (
    GITHUB_API,
    RAW,
    GitHubFolder,
    HubFiles,
    MetricModel,
    RecordImages,
    Release,
    UrlFile,
)
from vlamb_nb.releases.catalog import release, releases
from vlamb_nb.releases.folder import (
    REVISIONS,
    Lock,
    RevisionFolder,
    copy_into,
    revision_key,
    safe_relpath,
    within,
)
from vlamb_nb.releases.transfer import (
    Failure,
    Stopped,
    Transfer,
    Want,
    host_of,
    image_problem,
    mirror_rules,
    mirrored,
    os_failure,
    run_jobs,
    scrubbed,
)

MAX_FILE = 100_000_000_000  # a file whose size no listing gives is never larger than this
NETWORK_KINDS = ("refused", "network", "timed out")

PINNED = "known-good (pinned in the release)"
GIVEN = "given with --revision"
RECORDED = "recorded at first fetch (no known-good revision yet)"
UNPINNED = "none known: the revision fetched is recorded"

COMMIT = re.compile(r"[0-9a-f]{40}")  # what a server must answer as a commit
HEXNAME = re.compile(r"[0-9a-f]{7,40}")  # a revision written as a commit (full or short) names that commit


def _github_headers() -> dict[str, str]:
    """GitHub's API headers, with ``$GITHUB_TOKEN`` where set (the unauthenticated rate limit is 60 an hour)."""
    headers = {"Accept": "application/vnd.github+json"}
    if os.environ.get("GITHUB_TOKEN"):
        headers["Authorization"] = f"Bearer {os.environ['GITHUB_TOKEN']}"
    return headers


class FetchInterrupted(FetchError):
    """Ctrl-C: the fetch stopped; what it had downloaded stays for the next fetch to resume."""


@dataclass
class Planned:
    """One file of the release: where it goes, where it comes from, and what it is checked against."""

    rel: str
    source: str  # what lists or pins it (for messages)
    how: str  # what the file was verified against ("pinned sha256", "hub listing sha256", ... or "unverified ...")
    size: int | None = None
    sha256: str | None = None
    git_sha1: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    copy: Path | None = None
    image: bool = False
    key: str | None = None  # the items key the file gives (an image URL), for what is reported missing
    limit: int = MAX_FILE
    part: Any = None  # the release part it belongs to


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return scrubbed(text[0][:300] if text else type(err).__name__)


def _hub_endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def parse_revisions(rel: Release, given: Sequence[str] | str | None) -> dict[str, str]:
    """``--revision REV`` (a release with one source) or ``--revision SOURCE=REV`` as {source: revision}."""
    if not given:
        return {}
    sources = rel.sources()
    out: dict[str, str] = {}
    for item in [given] if isinstance(given, str) else list(given):
        name, sep, rev = str(item).rpartition("=")
        if not sep:
            if len(sources) != 1:
                raise SettingError(f"{rel.paper} has {len(sources)} sources ({', '.join(sources)}): name the one "
                                   f"--revision moves, as --revision SOURCE=REV")
            name, rev = sources[0], item
        if name not in sources:
            raise SettingError(f"{rel.paper}: --revision names {name!r}, not one of its sources "
                               f"({', '.join(sources)})")
        if not re.fullmatch(r"[\w.\-/]+", rev) or ".." in rev:
            raise SettingError(f"{rel.paper}: --revision {rev!r} is not a commit, tag or branch name")
        out[name] = rev
    return out


class _Fetch:
    """One paper's fetch: plan (listings at the chosen revisions), files in place or fetched, verified, recorded."""

    def __init__(self, rel: Release, *, token: str | None, concurrency: int, progress: bool, src: Path | None,
                 revisions: dict[str, str], transfer: Transfer, stop: threading.Event) -> None:
        self.rel, self.token, self.concurrency, self.progress = rel, token, max(1, concurrency), progress
        self.src, self.given, self.transfer, self.stop = src, revisions, transfer, stop
        self.root = release_dir(rel.paper)
        self.current = _current(rel.paper)
        self.revisions: dict[str, str | None] = {}
        self.pinning: dict[str, str] = {}
        self.resolved: dict[str, str] = {}  # source -> the commit its revision named when first asked (asked once)
        self.records: dict[str, dict[str, Any]] = {}
        self.failures: dict[str, str] = {}  # items key (an image URL or id) -> why it could not be had
        self.rev: RevisionFolder | None = None
        self.bar: Any = None
        self.copy_root: Path | None = None

    # -- which revision of each source -------------------------------------------------------------
    def choose(self, source: str, pinned: str | None) -> str:
        if source in self.given:
            self.pinning[source] = GIVEN
            return self.given[source]
        if pinned:
            self.pinning[source] = PINNED
            return pinned
        before = ((self.current or {}).get("revisions") or {}).get(source)
        if isinstance(before, str) and COMMIT.fullmatch(before):  # never a name or markup an older fetch recorded
            self.pinning[source] = RECORDED
            return str(before)
        self.pinning[source] = UNPINNED
        return "main"

    # -- planning ----------------------------------------------------------------------------------
    def plan(self) -> list[Planned]:
        out: list[Planned] = []
        for part in self.rel.parts:
            if isinstance(part, RecordImages):
                continue
            if self.src is not None:
                out += self.plan_copy(part)
            elif isinstance(part, HubFiles):
                out += self.plan_hub(part)
            elif isinstance(part, UrlFile):
                out.append(self.plan_url(part))
            elif isinstance(part, GitHubFolder):
                out += self.plan_github(part)
        seen: set[str] = set()
        for p in out:
            if p.rel in seen:
                raise FetchError(f"{self.rel.paper}: two files of the release would be written to {p.rel}; refused")
            seen.add(p.rel)
        return out

    def github_commit(self, repo: str, rev: str) -> str:
        """A branch, tag or short sha of a GitHub repository as the full commit it names now, asked once per source:
        every file of that source is then fetched from that one commit, even if the branch moves during the fetch,
        and the record names the commit, not a name that moves."""
        if repo in self.resolved:
            return self.resolved[repo]
        if COMMIT.fullmatch(rev):
            self.resolved[repo] = rev
            return rev
        from urllib.parse import quote

        paper = self.rel.paper
        url = mirrored(f"{GITHUB_API}/repos/{repo}/commits/{quote(rev, safe='')}")
        headers = _github_headers()
        try:
            answer = self.transfer.json(url, headers=headers, name=f"the commit of {repo} {rev!r}")
        except Failure as e:
            if e.kind in NETWORK_KINDS:
                raise self.unreachable(host_of(url), e.kind, e) from None
            if e.kind in ("HTTP 404", "HTTP 422"):
                raise FetchError(f"{paper}: {repo} has no commit, branch or tag {rev!r} ({e.kind})") from None
            raise FetchError(f"{paper}: the commit of {repo} {rev!r}: {e}") from None
        sha = answer.get("sha") if isinstance(answer, dict) else None
        if not isinstance(sha, str) or not COMMIT.fullmatch(sha):
            raise FetchError(f"{paper}: GitHub did not name the commit {repo} {rev!r} stands for (no 40-digit sha "
                             "in its answer)")
        return self.checked(repo, rev, sha, "GitHub")

    def checked(self, source: str, asked: str, answer: Any, server: str) -> str:
        """The commit ``server`` answered for ``source`` at ``asked``, refused in one line unless it is a commit (40
        hex digits: never ``main``, None or markup) and, where ``asked`` is written as a commit (pinned, recorded,
        or a full or short sha given), that very commit; remembered, so the source is resolved once per fetch."""
        paper = self.rel.paper
        if not isinstance(answer, str) or not COMMIT.fullmatch(answer):
            shown = scrubbed(repr(answer)[:60])
            raise FetchError(f"{paper}: {server} answered {shown} as the commit of {source} at {asked!r}, not a "
                             "40-digit commit sha; refused, nothing was fetched or recorded")
        if HEXNAME.fullmatch(asked) and not answer.startswith(asked):
            how = self.pinning.get(source) or "asked for"
            raise FetchError(f"{paper}: {server} answered commit {answer[:12]} for {source} at {asked[:12]} ({how}); "
                             "refused: its files are not the ones that revision names, nothing was fetched or "
                             "recorded")
        self.resolved[source] = answer
        return answer

    def plan_url(self, part: UrlFile) -> Planned:
        source = part.source or part.url
        rev = self.choose(source, part.revision)
        if part.source and part.url.startswith(f"{RAW}/{part.source}/"):
            rev = self.github_commit(part.source, rev)
        elif not COMMIT.fullmatch(rev):  # a file by URL elsewhere: a name that moves cannot be resolved here
            if source in self.given and "{revision}" in part.url:
                raise FetchError(f"{self.rel.paper}: {source} is not on GitHub, so {rev!r} cannot be resolved to the "
                                 "commit it names; give --revision a 40-digit commit")
            self.pinning[source] = "not known: the file is fetched by its URL, with no commit to record"
        self.revisions[source] = rev if COMMIT.fullmatch(rev) else None
        same = rev == part.revision or any(rev.startswith(x) or x.startswith(rev) for x in part.identical_at)
        rel = safe_relpath(part.dest, paper=self.rel.paper, source="the release")
        if same:
            return Planned(rel, "the release", "pinned sha256", size=part.size, sha256=part.sha256,
                           url=mirrored(part.url.format(revision=rev)))
        return Planned(rel, "the release", f"unverified: sha256 recorded at first fetch, not pinned (revision {rev})",
                       sha256=self.recorded(rel, part.source, rev), url=mirrored(part.url.format(revision=rev)))

    def recorded(self, rel: str, source: str, rev: str) -> str | None:
        """The sha256 a previous fetch recorded for ``rel`` at the same revision of its source (not pinned)."""
        cur = self.current or {}
        if ((cur.get("revisions") or {}).get(source)) != rev:
            return None
        return next((f.get("sha256") for f in cur.get("files") or [] if f.get("path") == rel), None)

    def hub_listing(self, part: HubFiles, rev: str) -> tuple[str, list[Any]]:
        from huggingface_hub import HfApi
        from huggingface_hub.errors import (
            GatedRepoError,
            HfHubHTTPError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )

        paper = self.rel.paper
        for attempt in range(self.transfer.tries):
            try:
                info = HfApi(token=self.token).repo_info(part.repo, repo_type=part.repo_type, revision=rev,
                                                         files_metadata=True)
                break
            except GatedRepoError:
                raise self.gated(part) from None
            except RevisionNotFoundError:
                raise FetchError(f"{paper}: {part.repo} has no revision {rev!r} at {_hub_endpoint()}") from None
            except RepositoryNotFoundError:
                raise FetchError(f"{paper}: {part.repo} was not found at {_hub_endpoint()} (a private or gated "
                                 "repository also answers so without access: set HF_TOKEN)") from None
            except HfHubHTTPError as e:
                code = getattr(getattr(e, "response", None), "status_code", None)
                if code in (408, 429, 500, 502, 503, 504) and attempt + 1 < self.transfer.tries:
                    self.transfer.pause(self.transfer.backoff * 2 ** attempt)
                    continue
                if code is None:
                    raise self.unreachable(_hub_endpoint(), "network", e) from None
                raise FetchError(f"{paper}: the hub refused the listing of {part.repo}: HTTP {code}: "
                                 f"{_first_line(e)}") from None
            except Exception as e:  # noqa: BLE001 - the transport's own errors: one line, never a traceback
                if _is_network_error(e):
                    raise self.unreachable(_hub_endpoint(), "network", e) from None
                raise FetchError(f"{paper}: the listing of {part.repo} failed: {type(e).__name__}: "
                                 f"{_first_line(e)}") from None
        files = [s for s in info.siblings or [] if any(fnmatch.fnmatch(s.rfilename, p) for p in part.patterns)]
        sha = self.checked(part.repo, rev, info.sha, "the hub")
        if not files:
            raise FetchError(f"{paper}: {part.repo} at {sha[:12]} has no file matching {', '.join(part.patterns)}")
        return sha, files

    def plan_hub(self, part: HubFiles) -> list[Planned]:
        from huggingface_hub import hf_hub_url
        from huggingface_hub.utils import build_hf_headers

        rev = self.choose(part.repo, part.revision)
        asked = self.resolved.get(part.repo, rev)  # a second part of the same repository: the commit listed first
        sha, files = self.hub_listing(part, asked)
        self.revisions[part.repo] = sha
        headers = build_hf_headers(token=self.token)
        out = []
        source = f"the hub listing of {part.repo}"
        for s in files:
            name = safe_relpath(s.rfilename, paper=self.rel.paper, source=source)
            rel = f"{part.dest}/{name}" if part.dest else name
            want = getattr(s.lfs, "sha256", None) if s.lfs else None
            git = None if want else s.blob_id
            how = ("hub listing sha256" if want else "hub listing git object" if git else
                   "unverified: the listing gives no checksum")
            out.append(Planned(rel, source, how, size=s.size, sha256=want, git_sha1=git,
                               url=hf_hub_url(part.repo, s.rfilename, repo_type=part.repo_type, revision=sha),
                               headers=headers, image=part.what == "images",
                               key=_stem(name) if part.what == "images" else None, part=part))
        return out

    def plan_github(self, part: GitHubFolder) -> list[Planned]:
        rev = self.github_commit(part.repo, self.choose(part.repo, part.revision))
        self.revisions[part.repo] = rev
        headers = _github_headers()
        url = mirrored(f"{GITHUB_API}/repos/{part.repo}/contents/{part.path}?ref={rev}")
        source = f"the listing of {part.repo}/{part.path} at {rev[:7]}"
        try:
            listing = self.transfer.json(url, headers=headers, name=source)
        except Failure as e:
            if e.kind in NETWORK_KINDS:
                raise self.unreachable(host_of(url), e.kind, e) from None
            raise FetchError(f"{self.rel.paper}: {source}: {e}") from None
        if not isinstance(listing, list):
            raise FetchError(f"{self.rel.paper}: {source} is not a folder listing (GitHub's contents API answers a "
                             "list of entries)")
        out = []
        for entry in listing:
            if not isinstance(entry, dict) or entry.get("type") != "file":
                continue
            name = entry.get("name")
            if not isinstance(name, str) or not fnmatch.fnmatch(name, part.pattern):
                continue
            if "/" in name:
                safe_relpath("../" + name, paper=self.rel.paper, source=source)  # always refused: one line
            name = safe_relpath(name, paper=self.rel.paper, source=source)
            rel = f"{part.dest}/{name}" if part.dest else name
            size = entry.get("size") if isinstance(entry.get("size"), int) else None
            git = entry.get("sha") if isinstance(entry.get("sha"), str) and re.fullmatch(
                r"[0-9a-f]{40}", entry["sha"]) else None
            file_url = mirrored(f"{RAW}/{part.repo}/{rev}/{part.path}/{name}")
            if name in part.pinned and rev == part.revision:
                sha, pinned_size = part.pinned[name]
                out.append(Planned(rel, "the release", "pinned sha256", size=pinned_size, sha256=sha, url=file_url,
                                   headers={}))
            else:
                how = ("GitHub listing git object; sha256 recorded at first fetch, not pinned" if git else
                       "unverified: no checksum listed; sha256 recorded at first fetch, not pinned")
                out.append(Planned(rel, source, how, size=size, git_sha1=git,
                                   sha256=self.recorded(rel, part.repo, rev), url=file_url))
        return out

    # -- importing a copy ------------------------------------------------------------------------------
    def plan_copy(self, part: Any) -> list[Planned]:
        src = self.copy_root
        assert src is not None
        paper = self.rel.paper
        if isinstance(part, UrlFile):
            self.revisions[part.source or part.url] = part.revision
            self.pinning[part.source or part.url] = PINNED
            name = Path(part.dest).name
            cand = self.find(src, [part.dest, name, f"data/{name}"])
            if cand is None:
                raise FetchError(f"{paper}: {name} is not in {scrubbed(str(self.src))}")
            return [Planned(safe_relpath(part.dest, paper=paper, source="the release"), "the release",
                            "pinned sha256", size=part.size, sha256=part.sha256, copy=cand)]
        if isinstance(part, GitHubFolder):
            self.revisions[part.repo] = part.revision
            self.pinning[part.repo] = PINNED
            folder = self.find(src, [part.dest, part.path, Path(part.path).name]) if part.dest or part.path else src
            out = []
            for p in sorted(folder.glob(part.pattern)) if folder is not None and folder.is_dir() else []:
                self.inside(p)
                rel = f"{part.dest}/{p.name}" if part.dest else p.name
                if p.name in part.pinned:
                    sha, size = part.pinned[p.name]
                    out.append(Planned(rel, "the release", "pinned sha256", size=size, sha256=sha, copy=p))
                else:
                    listed = self.listed().get(rel)
                    out.append(Planned(rel, "the copy's manifest" if listed else "the copy", "the copy's manifest"
                                       if listed else "unverified: imported copy, no checksum", sha256=listed,
                                       copy=p))
            return out
        if isinstance(part, HubFiles):
            base, sha = _hub_copy_base(src, part)
            self.revisions[part.repo] = sha
            self.pinning[part.repo] = PINNED if sha and sha == part.revision else "as the imported copy says"
            matched = []
            if base.is_dir():
                for p in sorted(base.rglob("*")):
                    if ".cache" in p.relative_to(base).parts or not p.is_file():
                        continue
                    name = p.relative_to(base).as_posix()
                    if any(fnmatch.fnmatch(name, pat) for pat in part.patterns):
                        matched.append((name, p))
            if not matched and part.what != "images":
                raise FetchError(f"{paper}: no file of {part.repo} matching {', '.join(part.patterns)} in "
                                 f"{scrubbed(str(self.src))}")
            out = []
            for name, p in matched:
                self.inside(p)
                name = safe_relpath(name, paper=paper, source="the copy")
                rel = f"{part.dest}/{name}" if part.dest else name
                want, git, how = self.listed().get(rel), None, "the copy's manifest"
                blob = p.resolve()
                if want is None and p.is_symlink() and blob.parent.name == "blobs":  # a hub cache names blobs
                    want = blob.name if re.fullmatch(r"[0-9a-f]{64}", blob.name) else None
                    git = blob.name if re.fullmatch(r"[0-9a-f]{40}", blob.name) else None
                    how = "the hub cache's blob name (sha256)" if want else "the hub cache's blob name (git object)"
                if want is None and git is None:
                    how = "unverified: imported copy, no checksum (counts only)"
                out.append(Planned(rel, "the copy", how, sha256=want, git_sha1=git, copy=p,
                                   image=part.what == "images", key=_stem(name) if part.what == "images" else None))
            return out
        return []

    def find(self, src: Path, names: list[str]) -> Path | None:
        for n in names:
            p = src / n
            if p.exists() or p.is_symlink():
                self.inside(p)
                return p
        return None

    def inside(self, p: Path) -> None:
        """A file of a copy must stay inside the copy (links included); a hub cache's own links to its blobs do."""
        assert self.copy_root is not None
        root = self.copy_root.resolve()
        if root.parent.name == "snapshots":  # a snapshot folder: its links point into the repository's blobs/
            root = root.parent.parent
        if not within(p, root):
            raise FetchError(f"{self.rel.paper}: {scrubbed(str(p))} is a link out of {scrubbed(str(self.src))}; "
                             "refused, nothing was imported from outside the copy")

    def listed(self) -> dict[str, str]:
        """sha256 per file from another data home's manifest (a copy of a fetched release verifies against it)."""
        assert self.copy_root is not None
        manifest = self.copy_root / MANIFEST
        if not manifest.is_file():
            return {}
        try:
            files = json.loads(manifest.read_text(encoding="utf-8")).get("files") or []
        except (OSError, ValueError, AttributeError):
            return {}
        out = {}
        for f in files:
            if isinstance(f, dict) and f.get("sha256") and isinstance(f.get("path"), str):
                out[safe_relpath(f["path"], paper=self.rel.paper, source="the copy's manifest")] = f["sha256"]
        return out

    # -- files in place, reused, downloaded or copied ------------------------------------------------
    def ensure(self, p: Planned) -> None:
        rev = self.rev
        assert rev is not None
        entry = rev.in_place(p.rel, sha256=p.sha256, git_sha1=p.git_sha1)
        if entry is None:
            staged = rev.staged("copy" if p.copy else "get", p.rel)
            reuse = self.reusable(p)
            got = None
            if p.copy is not None:
                copy_into(p.copy, staged, link=False)
            elif reuse is not None:
                copy_into(reuse, staged, link=True)
            else:
                assert p.url is not None
                got = self.transfer.get(Want(p.url, p.rel, p.size, p.limit, p.headers), staged)
            size = staged.stat().st_size
            if p.size is not None and size != p.size:
                staged.unlink(missing_ok=True)
                raise Failure("size", f"{p.rel} has {size:,} bytes, {p.source} lists {p.size:,}; refused")
            if p.image and (problem := image_problem(staged)) is not None:
                staged.unlink(missing_ok=True)
                raise Failure("not an image", f"{p.rel}: {problem}; refused")
            entry = rev.place(staged, p.rel, sha256=p.sha256, git_sha1=p.git_sha1, how=p.how, source=p.source,
                              got=got)
        self.records[p.rel] = {"path": p.rel, "size": entry["size"], "sha256": entry["sha256"], "verified": p.how,
                               "stamp": entry.get("stamp")}
        if self.bar is not None:
            self.bar.update(1)

    def reusable(self, p: Planned) -> Path | None:
        """The same bytes in the current revision's folder (a revision moved, most files unchanged)."""
        if self.current is None or p.sha256 is None:
            return None
        try:
            base = release_base(self.rel.paper, self.current)
        except VlambError:
            return None
        rec = next((f for f in self.current.get("files") or [] if f.get("path") == p.rel), None)
        if rec is None or rec.get("sha256") != p.sha256 or base == (self.rev.base if self.rev else None):
            return None
        path = base / "files" / p.rel
        return path if path.is_file() and not path.is_symlink() and within(path, base) else None

    def run(self, planned: list[Planned], *, images: bool = False) -> list[tuple[Planned, BaseException]]:
        if self.bar is not None and planned:
            self.bar.total = (self.bar.total or 0) + len(planned)
            self.bar.refresh()
        errors = run_jobs(planned, self.ensure, concurrency=self.concurrency, stop=self.stop)
        if self.stop.is_set() or any(isinstance(e, Stopped) for _, e in errors):
            raise FetchInterrupted(f"{self.rel.paper}: stopped; what was downloaded is kept: run the same command "
                                   "again to resume")
        hard = [(p, e) for p, e in errors if not (p.image and isinstance(e, Failure) and e.kind != "gated")]
        for p, e in errors:
            if p.image and isinstance(e, Failure):
                self.failures[p.key or p.rel] = e.kind
                if self.bar is not None:
                    self.bar.update(1)
        if hard:
            self.raise_first(hard)
        if images and errors and len(errors) == len(planned):
            kinds = {e.kind for _, e in errors if isinstance(e, Failure)}
            if kinds and kinds <= set(NETWORK_KINDS):
                p, e = errors[0]
                raise self.unreachable(host_of(p.url or ""), next(iter(kinds)), e)
        return errors

    def raise_first(self, errors: list[tuple[Planned, BaseException]]) -> None:
        paper = self.rel.paper
        ordered = sorted(errors, key=lambda pe: isinstance(pe[1], Failure) and pe[1].kind in NETWORK_KINDS)
        p, e = ordered[0]
        if isinstance(e, Failure) and e.kind == "gated" and isinstance(p.part, HubFiles):
            raise self.gated(p.part) from None
        if isinstance(e, Failure):
            if e.kind in NETWORK_KINDS and all(isinstance(x, Failure) and x.kind in NETWORK_KINDS for _, x in errors):
                raise self.unreachable(host_of(p.url or ""), e.kind, e)
            raise Failure(e.kind, f"{paper}: {p.rel}: {e}") from None
        if isinstance(e, VlambError):
            raise e
        if isinstance(e, OSError):
            raise Failure("disk", f"{paper}: {p.rel}: {os_failure(e, p.rel)}") from None
        raise FetchError(f"{paper}: {p.rel}: {type(e).__name__}: {_first_line(e)}") from None

    def unreachable(self, where: str, kind: str, err: BaseException) -> FetchError:
        what = _first_line(err) if isinstance(err, Failure) else f"cannot reach {where} ({kind}: {_first_line(err)})"
        return Failure(kind, f"{self.rel.paper}: {what}; on a machine without network, fetch elsewhere and import "
                             f"with `vlamb-nb data fetch {self.rel.paper} --from PATH`")

    def gated(self, part: HubFiles) -> FetchError:
        page = f"{_hub_endpoint()}/{'datasets/' if part.repo_type == 'dataset' else ''}{part.repo}"
        return FetchError(f"{self.rel.paper}: {part.repo} is gated: request access at {page} and set HF_TOKEN to a "
                          "token of that account" + ("" if self.token else " (HF_TOKEN is not set)"))

    # -- images named by the records ---------------------------------------------------------------
    def record_images(self, part: RecordImages) -> None:
        from vlamb_nb.images import ImageCache

        assert self.rev is not None
        files = self.rev.files
        urls = self.read(part.urls, files)
        cache = ImageCache(files / part.dest)
        there = None
        if self.copy_root is not None:
            folder = self.find(self.copy_root, [part.dest, "images"])
            there = ImageCache(folder) if folder is not None and folder.is_dir() else None
        planned = []
        for url in urls:
            rel = cache.candidates(url)[0].relative_to(files).as_posix()
            if self.copy_root is not None:
                hit = there.lookup(url) if there is not None else None
                if hit is None:
                    self.failures[url] = "not in the copy"
                    continue
                self.inside(hit)
                planned.append(Planned(rel, "the copy", "unverified: imported copy, no checksum", copy=hit,
                                       image=True, key=url, limit=part.max_bytes))
            else:
                planned.append(Planned(rel, url, "unverified: no published checksum", url=mirrored(url), image=True,
                                       key=url, limit=part.max_bytes))
        self.run(planned, images=True)

    # -- counting, what is left out, the manifest --------------------------------------------------
    def read(self, fn: Any, files: Path) -> Any:
        """``fn(files)`` — the paper's own reading of the fetched files — with any failure one line."""
        try:
            return fn(files)
        except VlambError as e:
            raise FetchError(f"{self.rel.paper}: the fetched files cannot be read as the release: {e}") from None
        except (OSError, ValueError, KeyError) as e:
            raise FetchError(f"{self.rel.paper}: the fetched files cannot be read as the release: "
                             f"{type(e).__name__}: {_first_line(e)}") from None

    def left_out(self, accept_missing: bool) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
        """The release's known defects found in what was fetched, new ones of the same kind (a key that names no
        file while several could be meant: reported with its candidates, never a download to retry), the files
        that could not be had (accepted, or missing), and notes (a declared defect this revision no longer has, or
        whose keys no item uses). An item left out for two reasons is counted once, under the first."""
        rel, notes = self.rel, []
        if rel.names is None or rel.items is None:
            return [], {}, notes
        assert self.rev is not None
        files = self.rev.files
        items = self.read(rel.items, files)
        col = rel.names.column
        resolve = rel.names.resolve(files)
        keys = list(dict.fromkeys(items[col].astype(str)))
        present = set(keys)
        unresolved = [k for k in keys if resolve(k) is None]
        entries, missing = [], {}
        declared: set[str] = set()
        for d in rel.defects:
            if d.column != col:
                continue
            declared |= set(d.keys)
            hit = [k for k in unresolved if k in d.keys]
            gone = [k for k in d.keys if k in present and k not in unresolved]
            absent = [k for k in d.keys if k not in present]
            if gone:
                notes.append(f"a known defect is not in this revision: {', '.join(gone[:5])} now name a file")
            if absent:
                more = ", …" if len(absent) > 5 else ""
                notes.append(f"a known defect is not in this revision's items: {len(absent)} of its {len(d.keys)} "
                             f"{col} values ({', '.join(absent[:5])}{more}) name no item, so nothing is left out "
                             "for them")
            if hit:
                cands = {k: {c: _found(resolve(c), files) for c in d.keys[k]} for k in hit}
                entries.append(self.entry(items, "defect", f"known defect of the release: {d.why}", hit,
                                          candidates=cands))
        others = [k for k in unresolved if k not in declared]
        find = rel.names.candidates(files) if rel.names.candidates is not None and others else None
        ambiguous: dict[str, dict[str, str | None]] = {}
        for k in others if find is not None else []:
            cands = {c: _found(resolve(c), files) for c in find(k) if resolve(c) is not None}
            if len(cands) >= 2:
                ambiguous[k] = cands
        if ambiguous:
            entries.append(self.entry(items, "defect", f"new defect, not declared by the release: the {col} names "
                                      "no file, while several files could be meant; which one cannot be told",
                                      list(ambiguous), candidates=ambiguous))
            others = [k for k in others if k not in ambiguous]
        if others:
            before = {k for e in (self.current or {}).get("left_out") or [] if e.get("kind") == "missing"
                      for k in e.get("keys") or []}
            accepted = others if accept_missing else [k for k in others if k in before]
            rest = [k for k in others if k not in accepted]
            if accepted:
                entries.append(self.entry(items, "missing", f"could not be had ({_reasons(self.failures, accepted)}); "
                                          "accepted with --accept-missing", accepted))
            if rest:
                e = self.entry(items, "missing", _reasons(self.failures, rest), rest)
                missing[rel.names.what] = {"count": len(rest), "first": e["item_first"], "keys": rest,
                                           "items": e["items"], "why": e["why"]}
        if entries:  # counted together, as the paper profile leaves them out: an item counts once, under its first
            _, counted = leave_out(items, tuple(LeftOut.from_dict(e) for e in entries))
            for e, c in zip(entries, counted, strict=True):
                e["items"], e["also"] = c.items, c.also
        return entries, missing, notes

    def entry(self, items: Any, kind: str, why: str, keys: list[str], **extra: Any) -> dict[str, Any]:
        rel = self.rel
        assert rel.names is not None
        lo = LeftOut(kind=kind, why=why, column=rel.names.column, keys=tuple(keys), n_keys=len(keys),
                     first=tuple(keys[:5]), whole=rel.whole, unit=rel.unit)
        _, (counted,) = leave_out(items, (lo,))
        col = items[rel.names.column].astype(str)
        ids = items.loc[col.isin(set(keys)), rel.item_id].astype(str).tolist() if rel.item_id in items else []
        return {**counted.summary(), "keys": list(keys), "item_first": ids[:5], **extra}

    def finish(self, *, allow_mismatch: bool, accept_missing: bool, models: list[dict[str, Any]],
               how: str) -> dict[str, Any]:
        rel, rev = self.rel, self.rev
        assert rev is not None
        counts = self.read(rel.count, rev.files)
        deviations = []
        diff = {k: (v, counts.get(k)) for k, v in rel.expected.items() if counts.get(k) != v}
        if diff:
            text = "; ".join(f"{k}: expected {v:,}, found {f if f is None else format(f, ',')}"
                             for k, (v, f) in diff.items())
            if not allow_mismatch:
                raise FetchError(f"{rel.paper}: the release does not have the paper's counts ({text}); pass "
                                 "--allow-mismatch to use it anyway (recorded as a deviation)")
            deviations.append(f"counts differ from the paper's ({text}), accepted with --allow-mismatch")
        left, missing, notes = self.left_out(accept_missing)
        n_items = rel.n_items if not diff else int(next(iter(counts.values())))
        n_left = sum(int(e.get("items") or 0) + int(e.get("also") or 0) for e in left)
        sources = rel.sources()
        revision = next((self.revisions.get(s) for s in sources if self.revisions.get(s)), None)
        usable = not missing
        files = [self.records[k] for k in sorted(self.records)]
        state = ("complete" if usable and not left else
                 f"usable: {n_items - n_left:,} of {n_items:,} {rel.unit} ({n_left:,} left out)" if usable else
                 "incomplete")
        manifest = {
            "paper": rel.paper, "release": rel.name, "revision": revision, "revisions": self.revisions,
            "pinning": self.pinning, "folder": rev.folder,
            "label": f"{rel.name}{'@' + revision[:7] if revision else ''} ({n_items:,} {rel.unit})",
            "n_items": n_items, "n_usable": n_items - n_left, "unit": rel.unit, "licence": rel.licence,
            "counts": counts, "expected": dict(rel.expected), "deviations": deviations, "left_out": left,
            "missing": missing, "usable": usable, "complete": usable and not left, "state": state,
            "files": files, "models": models, "load": dict(rel.load), "fetched": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "how": how, "notes": [*rel.notes, *notes],
        }
        try:
            return self.record(manifest)
        except Failure as e:
            # a read-only data home whose release verified in place, with nothing to record that is not recorded
            if e.kind not in ("read-only", "permission denied") or not _same_record(self.current, manifest):
                raise
            manifest["current"] = True
            manifest["state"] = f"{state}; verified in place (the data home is read-only, nothing needed writing)"
            return manifest

    def record(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Write the revision's manifest, and the paper's when it becomes current (last)."""
        rev, cur = self.rev, self.current
        assert rev is not None
        _write_json(rev.base / MANIFEST, manifest)
        try:
            (rev.base / STAMPS).unlink(missing_ok=True)  # every file was verified just now; stamps start afresh
        except OSError as e:
            raise os_failure(e, str(rev.base / STAMPS)) from None
        cur_usable = bool(cur and cur.get("usable", cur.get("complete")))
        switch = manifest["usable"] or not cur_usable or (cur or {}).get("folder") == rev.folder
        manifest["current"] = switch
        if switch:
            _write_json(self.root / MANIFEST, manifest)
            self.remove_others(rev.folder, legacy=cur is not None and not cur.get("folder"))
        else:
            manifest["kept"] = str((cur or {}).get("label") or "")
        rev.clear_stage()
        return manifest

    def remove_others(self, keep: str, *, legacy: bool) -> None:
        """Other revision folders go once a revision is current (and the flat layout of older fetches); one a
        running process reads (a reproduce on the old revision) stays until a later fetch finds it free."""
        revs = self.root / REVISIONS
        for d in sorted(revs.iterdir()) if revs.is_dir() else []:
            if d.is_dir() and d.relative_to(self.root).as_posix() != keep:
                remove_unless_read(d)
        if legacy:
            for name in ("files", ".staging"):
                shutil.rmtree(self.root / name, ignore_errors=True)
            try:
                (self.root / ".journal.jsonl").unlink(missing_ok=True)
            except OSError as e:
                raise os_failure(e, str(self.root / ".journal.jsonl")) from None

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
        sha = Path(path).name
        if not COMMIT.fullmatch(sha):  # the snapshot is named by the commit the hub answered: never a name
            return {"repo": m.repo, "why": m.why, "error": f"the hub answered {scrubbed(repr(sha)[:60])} as its "
                                                           "commit, not a 40-digit commit sha; not recorded"}
        return {"repo": m.repo, "why": m.why, "revision": sha}


#: what a manifest records that a re-check must find unchanged to need no write (not when, how or the models)
RECORDED_KEYS = ("release", "revision", "revisions", "pinning", "folder", "n_items", "n_usable", "counts",
                 "deviations", "left_out", "missing", "usable", "load", "notes")


def _same_record(current: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    """Whether the current manifest already records what a fetch found: the same revision folder, files (path,
    size, sha256, what verified them) and everything else that says what the release is."""
    if not current or current.get("folder") != new.get("folder"):
        return False

    def files(m: dict[str, Any]) -> list[tuple[Any, ...]]:
        return sorted((f.get("path"), f.get("size"), f.get("sha256"), f.get("verified")) for f in m.get("files") or [])

    return files(current) == files(new) and all(
        json.dumps(current.get(k), sort_keys=True) == json.dumps(new.get(k), sort_keys=True) for k in RECORDED_KEYS)


def _stem(name: str) -> str:
    """``malay/8-1.jpg`` -> ``malay/8-1``: the key a hub image file gives."""
    p = Path(name)
    return p.with_suffix("").as_posix()


def _found(path: Path | None, files: Path) -> str | None:
    if path is None:
        return None
    try:
        return path.relative_to(files).as_posix()
    except ValueError:
        return str(path.name)


def _reasons(failures: dict[str, str], keys: list[str]) -> str:
    counts = Counter(failures.get(k, "not among the fetched files") for k in keys)
    return ", ".join(f"{why} ({n})" for why, n in counts.most_common())


def _is_network_error(err: BaseException) -> bool:
    names = {c.__name__ for c in type(err).__mro__}
    return bool(names & {"ConnectError", "ConnectTimeout", "TransportError", "TimeoutException", "ConnectionError",
                         "LocalEntryNotFoundError", "OfflineModeIsEnabled", "NetworkError", "ReadTimeout",
                         "RemoteProtocolError", "ReadError"}) or isinstance(err, ConnectionError | TimeoutError)


def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(json.dumps(obj, indent=1, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        raise os_failure(e, str(path)) from None


def _current(paper: str) -> dict[str, Any] | None:
    try:
        return read_manifest(paper)
    except VlambError:
        return None  # an unreadable manifest: fetched again from scratch


def _hub_copy_base(src: Path, part: HubFiles) -> tuple[Path, str | None]:
    """Where a hub copy's files start, and its revision when the copy says (a cache snapshot's folder name, or
    the manifest of another data home)."""
    slug = f"{part.repo_type}s--{part.repo.replace('/', '--')}"
    for snap_root in (src / slug / "snapshots", src / "snapshots"):
        if snap_root.is_dir():
            snaps = sorted(p for p in snap_root.iterdir() if p.is_dir())
            if part.revision and (snap_root / part.revision).is_dir():
                snaps = [snap_root / part.revision]
            if snaps:
                return snaps[-1], snaps[-1].name if re.fullmatch(r"[0-9a-f]{40}", snaps[-1].name) else None
    if src.parent.name == "snapshots" and re.fullmatch(r"[0-9a-f]{40}", src.name):
        return (src / part.dest if part.dest and (src / part.dest).is_dir() else src), src.name
    manifest = src / MANIFEST
    rev = None
    if manifest.is_file():
        try:
            rev = (json.loads(manifest.read_text(encoding="utf-8")).get("revisions") or {}).get(part.repo)
        except (OSError, ValueError, AttributeError):
            rev = None
        rev = rev if isinstance(rev, str) and COMMIT.fullmatch(rev) else None  # a commit, or not known
        base = src / "files" / part.dest if part.dest else src / "files"
        return base, rev
    if part.dest:  # a part kept in its own folder (MUCAR's images) is looked for only there
        return src / part.dest, rev
    return src, rev


def unpack(archive: Path, into: Path, *, paper: str) -> Path:
    """A zip or tar archive (RACQUET's Zenodo record, a copy of a data home) unpacked into ``into``: every member's
    name must stay inside, and links are refused, in one line each."""
    source = f"the archive {archive.name}"
    into.mkdir(parents=True, exist_ok=True)
    _unpack(archive, into, paper=paper, source=source)
    top = [p for p in into.iterdir()]
    return top[0] if len(top) == 1 and top[0].is_dir() else into  # an archive of one folder: that folder


def _unpack(archive: Path, into: Path, *, paper: str, source: str) -> None:
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                rel = safe_relpath(info.filename, paper=paper, source=source)
                if (info.external_attr >> 16) & 0o170000 == 0o120000:
                    raise FetchError(f"{paper}: {source} holds {rel} as a link; refused, nothing was imported")
                target = into / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as fin, open(target, "wb") as fout:
                    shutil.copyfileobj(fin, fout)
        return
    try:
        tf = tarfile.open(archive)
    except (tarfile.TarError, OSError):
        raise FetchError(f"{paper}: --from {archive.name} is neither a folder nor a zip or tar archive") from None
    with tf:
        for member in tf.getmembers():
            if member.isdir():
                continue
            rel = safe_relpath(member.name, paper=paper, source=source)
            if not member.isfile():
                raise FetchError(f"{paper}: {source} holds {rel} as a link or device; refused, nothing was imported")
            target = into / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            fin = tf.extractfile(member)
            assert fin is not None
            with fin, open(target, "wb") as fout:
                shutil.copyfileobj(fin, fout)


# -- the public entry points ------------------------------------------------------------------------
def fetch(paper: str, *, from_path: str | os.PathLike | None = None, revision: Sequence[str] | str | None = None,
          accept_missing: bool = False, allow_mismatch: bool = False, models: bool = True, token: str | None = None,
          concurrency: int = 8, progress: bool = True, stall: float | None = None, tries: int | None = None,
          backoff: float | None = None) -> dict[str, Any]:
    """Fetch (or import ``from_path``) one paper's release into the data home; returns its manifest.

    Raises :class:`~vlamb_nb.errors.FetchError` with one line when something cannot be had or verified (its class
    named: HTTP status, timed out, refused, network, disk full, read-only, too large, checksum), and
    :class:`FetchInterrupted` on Ctrl-C. Images that cannot be had leave the release incomplete (counted, first
    items named) unless ``accept_missing``; a known defect of the release leaves its items out and the release
    usable.
    """
    rel = release(paper)
    mirror_rules()  # a malformed rule is an error before anything is fetched
    given = parse_revisions(rel, revision)
    token = token or os.environ.get("HF_TOKEN") or None
    src = Path(from_path).expanduser() if from_path is not None else None
    if src is not None and not src.exists():
        raise FetchError(f"{rel.paper}: --from {scrubbed(str(src))}: no such file or folder")
    if src is not None and given:
        raise SettingError("--revision chooses what to download; a copy given with --from is imported as it is")
    stop = threading.Event()
    transfer = Transfer(stop, stall=stall, tries=tries, backoff=backoff, concurrency=concurrency)
    job = _Fetch(rel, token=token, concurrency=concurrency, progress=progress, src=src, revisions=given,
                 transfer=transfer, stop=stop)
    try:
        with Lock(rel.paper, release_dir(rel.paper)):
            return _run(job, allow_mismatch=allow_mismatch, accept_missing=accept_missing, models=models)
    except KeyboardInterrupt:
        stop.set()
        raise FetchInterrupted(f"{rel.paper}: stopped (Ctrl-C); what was downloaded is kept: run the same command "
                               "again to resume") from None
    finally:
        transfer.close()


def _run(job: _Fetch, *, allow_mismatch: bool, accept_missing: bool, models: bool) -> dict[str, Any]:
    from vlamb_nb.progress import bar

    rel, src = job.rel, job.src
    job.current = _current(rel.paper)
    unpacked = None
    if src is not None:
        if src.is_file():
            unpacked = job.root / ".import"
            shutil.rmtree(unpacked, ignore_errors=True)
            job.copy_root = unpack(src, unpacked, paper=rel.paper)
        else:
            job.copy_root = src
    try:
        from huggingface_hub.utils import disable_progress_bars, enable_progress_bars
    except ImportError:  # pragma: no cover - huggingface_hub ships with transformers
        disable_progress_bars = enable_progress_bars = lambda: None  # noqa: E731
    disable_progress_bars()  # one bar per paper: ours
    job.bar = bar(total=0, desc=f"fetch {rel.paper}", unit="file", enabled=job.progress)
    try:
        planned = job.plan()
        job.rev = RevisionFolder(rel.paper, revision_key(job.revisions))
        job.run(planned)
        for part in rel.parts:
            if isinstance(part, RecordImages):
                job.record_images(part)
        model_rows = ([job.model(m) for m in rel.models] if models and src is None else
                      [{"repo": m.repo, "why": m.why, "error": "not fetched (--no-models)" if not models else
                        "not imported with --from: fetch it where there is network, or copy the Hugging Face cache"}
                       for m in rel.models])
        how = f"imported from {scrubbed(str(src))}" if src is not None else "downloaded"
        return job.finish(allow_mismatch=allow_mismatch, accept_missing=accept_missing, models=model_rows, how=how)
    finally:
        job.bar.close()
        enable_progress_bars()
        if unpacked is not None:
            shutil.rmtree(unpacked, ignore_errors=True)


def status(*, verify: bool = False) -> list[dict[str, Any]]:
    """One row per paper: what is in the data home, how big, whether it is usable, and whether it verifies.

    Every recorded file is checked for presence and size, and its sha256 when its stamp changed; with ``verify``,
    every sha256 again. A paper that cannot be loaded gets its row, state ``broken``, its one line as its problem;
    the others are listed as usual."""
    from vlamb_nb.benchmarks import list_benchmarks

    rows = []
    broken: dict[str, Any] = {}
    declared = releases(broken=broken)
    for paper in [p for p in list_benchmarks() if p in declared or p in broken]:
        row: dict[str, Any] = {"paper": paper, "state": "not fetched", "items": None, "usable_items": None,
                               "revision": None, "pinning": {}, "bytes": 0, "missing": "", "left_out": [],
                               "unverified": 0, "recorded": 0, "models": "", "problems": [], "pending": []}
        if paper in broken:
            row.update(state="broken", problems=[f"cannot be loaded: {broken[paper].cause}"])
            rows.append(row)
            continue
        rel, root = declared[paper], release_dir(paper)
        try:
            manifest = read_manifest(paper)
        except VlambError as e:
            row.update(state="damaged", problems=[str(e)])
            rows.append(row)
            continue
        revs = root / REVISIONS
        current = (manifest or {}).get("folder")
        for d in sorted(revs.iterdir()) if revs.is_dir() else []:
            if d.is_dir() and d.relative_to(root).as_posix() != current:
                row["pending"].append(
                    f"{d.relative_to(root).as_posix()}: " + (
                        "an earlier revision a running process still reads; the next fetch removes it"
                        if read_by_another(d) else "a fetch of another revision that is not current (run "
                        "`vlamb-nb data fetch " + paper + "` to finish or replace it)"))
        if manifest is None:
            if any(p.is_file() and p.stat().st_size for p in root.rglob("*") if p.name != ".lock"):
                row["state"] = "partial (no manifest: fetch again to finish)"
            rows.append(row)
            continue
        problems = check_release(paper, manifest, full=verify)
        files = manifest.get("files") or []
        row["bytes"] = sum(int(f.get("size") or 0) for f in files)
        row["unverified"] = sum(str(f.get("verified", "")).startswith("unverified") for f in files)
        row["recorded"] = sum("recorded at first fetch" in str(f.get("verified", "")) for f in files)
        missing = manifest.get("missing") or {}
        usable = manifest.get("usable", manifest.get("complete", False))
        n, unit = manifest.get("n_items"), manifest.get("unit") or rel.unit
        n_usable = manifest.get("n_usable", n)
        if not usable:
            state = "incomplete"
        elif manifest.get("left_out"):
            state = f"usable: {n_usable:,} of {n:,} {unit}"
        else:
            state = "complete"
        if manifest.get("deviations"):
            state += " (counts accepted with --allow-mismatch)"
        if problems:
            state = f"damaged: run `vlamb-nb data fetch {paper}` to repair"
        failed_models = [m["repo"] for m in manifest.get("models") or [] if m.get("error")]
        row.update(state=state, items=n, usable_items=n_usable if usable else None, revision=manifest.get("revision"),
                   pinning=manifest.get("pinning") or {}, problems=problems,
                   left_out=[LeftOut.from_dict(e).text() for e in manifest.get("left_out") or []],
                   missing="; ".join(f"{v['count']} {k} (first: {', '.join(map(str, v['first']))})"
                                     for k, v in missing.items()),
                   models=("missing: " + ", ".join(failed_models)) if failed_models else
                   ("ok" if manifest.get("models") else "none needed"),
                   release=manifest.get("release"), fetched=manifest.get("fetched"))
        rows.append(row)
    return rows

