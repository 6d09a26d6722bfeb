"""The link between a command and the running platform that holds its embedded store.

Only one process can open an embedded store, so while ``gpuledger up`` holds one, the commands
that need it (``query``, ``rollup``, ``ingest samples|billing``, ``alerts check``, ``alerts
silence add|list|expire``) run inside the platform instead (``gpuledger.remote``).

The platform announces itself in ``<store dir>/gpuledger.platform.json`` (``LINK_FILE``), beside
the ``gpuledger.owner`` file the store writes: its pid, the web address the commands use, the SQL
port, when it started, and a token made at each start. The file is readable by its user only
(0600, written to a fresh temporary name with O_EXCL and renamed over the old one, so it is never
seen half-written or with looser rights), replaced at every start and removed on a clean stop. A
file whose process is gone, or whose platform does not answer, is stale: a command then says so
in one line, and the next ``up`` replaces it.

The command sends ``POST /api/v1/cli`` with ``Authorization: Bearer <token>`` and a body of one
JSON line ``{"argv": [...], "files": [{"name": ..., "size": ...}]}`` followed by each file's
bytes (the files of ``ingest samples|billing``, read here and streamed). The answer is JSON lines
streamed as the command runs: ``{"out": text}`` (stdout), ``{"err": text}`` (stderr, progress),
then ``{"exit": status}``, with ``"error"`` when the command failed with an operator's error.
"""
from __future__ import annotations

import http.client
import json
import os
import secrets
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from base.errors import PlatformUnreachable, StoreLocked

LINK_FILE = "gpuledger.platform.json"
PATH = "/api/v1/cli"
CONNECT_TIMEOUT_S = 10
SEND_TIMEOUT_S = 60                 # for each block sent, and for the answer to start
BLOCK = 1 << 20


# ---- the file (written by the platform, read by commands) -------------------------------------

def link_path(store_dir: Path) -> Path:
    return Path(store_dir) / LINK_FILE


def write_link(store_dir: Path, web: str, sql_port: int | None) -> dict:
    """Announce this process as the store's platform; returns what was written (token included)."""
    info = {"pid": os.getpid(), "web": web, "sql_port": sql_port, "token": secrets.token_urlsafe(32),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    final = link_path(store_dir)
    temporary = final.with_name(f".{LINK_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(info, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, final)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return info


def remove_link(store_dir: Path, token: str) -> None:
    """Remove the announcement if it is still this start's (a later start may have replaced it)."""
    info = read_link(store_dir)
    if info is not None and secrets.compare_digest(str(info.get("token", "")), token):
        link_path(store_dir).unlink(missing_ok=True)


def read_link(store_dir: Path) -> dict | None:
    """The announcement, or None when there is none or it cannot be read."""
    try:
        info = json.loads(link_path(store_dir).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not {"pid", "web", "token"} <= set(info):
        return None
    return info


def holder(store_dir: Path) -> str:
    """"process N (its command, since when)" from the store's owner file, or "another process"."""
    from ingest.store import OWNER_FILE

    try:
        info = json.loads((Path(store_dir) / OWNER_FILE).read_text())
        if alive(info["pid"]):
            return f"process {info['pid']} ({info['command']}, since {info['started']})"
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return "another process"


def alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except (OSError, ValueError, TypeError):
        return False
    return True


# ---- a command through the platform -----------------------------------------------------------

def run_through_platform(store_dir: Path, args, locked: StoreLocked) -> int:
    """Run the command ``args`` (parsed; ``args.argv`` its words) in the platform holding
    ``store_dir``; print what it prints and return its exit status."""
    info = read_link(store_dir)
    if info is None or not alive(info["pid"]):
        raise StoreLocked(f"the embedded store {store_dir} is held by {holder(store_dir)}, which is not a running "
                          f"gpuledger platform (none announces itself in {link_path(store_dir)}), so this command "
                          "can neither open the store nor run through it: stop that process, or point this command "
                          "at another directory with --store") from locked
    files = args.func.files(args) if getattr(args.func, "files", None) else []
    return call(info, store_dir, list(args.argv), files)


def call(info: dict, store_dir: Path, argv: list[str], files: list[tuple[Path, str]],
         out=None, err=None) -> int:
    """``POST /api/v1/cli`` (see the module docstring); ``out`` / ``err`` write the streams."""
    out = out or _writer(sys.stdout)
    err = err or _writer(sys.stderr)
    url = urlsplit(info["web"])
    sizes = [(path, name, path.stat().st_size) for path, name in files]
    head = (json.dumps({"argv": argv, "files": [{"name": n, "size": s} for _, n, s in sizes]}) + "\n").encode()
    where = f"{info['web']} (process {info['pid']}, from {link_path(store_dir)})"
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=CONNECT_TIMEOUT_S)
    try:
        try:
            conn.putrequest("POST", PATH)
            conn.putheader("Authorization", f"Bearer {info['token']}")
            conn.putheader("Content-Type", "application/x-gpuledger-cli")
            conn.putheader("Content-Length", str(len(head) + sum(s for _, _, s in sizes)))
            conn.endheaders()
            sock = conn.sock
            sock.settimeout(SEND_TIMEOUT_S)
            conn.send(head)
            for path, _, size in sizes:
                with open(path, "rb") as handle:
                    sent = 0
                    while block := handle.read(BLOCK):
                        conn.send(block)
                        sent += len(block)
                if sent != size:
                    raise PlatformUnreachable(f"{path} changed while it was being sent; run the command again")
            response = conn.getresponse()
            sock.settimeout(None)                   # a rollup may take long between two lines
        except OSError as exc:
            raise PlatformUnreachable(
                f"the embedded store {store_dir} is held by process {info['pid']} (gpuledger up?), but its platform "
                f"does not answer at {where}: {exc.strerror or exc}. Wait for it to finish starting and try again, "
                "or stop it (its link file is then replaced at the next start)") from None
        if response.status == 401:
            raise PlatformUnreachable(f"the platform at {where} refused this command's token: the file is not "
                                      "from its current start; restart it, or run the command once it is stopped")
        if response.status != 200:
            body = response.read(2000).decode("utf-8", "replace").strip()
            raise PlatformUnreachable(f"the platform at {where} did not take the command: HTTP {response.status}"
                                      + (f": {body.splitlines()[0]}" if body else ""))
        return _relay(response, out, err, where)
    finally:
        conn.close()


def _relay(response, out, err, where: str) -> int:
    from base.errors import GpuledgerError

    for raw in response:
        if not raw.strip():
            continue
        message = json.loads(raw)
        if "out" in message:
            out(message["out"])
        if "err" in message:
            err(message["err"])
        if "exit" in message:
            if message.get("error"):
                if message["exit"] == 2:
                    raise GpuledgerError(message["error"])
                err(f"gpuledger: error: {message['error']}\n")
            return int(message["exit"])
    raise PlatformUnreachable(f"the platform at {where} stopped answering before the command finished; "
                              "what it did is in the platform's log")


def _writer(stream):
    def write(text: str) -> None:
        stream.write(text)
        stream.flush()
    return write
