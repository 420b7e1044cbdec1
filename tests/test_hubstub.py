"""The stand-in hub and static server, driven by the real huggingface_hub client and httpx (no mocks).

Why: later download tests rely on these servers behaving like the hub; these tests pin that down and
also record what huggingface_hub itself does about cut downloads and sha256 checks.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import httpx2
import hubstub
import pytest
from hubstub import StandInHub, StaticServer
from huggingface_hub import HfApi, hf_hub_download, snapshot_download
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

pytestmark = pytest.mark.timeout(30)

# the fixtures, made visible to this module (the way any test module takes them)
stand_in_hub = hubstub.stand_in_hub
static_server = hubstub.static_server

REPO = "albertotestoni/RACQUET"
SMALL = b'{"id": 1}\n'  # below the LFS threshold: a plain git file
BIG = bytes(range(256)) * 8  # 2048 bytes: stored as LFS, listed with its sha256
JSONL = b"".join(b'{"i": %d, "text": "line"}\n' % i for i in range(40))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def files() -> dict[str, bytes]:
    return {
        "README.md": SMALL,
        "data/racquet_general.jsonl": JSONL,
        "images/a.bin": BIG,
        "images/sub/b.bin": BIG[:500],
    }


def test_dataset_info_lists_siblings_with_sha256_and_sizes(stand_in_hub: StandInHub) -> None:
    repo = stand_in_hub.add_repo(REPO, files())
    info = HfApi().dataset_info(REPO, revision="main", files_metadata=True)
    assert info.sha == repo.sha and len(info.sha) == 40
    siblings = {s.rfilename: s for s in info.siblings or []}
    assert set(siblings) == set(files())
    assert siblings["README.md"].size == len(SMALL) and siblings["README.md"].lfs is None
    big = siblings["images/a.bin"]
    assert big.size == len(BIG) and big.lfs is not None
    assert big.lfs.sha256 == sha256(BIG) and big.lfs.size == len(BIG) and big.lfs.pointer_size > 0
    # the module-level functions (an HfApi built at import) follow too, and a pinned commit resolves
    import huggingface_hub

    assert huggingface_hub.dataset_info(REPO, revision=repo.sha).sha == repo.sha
    stand_in_hub.add_repo("org/tiny-model", {"config.json": b"{}"}, repo_type="model")
    assert HfApi().model_info("org/tiny-model", files_metadata=True).siblings[0].rfilename == "config.json"


def test_list_repo_tree_recursive_follows_pages(stand_in_hub: StandInHub) -> None:
    stand_in_hub.add_repo(REPO, files())
    stand_in_hub.tree_page_size = 2
    entries = list(HfApi().list_repo_tree(REPO, repo_type="dataset", recursive=True, expand=True))
    paths = {e.path for e in entries}
    assert paths == set(files()) | {"data", "images", "images/sub"}
    by_path = {e.path: e for e in entries}
    assert by_path["images/a.bin"].lfs.sha256 == sha256(BIG)
    assert by_path["images/a.bin"].last_commit is not None
    assert len(stand_in_hub.seen("GET", "/tree/main")) == 4  # 7 entries, 2 a page
    top = {e.path for e in HfApi().list_repo_tree(REPO, repo_type="dataset")}
    assert top == {"README.md", "data", "images"}
    assert {e.path for e in HfApi().list_repo_tree(REPO, "images", repo_type="dataset")} == {
        "images/a.bin",
        "images/sub",
    }


def test_hf_hub_download_to_local_dir_once(stand_in_hub: StandInHub, tmp_path: Path) -> None:
    stand_in_hub.add_repo(REPO, files())
    path = hf_hub_download(REPO, "data/racquet_general.jsonl", repo_type="dataset", local_dir=tmp_path / "d")
    assert Path(path).read_bytes() == JSONL
    again = hf_hub_download(REPO, "data/racquet_general.jsonl", repo_type="dataset", local_dir=tmp_path / "d")
    assert again == path
    assert len(stand_in_hub.file_requests("data/racquet_general.jsonl")) == 1  # the second call only HEADs
    assert len(stand_in_hub.file_requests("data/racquet_general.jsonl", "HEAD")) == 2


def test_hf_hub_download_into_the_cache(stand_in_hub: StandInHub, tmp_path: Path) -> None:
    repo = stand_in_hub.add_repo(REPO, files())
    path = Path(hf_hub_download(REPO, "images/a.bin", repo_type="dataset"))
    assert path.read_bytes() == BIG
    assert (tmp_path / "hf-home" / "hub") in path.parents and repo.sha in path.parts
    assert path.resolve().name == sha256(BIG)  # LFS blobs are stored under their sha256 ETag
    stand_in_hub.add_repo("org/unicode", {"données/ü b.txt": b"u"})
    assert Path(hf_hub_download("org/unicode", "données/ü b.txt", repo_type="dataset")).read_bytes() == b"u"


def test_cut_download_is_retried_in_the_same_call(stand_in_hub: StandInHub, tmp_path: Path) -> None:
    """A connection closed mid-body: huggingface_hub retries inside the same call (after a 1 s pause).

    It resumes from the bytes it has written, and it writes whole 10 MiB chunks: a cut inside the first
    chunk restarts from byte 0 without a Range header.
    """
    stand_in_hub.add_repo(REPO, files())
    stand_in_hub.cut_after("images/a.bin", 300)
    path = hf_hub_download(REPO, "images/a.bin", repo_type="dataset", local_dir=tmp_path / "d")
    assert Path(path).read_bytes() == BIG
    assert [r[2] for r in stand_in_hub.file_requests("images/a.bin")] == [None, None]


def test_cut_large_download_resumes_with_a_range_request(stand_in_hub: StandInHub, tmp_path: Path) -> None:
    chunk = 10 * 1024 * 1024  # huggingface_hub.constants.DOWNLOAD_CHUNK_SIZE
    large = hashlib.sha256(b"seed").digest() * ((chunk + 4096) // 32)
    stand_in_hub.add_repo(REPO, {"large.bin": large})
    stand_in_hub.cut_after("large.bin", chunk + 1000)
    path = hf_hub_download(REPO, "large.bin", repo_type="dataset", local_dir=tmp_path / "d")
    assert sha256(Path(path).read_bytes()) == sha256(large)
    assert [r[2] for r in stand_in_hub.file_requests("large.bin")] == [None, f"bytes={chunk}-"]


def test_killed_download_raises_and_the_next_call_starts_over(
    stand_in_hub: StandInHub, tmp_path: Path
) -> None:
    """A reset connection raises; the partial file is deleted, so a new call downloads from byte 0."""
    stand_in_hub.add_repo(REPO, files())
    stand_in_hub.cut_after("images/a.bin", 300, reset=True)
    # huggingface_hub 2.x talks through its own httpx fork: its errors are httpx2's, not httpx's
    with pytest.raises(httpx2.ReadError):
        hf_hub_download(REPO, "images/a.bin", repo_type="dataset", local_dir=tmp_path / "d")
    assert not (tmp_path / "d" / "images" / "a.bin").exists()
    assert not list((tmp_path / "d").rglob("*.incomplete"))
    path = hf_hub_download(REPO, "images/a.bin", repo_type="dataset", local_dir=tmp_path / "d")
    assert Path(path).read_bytes() == BIG
    assert [r[2] for r in stand_in_hub.file_requests("images/a.bin")] == [None, None]


def test_snapshot_download_fetches_only_allowed_files(stand_in_hub: StandInHub, tmp_path: Path) -> None:
    repo = stand_in_hub.add_repo(REPO, files())
    out = Path(
        snapshot_download(REPO, repo_type="dataset", allow_patterns=["images/*"], local_dir=tmp_path / "s")
    )
    got = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and ".cache" not in p.parts}
    assert got == {"images/a.bin", "images/sub/b.bin"}
    assert (out / "images/sub/b.bin").read_bytes() == BIG[:500]
    gets = [r[1] for r in stand_in_hub.seen("GET") if "/resolve/" in r[1]]
    # snapshot_download pins the commit it listed, then fetches only the matching files
    assert sorted(gets) == [
        stand_in_hub.resolve_path(REPO, f, revision=repo.sha) for f in ("images/a.bin", "images/sub/b.bin")
    ]


def test_gated_repo_needs_the_token(stand_in_hub: StandInHub, tmp_path: Path) -> None:
    stand_in_hub.add_repo("org/gated", {"x.bin": BIG}, gated=True)
    with pytest.raises(GatedRepoError) as err:
        hf_hub_download("org/gated", "x.bin", repo_type="dataset", local_dir=tmp_path / "a")
    assert err.value.response.status_code == 401
    assert err.value.response.headers["X-Error-Code"] == "GatedRepo"
    with pytest.raises(GatedRepoError):
        hf_hub_download("org/gated", "x.bin", repo_type="dataset", local_dir=tmp_path / "a", token="hf_wrong")
    path = hf_hub_download(
        "org/gated", "x.bin", repo_type="dataset", local_dir=tmp_path / "a", token=stand_in_hub.token
    )
    assert Path(path).read_bytes() == BIG
    assert HfApi().dataset_info("org/gated").gated == "auto"  # the listing stays public, as on the hub
    stand_in_hub.add_repo("org/closed", {"x.bin": BIG}, gated=True, gate_metadata=True)
    with pytest.raises(GatedRepoError):
        HfApi().dataset_info("org/closed")
    assert HfApi(token=stand_in_hub.token).dataset_info("org/closed").id == "org/closed"


def test_missing_repo_revision_and_file(stand_in_hub: StandInHub, tmp_path: Path) -> None:
    stand_in_hub.add_repo(REPO, files())
    with pytest.raises(RepositoryNotFoundError):
        HfApi().dataset_info("org/nope")
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download("org/nope", "x", repo_type="dataset", local_dir=tmp_path)
    with pytest.raises(RevisionNotFoundError):
        HfApi().dataset_info(REPO, revision="v9")
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(REPO, "nope.txt", repo_type="dataset", local_dir=tmp_path)


def test_client_checks_size_but_not_sha256(stand_in_hub: StandInHub, tmp_path: Path) -> None:
    """huggingface_hub compares the byte count with the announced size, never the content with the sha256."""
    stand_in_hub.add_repo(REPO, files())
    flipped = bytes([BIG[0] ^ 0xFF]) + BIG[1:]
    stand_in_hub.corrupt("images/a.bin", flipped)
    path = hf_hub_download(REPO, "images/a.bin", repo_type="dataset", local_dir=tmp_path / "a")
    assert Path(path).read_bytes() == flipped  # accepted silently: verify sha256 yourself
    stand_in_hub.corrupt("images/sub/b.bin", b"short")
    with pytest.raises(OSError, match="Consistency check failed"):
        hf_hub_download(REPO, "images/sub/b.bin", repo_type="dataset", local_dir=tmp_path / "a")


def test_a_subprocess_downloads_through_the_environment(stand_in_hub: StandInHub, tmp_path: Path) -> None:
    stand_in_hub.add_repo(REPO, files())
    code = (
        "import sys; from huggingface_hub import hf_hub_download as d; "
        "p = d(sys.argv[1], 'README.md', repo_type='dataset', local_dir=sys.argv[2]); "
        "print(open(p, 'rb').read().hex())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, REPO, str(tmp_path / "sub")],
        capture_output=True,
        text=True,
        timeout=20,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    assert bytes.fromhex(done.stdout.strip()) == SMALL
    assert stand_in_hub.file_requests("README.md")


def test_static_server_ranges_faults_and_404(static_server: StaticServer) -> None:
    url = static_server.add("/albertotestoni/RACQUET/11ac071/data/racquet_general.jsonl", JSONL)
    img = static_server.add("images/x y.jpg", BIG)
    with httpx.Client() as client:
        assert client.get(url).content == JSONL
        part = client.get(img, headers={"Range": "bytes=100-"})
        assert part.status_code == 206 and part.content == BIG[100:]
        assert part.headers["Content-Range"] == f"bytes 100-{len(BIG) - 1}/{len(BIG)}"
        assert client.get(img, headers={"Range": f"bytes={len(BIG)}-"}).status_code == 416
        assert client.get(static_server.url("/missing")).status_code == 404
        static_server.cut_after("images/x y.jpg", 10)
        with pytest.raises(httpx.RemoteProtocolError):
            client.get(img)
        static_server.cut_after("images/x y.jpg", 10, reset=True)
        with pytest.raises(httpx.TransportError):
            client.get(img)
        assert client.get(img).content == BIG
    assert static_server.seen("GET", "/images/x y.jpg")[0] == ("GET", "/images/x y.jpg", "bytes=100-")


def test_servers_stop_without_leaving_threads() -> None:
    before = threading.active_count()
    with StandInHub() as hub, StaticServer({"/a": b"a"}) as static:
        hub.add_repo("org/r", {"a": b"a"})
        with httpx.Client() as client:  # keep-alive connections left open on purpose
            assert client.get(static.url("/a")).content == b"a"
            assert client.head(f"{hub.endpoint}/datasets/org/r/resolve/main/a").status_code == 200
            endpoint = hub.endpoint
    assert threading.active_count() == before
    with pytest.raises(httpx.ConnectError):
        httpx.get(endpoint, timeout=2)
