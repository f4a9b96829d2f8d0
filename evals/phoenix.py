"""Serve Arize Phoenix on loopback as the collector ``--trace otlp`` reaches with no setting.

Phoenix takes OTLP/HTTP on its web port, so on port 4318, OTLP/HTTP's default endpoint, every
``sopgraph run ... --trace otlp`` lands in it with no ``OTEL_*`` variable set. ``make phoenix``
installs Phoenix (in ``.venv-phoenix``) and runs this in the foreground; Ctrl-C stops it. The
standard library only, so Phoenix's own Python runs it.

Example:
    $ make phoenix                       # or: .venv-phoenix/bin/python evals/phoenix.py
    Phoenix: http://127.0.0.1:4318 (Ctrl-C stops it)
    send a run's trace: sopgraph run SOP --input JSON --trace otlp
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

OTLP_HTTP_PORT = 4318  # the endpoint OpenTelemetry's exporters use when nothing is set
OTLP_GRPC_PORT = 4317
STARTUP_S = 300.0  # it starts in 20-60 s on a busy 2-core machine; its first start migrates


class PhoenixError(Exception):
    """Phoenix cannot be started; ``str`` is one line saying why and what to do."""


def listening(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def phoenix_binary(given: str | None = None) -> Path:
    """``given``, else the ``phoenix`` beside this Python, on PATH, or in ``.venv-phoenix``."""
    if given:
        if not Path(given).is_file():
            raise PhoenixError(f"no Phoenix at {given}: pass the path of its `phoenix` script")
        return Path(given)
    here = Path(__file__).resolve().parent.parent
    for candidate in (
        str(Path(sys.executable).parent / "phoenix"),
        shutil.which("phoenix"),
        str(here / ".venv-phoenix" / "bin" / "phoenix"),
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    raise PhoenixError(
        "Arize Phoenix is not installed: `make phoenix` installs it in .venv-phoenix"
    )


def endpoint_hint(port: int) -> str:
    """The variable a run needs to reach Phoenix on ``port`` (none on the default port)."""
    return "" if port == OTLP_HTTP_PORT else f"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:{port} "


def start(binary: Path, port: int, workdir: Path, grpc_port: int | None = None) -> subprocess.Popen:
    """``phoenix serve`` on ``127.0.0.1:port``, offline, keeping its data in ``workdir``."""
    if listening(port):
        raise PhoenixError(
            f"port {port} on 127.0.0.1 is taken (a collector already running?): stop it, or "
            f"pass --port N and send runs with OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:N"
        )
    if grpc_port is None:  # OTLP/gRPC's default when free; it is not what --trace otlp uses
        grpc_port = int(os.environ.get("PHOENIX_GRPC_PORT") or 0) or (
            OTLP_GRPC_PORT if not listening(OTLP_GRPC_PORT) else free_port()
        )
    workdir.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    return subprocess.Popen([str(binary), "serve"], env=env)


def wait_ready(proc: subprocess.Popen, port: int, timeout: float = STARTUP_S) -> None:
    """Return once Phoenix answers its health check; raise if it exits or takes too long."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).close()
            return
        except OSError:
            if proc.poll() is not None:
                raise PhoenixError(
                    f"Phoenix exited ({proc.returncode}) before it was ready"
                ) from None
            if time.monotonic() > deadline:
                raise PhoenixError(
                    f"Phoenix did not answer on port {port} in {timeout:.0f} s"
                ) from None
            time.sleep(1)


def spans(base: str, project: str = "default", limit: int = 200) -> list[dict]:
    """The spans Phoenix at ``base`` holds for ``project``, from its REST API."""
    url = f"{base}/v1/projects/{project}/spans?limit={limit}"
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.loads(reply.read())["data"]


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("PHOENIX_PORT") or OTLP_HTTP_PORT),
        help=f"web and OTLP/HTTP port (default {OTLP_HTTP_PORT}, where --trace otlp sends)",
    )
    parser.add_argument("--phoenix", help="the `phoenix` script (default: .venv-phoenix's)")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(os.environ.get("PHOENIX_WORKING_DIR") or ".sopgraph/phoenix"),
        help="where Phoenix keeps its traces (default .sopgraph/phoenix)",
    )
    args = parser.parse_args(argv)
    # make, a terminal's Ctrl-C or a test may stop us: Phoenix stops with us
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    proc = None
    try:
        binary = phoenix_binary(args.phoenix)
        proc = start(binary, args.port, args.workdir.resolve())
        print(f"starting Arize Phoenix on 127.0.0.1:{args.port} (20-60 s)...", flush=True)
        wait_ready(proc, args.port)
        url = f"http://127.0.0.1:{args.port}"
        print(f"\nPhoenix: {url} (traces kept in {args.workdir}; Ctrl-C stops it)", flush=True)
        print(
            f"send a run's trace: {endpoint_hint(args.port)}"
            "sopgraph run SOP --input JSON --trace otlp\n",
            flush=True,
        )
        return proc.wait()
    except PhoenixError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        if proc is not None:
            stop(proc)


if __name__ == "__main__":
    sys.exit(main())
