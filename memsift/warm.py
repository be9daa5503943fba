"""The warm prompt server: one process per user and environment that keeps the prompt path
loaded, so a prompt does not pay for Python's imports and the models' weights each time.

A fresh hook process spends about two thirds of its wait before the first step: importing
numpy and memsift, reading the embedding model, the kind encoder and the cross-encoder. The
hook (memsift/hook.py) first asks this server over a Unix socket and prints its answer; when
no server is listening it answers that prompt itself, as it always has, and starts one in the
background once its answer is out, so a prompt never waits for the server to start.

- One per user and environment: the socket is in a private folder (0700, the user's own) and
  named by a key over the memsift environment variables, HOME, the interpreter and the
  installed code (names, sizes and times of the package's files). An upgrade or a change of
  settings in the environment makes a new key; the old server gets no more prompts and exits
  when idle. A lock file keeps a second server of the same key from starting.
- It answers with the hook's own code (memsift.hook.handle) in the environment it was started
  with; the settings file and the notes are read per prompt, as the hook reads them.
- Idle exit after MEMSIFT_WARM_IDLE_S seconds (30 minutes by default), or on `memsift warm
  stop`. A server that does not acknowledge a prompt within ACK_S, or does not answer it
  within its budget, is stopped by the hook, which then adds nothing for that prompt (or
  answers it itself while there is time) and the next prompt starts a new one.
- MEMSIFT_WARM=0 turns it off: every prompt is answered in its own process.

This module is imported by every hook process before anything heavy: the client half uses
the standard library only, and the server's imports happen in the server.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import struct
import sys
import time

SWITCH = "MEMSIFT_WARM"  # "0" (or "off", "false", "no"): no warm server
IDLE_VARIABLE = "MEMSIFT_WARM_IDLE_S"
IDLE_S = 30 * 60.0  # an idle server exits: it holds the models in memory (about 150 MB)
CONNECT_S = 0.05  # a listening server accepts at once; a stale socket refuses at once
ACK_S = 1.0  # the server acknowledges a prompt before it works on it
ANSWER_MARGIN_S = 1.0  # past the prompt's budget, the server is taken to hang
IN_PROCESS_AFTER_S = 0.3  # a failed ask this late leaves no time to answer in the hook
RESPAWN_S = 30.0  # a server that failed to start is not started again sooner
KEY_PREFIXES = ("MEMSIFT_", "OPENAI_", "TYPESAFE_", "OPENROUTER_", "COGNEE_", "XDG_")
KEY_NAMES = ("HOME", "USERPROFILE")
PROTOCOL = 1
_HEADER = struct.Struct(">II")  # the header's length and the payload's, then both
_LENGTH = struct.Struct(">I")  # a reply: its length, then its JSON
_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_CODE_SUFFIXES = (".py", ".npz", ".json", ".jsonl", ".txt", ".toml")


class WarmError(Exception):
    """The server did not answer as the protocol says."""


# --- where, and which ---------------------------------------------------------------------


def enabled(environ=None) -> bool:
    environ = os.environ if environ is None else environ
    value = environ.get(SWITCH, "1").strip().lower()
    return (value not in ("0", "off", "false", "no") and hasattr(socket, "AF_UNIX")
            and hasattr(os, "getuid"))


def code_fingerprint(package: str = _PACKAGE) -> list[tuple[str, int, int]]:
    """(path, size, mtime) of the installed code and data: any upgrade or edit changes it."""
    found = []
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in files:
            if name.endswith(_CODE_SUFFIXES):
                path = os.path.join(folder, name)
                with contextlib.suppress(OSError):
                    info = os.stat(path)
                    found.append((os.path.relpath(path, package), info.st_size,
                                  info.st_mtime_ns))
    return sorted(found)


def key_for(environ=None, package: str = _PACKAGE) -> str:
    """The server this environment and this code get: a hash over both."""
    environ = os.environ if environ is None else environ
    wanted = sorted((name, value) for name, value in environ.items()
                    if (name.startswith(KEY_PREFIXES) or name in KEY_NAMES) and name != SWITCH)
    blob = json.dumps([PROTOCOL, sys.executable, package, wanted, code_fingerprint(package)])
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def folder(environ=None) -> str | None:
    """The user's private folder for the sockets, or None when it is not safe to use (not
    ours, open to others, or a link)."""
    environ = os.environ if environ is None else environ
    base = environ.get("TMPDIR") or "/tmp"
    path = os.path.join(base, f"memsift-{os.getuid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    try:
        info = os.lstat(path)
    except OSError:
        return None
    import stat

    if (not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid()
            or info.st_mode & 0o077):
        return None
    return path


def paths(key: str, where: str) -> dict[str, str]:
    return {name: os.path.join(where, f"{key}.{name}") for name in ("sock", "lock", "pid",
                                                                    "spawned")}


# --- the hook's side ----------------------------------------------------------------------


class Client:
    """The hook's side: ask the server of this environment; when none listens, the hook
    answers and then calls start_if_none()."""

    def __init__(self) -> None:
        self.files: dict[str, str] | None = None
        self.key = ""
        self.missing = False

    def ask(self, argv: list[str], raw: bytes, started: float) -> str | None:
        """The server's answer to this hook call (what the hook prints), or None when the
        hook must answer it itself."""
        where = folder()
        if where is None:
            return None
        self.key = key_for()
        self.files = paths(self.key, where)
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.settimeout(CONNECT_S)
            try:
                conn.connect(self.files["sock"])
            except (FileNotFoundError, ConnectionRefusedError):
                self.missing = True
                return None
            except OSError:
                return None
            return _exchange(conn, argv, raw, started, self.files)
        finally:
            conn.close()

    def start_if_none(self) -> None:
        if self.missing and self.files is not None and not _listening(self.files["sock"]):
            _spawn(self.key, self.files)


def _listening(path: str) -> bool:
    """A server came up while the hook answered (one started by the prompt before)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(CONNECT_S)
        conn.connect(path)
    except OSError:
        return False
    finally:
        conn.close()
    return True


def _exchange(conn: socket.socket, argv, raw: bytes, started: float, files) -> str | None:
    header = json.dumps({"v": PROTOCOL, "op": "hook", "argv": argv,
                         "started": started}).encode()
    try:
        conn.settimeout(ACK_S)
        conn.sendall(_HEADER.pack(len(header), len(raw)) + header + raw)
        ack = _read_message(conn)
        budget = float(ack.get("budget_s", 0.0))
        left = started + budget + ANSWER_MARGIN_S - time.monotonic()
        conn.settimeout(max(0.05, left))
        reply = _read_message(conn)
    except TimeoutError:
        _stop_hung(files, "the warm server did not answer in time")
        return "" if time.monotonic() - started > IN_PROCESS_AFTER_S else None
    except (OSError, WarmError, ValueError):
        # it went away mid-prompt (stopped, crashed, replaced): the hook answers itself
        return None
    if not isinstance(reply.get("out"), str):
        return None
    return reply["out"]


def _read_message(conn: socket.socket) -> dict:
    (length,) = _LENGTH.unpack(_read_exact(conn, _LENGTH.size))
    data = json.loads(_read_exact(conn, length))
    if not isinstance(data, dict):
        raise WarmError("not an object")
    return data


def _read_exact(conn: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            raise WarmError("closed early")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _send_message(conn: socket.socket, data: dict) -> None:
    body = json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogatepass")
    conn.sendall(_LENGTH.pack(len(body)) + body)


def _spawn(key: str, files) -> None:
    """Start a server in the background, unless one was started moments ago."""
    try:
        if time.time() - os.stat(files["spawned"]).st_mtime < RESPAWN_S:
            return
    except OSError:
        pass
    try:
        with open(files["spawned"], "w", encoding="utf-8") as handle:
            handle.write(str(os.getpid()))
        import subprocess

        subprocess.Popen(
            [sys.executable, "-m", "memsift.warm", "serve", key],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            cwd="/", start_new_session=True, close_fds=True)
    except OSError as exc:
        _log("warning", "warm server not started", error=str(exc))


def _stop_hung(files, why: str) -> None:
    """Stop a server that took the prompt and did not answer it; the next prompt starts a
    new one."""
    pid = _server_pid(files)
    if pid is not None:
        import signal

        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for name in ("sock", "pid", "spawned"):
        with contextlib.suppress(OSError):
            os.unlink(files[name])
    _log("warning", why + "; it was stopped and nothing was added", pid=pid)


def _server_pid(files) -> int | None:
    """The pid in the pid file, when that process is still a warm server."""
    try:
        with open(files["pid"], encoding="utf-8") as handle:
            pid = int(handle.read().strip())
    except (OSError, ValueError):
        return None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            if b"memsift.warm" not in handle.read():
                return None
    except OSError:
        if not os.path.isdir("/proc"):
            return pid  # no /proc to check against (macOS): trust the file
        return None
    return pid


def stop(environ=None, wait_s: float = 0.0) -> bool:
    """Ask the server of this environment to exit; True when one was listening. With `wait_s`,
    wait up to that long for its process to be gone (it removes its socket and writes its last
    log line as it goes: whoever deletes its folder next must not race it)."""
    from memsift.fsutil import process_alive

    reply = _request(environ, "stop", 2.0)
    if reply is None:
        return False
    pid = reply.get("pid")
    if wait_s > 0 and isinstance(pid, int):
        deadline = time.monotonic() + wait_s
        while process_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
    return True


def status(environ=None) -> dict:
    """Whether this environment's server runs: {"enabled", "running", and when it does
    "pid", "answered", "since", "idle_s"}."""
    if not enabled(environ) or folder(environ) is None:
        return {"enabled": False, "running": False}
    reply = _request(environ, "status", 1.0)
    return {"enabled": True, "running": reply is not None, **(reply or {})}


def _request(environ, op: str, timeout_s: float) -> dict | None:
    """One request without a payload to this environment's server; None when none answers."""
    where = folder(environ)
    if where is None:
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(timeout_s)
        conn.connect(paths(key_for(environ), where)["sock"])
        header = json.dumps({"v": PROTOCOL, "op": op}).encode()
        conn.sendall(_HEADER.pack(len(header), 0) + header)
        return _read_message(conn)
    except (OSError, WarmError, ValueError):
        return None
    finally:
        conn.close()


def _log(level: str, message: str, **fields) -> None:
    with contextlib.suppress(Exception):
        from memsift.log import log

        log(level, message, **fields)


# --- the server ---------------------------------------------------------------------------


def serve(key: str) -> int:
    """Run the server for `key` until idle, stopped or replaced. Exits at once when the key
    is not this environment's, the folder is not safe, or another server holds the lock."""
    import fcntl
    import threading

    where = folder()
    if where is None or key != key_for():
        return 0
    files = paths(key, where)
    lock = open(files["lock"], "a", encoding="utf-8")  # noqa: SIM115 - held for the lifetime
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another server of this key runs or is starting
    _preload()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(files["sock"])
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(files["sock"])
    os.chmod(files["sock"], 0o600)
    listener.listen(16)
    inode = os.stat(files["sock"]).st_ino
    with open(files["pid"], "w", encoding="utf-8") as handle:
        handle.write(str(os.getpid()))
    with contextlib.suppress(OSError):
        os.unlink(files["spawned"])  # up: a crash from here on is replaced at the next prompt
    state = _State(time.time(), float(os.environ.get(IDLE_VARIABLE, IDLE_S)))
    import signal

    def stop_on_signal(number, frame) -> None:
        state.stopping = True

    signal.signal(signal.SIGTERM, stop_on_signal)  # cleaned up like an idle exit
    _log("info", "warm server started", pid=os.getpid(), key=key)
    listener.settimeout(min(1.0, state.idle_s))  # a stop request is seen within a second
    try:
        while not state.stopping:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                if _replaced(files, inode) or state.idle() or _home_gone():
                    break
                continue
            threading.Thread(target=_serve_one, args=(conn, state), daemon=True).start()
    finally:
        listener.close()
        if not _replaced(files, inode):
            # the lock file goes too, while held: a server that opened it just now and
            # takes it after us binds a socket of its own, and the older one of two
            # servers of one key sees its socket replaced and exits
            for name in ("sock", "pid", "spawned", "lock"):
                with contextlib.suppress(OSError):
                    os.unlink(files[name])
        _log("info", "warm server stopped", pid=os.getpid(), answered=state.answered)
        lock.close()
    return 0


class _State:
    def __init__(self, since: float, idle_s: float) -> None:
        self.since = since
        self.idle_s = idle_s
        self.last = since
        self.answered = 0
        self.busy = 0
        self.stopping = False
        import threading

        self.work = threading.Lock()  # one prompt at a time: they share the models
        self.counts = threading.Lock()

    def begin(self) -> None:
        with self.counts:
            self.busy += 1

    def end(self) -> None:
        with self.counts:
            self.busy -= 1
            self.last = time.time()

    def idle(self) -> bool:
        with self.counts:
            return not self.busy and time.time() - self.last >= self.idle_s


def _home_gone() -> bool:
    """MEMSIFT_HOME was removed (a replay's or a test's home): nothing is left to serve."""
    home = os.environ.get("MEMSIFT_HOME")
    return bool(home) and not os.path.isdir(os.path.expanduser(home))


def _replaced(files, inode: int) -> bool:
    """Our socket file is gone or is another server's now."""
    try:
        return os.stat(files["sock"]).st_ino != inode
    except OSError:
        return True


def _preload() -> None:
    """Import the prompt path and load the local judge's models before the first prompt."""
    try:
        import memsift.hook
        import memsift.prompt.cascade  # noqa: F401
        from memsift.judge.local import LocalJudge

        judge = LocalJudge()
        judge.kind("warm up: where did we leave the importer?")
        judge.score("warm up: where did we leave the importer?",
                    ["The importer reads the nightly export.", "Unrelated."])
    except Exception as exc:  # noqa: BLE001 - the prompts will say what is wrong
        _log("warning", "warm server could not load the local judge", error=str(exc))


def _serve_one(conn: socket.socket, state: _State) -> None:
    state.begin()
    try:
        conn.settimeout(5.0)
        first = conn.recv(_HEADER.size)
        if not first:
            return  # a hook checking that a server listens
        head = first + _read_exact(conn, _HEADER.size - len(first))
        header_len, payload_len = _HEADER.unpack(head)
        header = json.loads(_read_exact(conn, header_len))
        raw = _read_exact(conn, payload_len) if payload_len else b""
        op = header.get("op")
        if header.get("v") != PROTOCOL:
            _send_message(conn, {"error": "protocol"})
        elif op == "stop":
            state.stopping = True
            _send_message(conn, {"stopping": True, "pid": os.getpid()})
        elif op == "status":
            _send_message(conn, {"pid": os.getpid(), "answered": state.answered,
                                 "since": state.since, "idle_s": state.idle_s})
        elif op == "hook":
            _answer(conn, header, raw, state)
    except (OSError, WarmError, ValueError) as exc:
        _log("warning", "warm server dropped a request", error=str(exc))
    finally:
        state.end()
        conn.close()


def _answer(conn: socket.socket, header: dict, raw: bytes, state: _State) -> None:
    from memsift.hook import handle, prompt_budget

    argv = [str(a) for a in header.get("argv", [])]
    started = float(header.get("started", time.monotonic()))
    _send_message(conn, {"budget_s": prompt_budget()})
    conn.settimeout(None)
    with state.work:
        out = handle(argv, raw, started, warm=True)
        state.answered += 1
    _send_message(conn, {"out": out})


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "serve":
        return serve(argv[1])
    print("usage: python -m memsift.warm serve KEY", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
