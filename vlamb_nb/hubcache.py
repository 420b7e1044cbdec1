"""Is a metric model's hub repository usable here: in the local Hugging Face cache, or reachable now.

A scorer that names a hub model (BERTScore's roberta-large, the V-FLUTE paper scorer's deberta, Grounding DINO)
would otherwise leave transformers to retry the hub for about a minute on a machine without network before it
fails; this answers in at most a few seconds, in one line that says what to do.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from vlamb_nb.errors import NotAvailableError

#: seconds to wait for the hub's host to accept a connection
CONNECT_TIMEOUT = 3.0


def cached(repo_id: str, filename: str = "config.json") -> bool:
    """``repo_id`` (or a local folder) has ``filename`` on this machine."""
    if os.path.isdir(repo_id):
        return True
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    return isinstance(try_to_load_from_cache(repo_id, filename), str)


def hub_reachable(timeout: float = CONNECT_TIMEOUT) -> str | None:
    """None when the hub (``HF_ENDPOINT``, default huggingface.co) accepts a connection now, else why not."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE is set"
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "", url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as e:
        return f"{url.scheme}://{host}:{port} cannot be reached ({type(e).__name__})"


def require_model(repo_id: str, *, what: str, instead: str = "") -> None:
    """Refuse at once, in one line, a hub model that is neither cached nor reachable (``instead``: what to use)."""
    if cached(repo_id) or Path(repo_id).expanduser().is_absolute():
        return
    why = hub_reachable()
    if why is None:
        return
    raise NotAvailableError(f"{what} {repo_id!r} is not in the local Hugging Face cache and {why}: on a machine "
                            f"with network run `huggingface-cli download {repo_id}` (or `vlamb-nb data fetch`)"
                            + (f"; {instead}" if instead else ""))
