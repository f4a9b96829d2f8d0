"""Approval races: many answers to one gated action at once, through each front end, on SQLite
and Postgres; the action must execute exactly once and the answer log list every answer.

Each repetition pauses a fresh run at a ``cost: high`` gated action (``standby``, then a second
gate ``confirm``), then fires ``n`` approvals of that interrupt at once, each through a racer:
``session`` (a warm process holding a ``Session``, as the MCP server and the console do),
``cli`` (a ``sopgraph resume`` process), ``mcp`` (``resume_run`` on one of two ``sopgraph mcp
serve --transport http`` servers), ``console`` (the decision form POSTed to one of two
``sopgraph ui`` servers), or ``mix`` (racers of
every kind in turn). The action's tool appends a line per execution to a file: the figure is
read from there, not from the run's own record.

    python -m sopgraph.evals.approval_races --front mcp --racers 2 3 10 --reps 50 \\
        [--store sqlite|postgresql://...]

prints, per front and racer count, the repetitions, the executions (must equal the
repetitions), the answers logged (must be racers x repetitions) and the seconds taken.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sopgraph.nodes.ports import free_port

SOP = {
    "id": "race",
    "entry": {"default": ["check"]},
    "nodes": {
        "check": {"kind": "observation", "text": "check", "next": {"true": ["standby"]}},
        "standby": {"kind": "action", "text": "open the valve", "cost": "high",
                    "approval": "required", "next": {"true": ["confirm"]}},
        "confirm": {"kind": "action", "text": "confirm", "cost": "low", "approval": "required"},
    },
}  # fmt: skip
# the executions file: one line per execution of a gated action, written by the action itself
ACT = """import os

from sopgraph.graphs.model import Verdict


async def run(input, ctx):
    with open(os.environ["SOPGRAPH_RACE_LOG"], "a") as out:
        out.write(f"{ctx.run_id} {ctx.node_id} {ctx.idempotency_key}\\n")
    return Verdict(value=True)
"""
CHECK = "from sopgraph.graphs.model import Verdict\n\n\nasync def run(input, ctx):\n    return Verdict(value=True)\n"
FRONTS = ("session", "cli", "mcp", "console", "mix")
TOKEN = "race-" + "t" * 40


@dataclass
class World:
    """A race SOP, its store, the executions file and the environment the racers share."""

    root: Path
    store: str
    sop: Path = field(init=False)
    log: Path = field(init=False)
    env: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        from sopgraph.tools.registry import Registry

        self.sop = self.root / "sops" / "race"
        self.sop.mkdir(parents=True, exist_ok=True)
        (self.sop / "sop.yaml").write_text(yaml.safe_dump(SOP, sort_keys=False))
        reg = Registry(self.sop / "tools", sop_id="race")
        reg.add_version("check", CHECK, author="human", activate=True)
        for node in ("standby", "confirm"):
            reg.add_version(node, ACT, author="human", activate=True)
        self.log = self.root / "executions"
        self.log.touch()
        tokens = self.root / "tokens"
        tokens.write_text(f"racer {TOKEN}\n")
        tokens.chmod(0o600)
        drop = ("SOPGRAPH_MODEL", "SOPGRAPH_MCP_TOKENS")
        self.env = {k: v for k, v in os.environ.items() if k not in drop}
        self.env.update(
            SOPGRAPH_HOME=str(self.root / "home"), SOPGRAPH_RACE_LOG=str(self.log),
            SOPGRAPH_SOPS=str(self.root / "sops"), PYTHONUNBUFFERED="1",
        )  # fmt: skip
        os.environ["SOPGRAPH_RACE_LOG"] = str(self.log)  # the parent's own session

    def executions(self, thread_id: str) -> int:
        lines = self.log.read_text().splitlines()
        return sum(1 for line in lines if line.split()[:2] == [thread_id, "standby"])

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "sopgraph", *args]


async def _spawn(world: World, *args: str, **kw: Any) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *args, env=world.env, stdin=kw.pop("stdin", asyncio.subprocess.DEVNULL),
        stdout=kw.pop("stdout", asyncio.subprocess.PIPE), stderr=asyncio.subprocess.DEVNULL, **kw,
    )  # fmt: skip


async def _drain(stream: asyncio.StreamReader) -> None:
    """Read a server's output to its end, so it never blocks on a full pipe."""
    while await stream.read(65536):
        pass


class SessionRacer:
    """A warm process holding a ``Session`` on the store; answers one line at a time."""

    def __init__(self, world: World):
        self.world = world

    async def start(self) -> None:
        self.proc = await _spawn(
            self.world, sys.executable, "-m", "sopgraph.evals.approval_races", "worker",
            str(self.world.sop), self.world.store, stdin=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert json.loads(await self.proc.stdout.readline()) == {"ready": True}

    async def answer(self, thread: str, interrupt: str, node: str, who: str) -> bool:
        self.proc.stdin.write((json.dumps([thread, interrupt, who]) + "\n").encode())
        await self.proc.stdin.drain()
        return json.loads(await self.proc.stdout.readline())["won"]

    async def close(self) -> None:
        self.proc.stdin.close()
        await self.proc.wait()


class CliRacer:
    """A ``sopgraph resume`` process per answer (exit 0: it drove the run)."""

    def __init__(self, world: World):
        self.world = world

    async def start(self) -> None:
        pass

    async def answer(self, thread: str, interrupt: str, node: str, who: str) -> bool:
        proc = await _spawn(
            self.world, *self.world.command(
                "resume", str(self.world.sop), "--thread", thread, "--interrupt", interrupt,
                "--decision", "approve", "--checkpoint", self.world.store),
        )  # fmt: skip
        await proc.communicate()
        return proc.returncode == 0

    async def close(self) -> None:
        pass


class _Served:
    """A racer through one of two servers, started by the first racer of each."""

    servers: dict[int, Any]

    @classmethod
    async def close_all(cls) -> None:
        for proc, _ in cls.servers.values():
            proc.terminate()
            await proc.wait()
        cls.servers.clear()


class McpRacer(_Served):
    """``resume_run`` over HTTP on a ``sopgraph mcp serve`` server (shared by its racers)."""

    servers: dict[int, Any] = {}

    def __init__(self, world: World, index: int):
        self.world, self.index = world, index % 2

    async def start(self) -> None:
        if self.index not in self.servers:
            port = free_port()
            proc = await _spawn(
                self.world, *self.world.command(
                    "mcp", "serve", "--transport", "http", "--port", str(port), "--tokens",
                    str(self.world.root / "tokens"), "--checkpoint", self.world.store),
                stdout=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
            await _listening(port, proc)
            self.servers[self.index] = (proc, f"http://127.0.0.1:{port}/mcp")
        self.url = self.servers[self.index][1]

    async def answer(self, thread: str, interrupt: str, node: str, who: str) -> bool:
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        from sopgraph.mcp_servers.server_auth import bearer_client

        async with bearer_client(TOKEN) as http, streamable_http_client(
            self.url, http_client=http
        ) as (read, write, _), ClientSession(read, write) as s:  # fmt: skip
            await s.initialize()
            args = {"run_id": thread, "decision": "approve", "interrupt_id": interrupt}
            got = await s.call_tool("resume_run", args)
            if os.environ.get("RACE_DEBUG"):
                print(got.content, file=sys.stderr)
            return not got.isError

    async def close(self) -> None:
        pass


class ConsoleRacer(_Served):
    """The console's decision form, POSTed by a logged-in browser session of its own to one of
    two ``sopgraph ui`` servers."""

    servers: dict[int, Any] = {}
    drains: list[asyncio.Task] = []

    def __init__(self, world: World, index: int):
        self.world, self.index = world, index % 2

    async def start(self) -> None:
        import httpx

        if self.index not in self.servers:
            proc = await _spawn(
                self.world, *self.world.command(
                    "ui", "--port", "0", "--tokens", str(self.world.root / "tokens"),
                    "--checkpoint", self.world.store),
            )  # fmt: skip
            line = (await proc.stdout.readline()).decode()
            m = re.match(r"sopgraph console: (http://127\.0\.0\.1:\d+)/", line)
            assert m, f"the console did not start: {line!r}"
            self.servers[self.index] = (proc, m[1])
            self.drains.append(asyncio.create_task(_drain(proc.stdout)))
        # a fresh connection per answer: a kept-alive one idle past uvicorn's 5 s keep-alive
        # (a mixed repetition waits on CLI racers) can be closed as the next answer is sent
        self.client = httpx.AsyncClient(
            base_url=self.servers[self.index][1], timeout=120,
            limits=httpx.Limits(max_keepalive_connections=0),
        )  # fmt: skip
        await self.client.post("/login", data={"token": TOKEN, "next": "/"})
        self.csrf = re.search(r"name=csrf value='([^']+)'", (await self.client.get("/")).text)[1]

    async def answer(self, thread: str, interrupt: str, node: str, who: str) -> bool:
        form = {"csrf": self.csrf, "decision": "approve", "interrupt": interrupt, "node": node}
        return (await self.client.post(f"/runs/{thread}/decision", data=form)).status_code == 303

    async def close(self) -> None:
        await self.client.aclose()


async def _listening(port: int, proc: asyncio.subprocess.Process) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.returncode is None, "the MCP server exited at start"
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.1)
    raise TimeoutError("the MCP server never listened")


def racers(world: World, front: str, n: int) -> list[Any]:
    kinds = ["session", "cli", "mcp", "console"] if front == "mix" else [front]
    made: list[Any] = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        if kind == "session":
            made.append(SessionRacer(world))
        elif kind == "cli":
            made.append(CliRacer(world))
        elif kind == "mcp":
            made.append(McpRacer(world, i))
        else:
            made.append(ConsoleRacer(world, i))
    return made


@dataclass
class Tally:
    front: str
    racers: int
    reps: int = 0
    executions: int = 0
    won: int = 0
    logged: int = 0
    seconds: float = 0.0
    bad: list[str] = field(default_factory=list)

    def line(self) -> str:
        ok = "ok" if not self.bad else f"FAILED: {'; '.join(self.bad[:3])}"
        return (
            f"{self.front:<8} racers {self.racers:>2}  reps {self.reps:>3}  executions "
            f"{self.executions:>3}  answers won {self.won:>3}  answers logged {self.logged:>4}  "
            f"{self.seconds:6.1f} s  {ok}"
        )


async def race(world: World, front: str, n: int, reps: int) -> Tally:
    """``reps`` repetitions of ``n`` simultaneous approvals of one interrupt through ``front``."""
    from sopgraph.runtime.runner import Session, new_thread_id

    tally = Tally(front, n)
    crowd = racers(world, front, n)
    for r in crowd:
        await r.start()
    started = time.monotonic()
    try:
        async with Session(world.sop, checkpoint=world.store) as s:
            for rep in range(reps):
                # the MCP server's run ids are ``<sop_id>:<thread_id>``: every front can name it
                paused = await s.run({}, thread_id=f"race:{new_thread_id()}")
                gate = paused.interrupts[0]
                won = await asyncio.gather(*[
                    r.answer(paused.thread_id, gate["id"], gate["node"], f"racer{i}")
                    for i, r in enumerate(crowd)
                ])  # fmt: skip
                executed = world.executions(paused.thread_id)
                logged = len(await s.answers_of(paused.thread_id))
                tally.reps, tally.executions = tally.reps + 1, tally.executions + executed
                tally.won, tally.logged = tally.won + sum(won), tally.logged + logged
                if executed != 1 or sum(won) != 1 or logged != n:
                    tally.bad.append(
                        f"rep {rep}: executed {executed}, won {sum(won)}, logged {logged}"
                    )
    finally:
        for r in crowd:
            await r.close()
        await McpRacer.close_all()
        await ConsoleRacer.close_all()
    tally.seconds = time.monotonic() - started
    return tally


async def _worker(sop: str, store: str) -> None:
    """The ``session`` racer's process: a line ``[thread, interrupt, who]`` in, ``{"won"}`` out."""
    from sopgraph.graphs.input_schema import InputError
    from sopgraph.runtime.runner import Session

    loop = asyncio.get_running_loop()
    async with Session(sop, checkpoint=store) as s:
        print(json.dumps({"ready": True}), flush=True)
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            thread, interrupt, who = json.loads(line)
            try:
                await s.resume(thread, "approve", interrupt_id=interrupt, approver=who)
                won = True
            except InputError:
                won = False
            print(json.dumps({"won": won}), flush=True)


async def _main(args: argparse.Namespace) -> int:
    root = Path(tempfile.mkdtemp(prefix="sopgraph-races-"))
    try:
        store = args.store if args.store != "sqlite" else str(root / "checkpoints.sqlite")
        world = World(root, store)
        tallies = []
        for front in args.front:
            for n in args.racers:
                tally = await race(world, front, n, args.reps)
                print(tally.line(), flush=True)
                tallies.append(tally)
        return 0 if all(not t.bad for t in tallies) else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:2] == ["worker"]:
        asyncio.run(_worker(sys.argv[2], sys.argv[3]))
        return 0
    p = argparse.ArgumentParser(
        prog="python -m sopgraph.evals.approval_races", description=__doc__.splitlines()[0]
    )
    p.add_argument("--front", nargs="+", choices=FRONTS, default=["session"])
    p.add_argument("--racers", nargs="+", type=int, default=[2, 3, 10])
    p.add_argument("--reps", type=int, default=50)
    p.add_argument(
        "--store", default="sqlite", help="sqlite (a file made for the run) or a postgres:// URL"
    )
    return asyncio.run(_main(p.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
