"""JupyterLab on the notebooks, started the way a shared GPU node needs it: as root in a container, with no
display on a cluster node, and with the one line that opens it from a laptop.

JupyterLab refuses to start as root without ``--allow-root`` and tries a browser wherever it runs; on a remote
machine neither helps. :func:`plan` decides the flags from where it runs (pure, so it is tested without a server)
and :func:`main` prints how to open the server, then becomes it (the kernel is this environment's, as its
``python3`` kernel spec says). The token is passed in the environment (``JUPYTER_TOKEN``), never on the command
line, where any user of a shared node could read it in the process list.
"""

from __future__ import annotations

import getpass
import ipaddress
import os
import secrets
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

from vlamb_nb.errors import SettingError

#: the first port tried; the next free one above it is taken
DEFAULT_PORT = 8888


@dataclass(frozen=True)
class Where:
    """What decides how the server is started and reached."""

    root: bool
    display: bool
    remote: bool
    host: str
    user: str
    scheduler: str | None = None  # "slurm", "pbs" or "lsf" on a cluster compute node

    @classmethod
    def here(cls) -> Where:
        env = os.environ
        scheduler = ("slurm" if env.get("SLURM_JOB_ID") else "pbs" if env.get("PBS_JOBID") else
                     "lsf" if env.get("LSB_JOBID") else None)
        ssh = bool(env.get("SSH_CONNECTION") or env.get("SSH_CLIENT") or env.get("SSH_TTY"))
        display = sys.platform in ("darwin", "win32") or bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))
        remote = ssh or scheduler is not None or not display  # no screen here: the browser is elsewhere
        euid = getattr(os, "geteuid", lambda: 1)()
        return cls(root=euid == 0, display=display and not remote, remote=remote,
                   host=_hostname(), user=getpass.getuser(), scheduler=scheduler)


def _hostname() -> str:
    """The name a laptop reaches this machine by: the fully qualified one unless that is only ``localhost``."""
    fqdn = socket.getfqdn()
    return socket.gethostname() if not fqdn or fqdn.startswith("localhost") else fqdn


@dataclass(frozen=True)
class Plan:
    """The server's command line, its environment additions and the lines a user reads first."""

    argv: list[str]
    env: dict[str, str]
    url: str
    lines: list[str] = field(default_factory=list)


def _version(ip: str) -> int:
    try:
        return ipaddress.ip_address(ip).version
    except ValueError:  # a host name: bound as IPv4
        return 4


def free_port(ip: str, start: int) -> int:
    """The first port from ``start`` up that ``ip`` can bind now."""
    for port in range(start, min(start + 100, 65536)):
        with socket.socket(socket.AF_INET6 if _version(ip) == 6 else socket.AF_INET) as s:
            try:
                s.bind((ip, port))
            except OSError:
                continue
            return port
    raise SettingError(f"no free port on {ip} from {start} to {start + 99}: give one with --port")


def plan(notebooks: Path, where: Where, *, port: int, ip: str = "127.0.0.1", token: str | None = None,
         python: str = sys.executable, browser: bool | None = None) -> Plan:
    """How to start JupyterLab on ``notebooks`` at ``ip:port`` from ``where``: ``--allow-root`` for root, no
    browser where there is no display or the machine is remote (``browser`` overrides), and the URL with its
    token, plus the ``ssh -L`` tunnel when the machine is not the user's own."""
    token = token or secrets.token_hex(24)
    open_browser = (where.display and not where.remote) if browser is None else browser
    argv = [python, "-m", "jupyter", "lab", f"--ServerApp.root_dir={notebooks}", f"--ServerApp.ip={ip}",
            f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            f"--ServerApp.open_browser={open_browser}"]
    if where.root:
        argv.append("--allow-root")
    shown = "127.0.0.1" if ip in ("127.0.0.1", "localhost", "0.0.0.0") else f"[{ip}]" if _version(ip) == 6 else ip
    url = f"http://{shown}:{port}/lab?token={token}"
    lines = [f"JupyterLab on {notebooks} (kernel: this environment's Python)",
             f"  open: {url}"]
    if where.remote:
        target = f"{where.user}@{where.host}"
        tunnel = f"ssh -N -L {port}:127.0.0.1:{port} {target}"
        lines.append(f"  from your laptop: {tunnel}   (then open the line above there)")
        if where.scheduler is not None:
            lines.append(f"  on a {where.scheduler} compute node reached through a login node: "
                         f"ssh -N -J {where.user}@<login-node> -L {port}:127.0.0.1:{port} {target}")
    if where.root:
        lines.append("  started as root (--allow-root), as in a container")
    lines.append("  stop: Ctrl-C twice")
    return Plan(argv=argv, env={"JUPYTER_TOKEN": token}, url=url, lines=lines)


def main(notebooks: Path, *, port: int | None = None, ip: str = "127.0.0.1", browser: bool | None = None) -> int:
    """Print how to open the server, then become it (never returns when the server starts)."""
    if not notebooks.is_dir():
        raise SettingError(f"no notebooks folder at {notebooks}")
    p = plan(notebooks.resolve(), Where.here(), port=port if port else free_port(ip, DEFAULT_PORT), ip=ip,
             browser=browser)
    print("\n".join(p.lines), flush=True)
    sys.stderr.flush()
    os.execve(p.argv[0], p.argv, {**os.environ, **p.env})
    return 0  # pragma: no cover - execve does not return
