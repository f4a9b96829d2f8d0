"""The core install (issue 27, finding 4): ``pip install <checkout>`` with no extra, in a fresh
virtual environment outside the checkout, then a new user's first commands from an empty
folder, exactly as ``sopgraph init`` prints them, with no file edited by hand. The extras stay
out: DSPy, langchain-aws, pandas and psycopg are not even importable there, and a command that
needs one says which in one line. Only ``sopgraph`` lands in site-packages (PyPI has unrelated
packages named tools, nodes, graphs, evals and prompts), and with the ``[bench]`` extra's
packages beside it ``sopgraph demo`` runs from an empty folder."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
EXTRAS_ONLY = ["dspy", "langchain_aws", "langchain_openai", "pandas", "psycopg", "duckdb", "numpy"]
# what a copy of the checkout leaves out: environments, caches, build leftovers, run homes, and
# the tests and docs, which are not in the package (tests/data links to /dev/zero)
SKIP = shutil.ignore_patterns(
    ".git", ".venv*", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache",
    ".sopgraph", ".langgraph_api", "tests", "docs",
)  # fmt: skip


def _run(args: list, ok: bool = True, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)
    if ok:
        assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def core(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A venv holding ``pip install <checkout>`` and pytest, nothing else; its bin and env."""
    tmp = tmp_path_factory.mktemp("core")
    # a copy, so that pip's in-tree build neither writes into the checkout nor packs its build/
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=SKIP, symlinks=True)
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", venv], timeout=120)
    # pytest beside it, in the same resolution: the init project's own test runs with it below
    _run([venv / "bin" / "pip", "install", "-q", src, "pytest"], timeout=900, cwd=tmp)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SOPGRAPH_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}  # fmt: skip
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return venv / "bin", env


def test_the_core_leaves_the_extras_out(core):
    bin_dir, env = core
    probe = "import importlib.util as u, sys; print([m for m in sys.argv[1:] if u.find_spec(m)])"
    found = _run([bin_dir / "python", "-c", probe, *EXTRAS_ONLY], env=env, timeout=60)
    assert found.stdout.strip() == "[]", f"the core install holds extras: {found.stdout}"
    assert _run([bin_dir / "python", "-c", "import langgraph, mcp, yaml"], env=env).returncode == 0


def test_init_validate_run_and_tools_add_with_the_core_alone(core, tmp_path):
    bin_dir, env = core
    sopgraph = bin_dir / "sopgraph"

    def sg(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
        return _run([sopgraph, *args], ok=ok, cwd=tmp_path, env=env, timeout=180)

    init = sg("init", "demo-sop")
    # every `sopgraph` command init tells the user to run next, as printed
    printed = [shlex.split(line.strip()) for line in init.stdout.splitlines()
               if line.strip().startswith("sopgraph ")]  # fmt: skip
    assert [c[1] for c in printed] == ["validate", "run", "tools"], init.stdout
    for command in printed:
        sg(*command[1:])
    run_cmd = next(c for c in printed if c[1] == "run")
    result = json.loads(sg(*run_cmd[1:], "--json").stdout)
    assert result["status"] == "done" and result["actions"], result
    assert "flowchart" in sg("graph", "demo-sop").stdout

    # a tool of the user's own (a copy of the spec tool), registered, listed, promoted, run
    mine = tmp_path / "my_tool.py"
    shutil.copy(tmp_path / "demo-sop/tools/ct_amount_over_limit/v1.py", mine)
    sg("tools", "add", "demo-sop", "ct_amount_over_limit", str(mine))
    sg("tools", "promote", "demo-sop", "ct_amount_over_limit", "2")
    listed = json.loads(sg("tools", "list", "demo-sop", "--json").stdout)
    active = {t["node"]: t["active"] for t in listed["tools"]}
    assert active == {"ct_amount_over_limit": 2, "obs_within_return_window": 1}, listed
    again = json.loads(sg(*run_cmd[1:], "--json").stdout)
    assert again["status"] == "done", again

    runs = sg("runs", "list")
    assert again["thread_id"] in runs.stdout, runs.stdout
    assert "ct_amount_over_limit" in sg("runs", "show", again["thread_id"]).stdout

    # the project's own test runs with the core and pytest (every labeled case and the checks)
    tested = _run([bin_dir / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                  cwd=tmp_path / "demo-sop", env=env, timeout=300)  # fmt: skip
    assert "25 passed" in tested.stdout, tested.stdout


@pytest.mark.parametrize(
    ("option", "env_add", "extra"),
    [
        ([], {"SOPGRAPH_MODEL": "openai:gpt-4o-mini", "OPENAI_API_KEY": "unused"}, "llm"),
        (["--trace", "otlp"], {}, "otlp"),
        (["--checkpoint", "postgres://localhost:1/none"], {}, "postgres"),
    ],
)
def test_a_command_that_needs_an_extra_says_which_in_one_line(
    core, tmp_path, option, env_add, extra
):
    bin_dir, env = core
    _run([bin_dir / "sopgraph", "init", "demo-sop"], cwd=tmp_path, env=env, timeout=120)
    case = '{"order_id": "A100", "region": "us", "timestamp": "2025-03-10T12:00:00Z"}'
    done = _run([bin_dir / "sopgraph", "run", "demo-sop", "--input", case, *option], ok=False,
                cwd=tmp_path, env={**env, **env_add}, timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"pip install 'sopgraph[{extra}]'" in done.stderr, done.stderr


def test_the_package_carries_every_example_file(core):
    """Every file of the checkout's examples is in the installed package (the ABCD intents and
    the enterprise data sit a level deeper than the triage SOP's files)."""
    bin_dir, env = core
    tracked = _run(["git", "ls-files", "examples"], cwd=REPO).stdout.split()
    wanted = [t.removeprefix("examples/") for t in tracked if not t.endswith(".pyc")]
    code = (
        "import json, pathlib, sys, sopgraph.examples as e; root = pathlib.Path(e.__file__).parent;"
        "print(json.dumps([w for w in json.load(sys.stdin) if not (root / w).is_file()]))"
    )
    done = _run(
        [bin_dir / "python", "-c", code], input=json.dumps(wanted), env=env, cwd=REPO.parent
    )
    assert json.loads(done.stdout) == []


def test_only_sopgraph_lands_in_site_packages(core):
    """What the install wrote, as its RECORD lists it: the package, its dist-info, its script;
    the jail's runner source and the selftest's attack corpus resolve from the package."""
    bin_dir, env = core
    venv = bin_dir.parent
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    record = (site / f"sopgraph-{version}.dist-info" / "RECORD").read_text().splitlines()
    tops = {line.split(",")[0].split("/")[0] for line in record}
    assert tops == {"sopgraph", f"sopgraph-{version}.dist-info", ".."}, tops
    outside = {line.split(",")[0] for line in record if line.startswith("..")}
    assert all(p.endswith("/bin/sopgraph") for p in outside), outside
    assert (site / "sopgraph" / "examples" / "fc_alarm_triage" / "sop.yaml").is_file()
    sandbox = site / "sopgraph" / "nodes" / "sandbox"
    assert (sandbox / "_runner.py").is_file() and len(list((sandbox / "corpus").glob("*.py"))) > 80
    runner = _run([bin_dir / "python", "-c", "from sopgraph.nodes.sandbox import _run, selftest;"
                   " print(_run.__file__, len(_run._RUNNER), len(selftest.load_corpus()))"],
                  cwd=venv.parent, env=env, timeout=120)  # fmt: skip
    assert runner.stdout.startswith(str(sandbox)), runner.stdout


def test_the_bench_extra_then_demo_from_an_empty_folder(core, tmp_path):
    """The ``[bench]`` extra's requirements, as pyproject.toml states them, installed into a
    folder of their own on the core's path (the core environment itself stays without them),
    then ``sopgraph demo`` from an empty folder: its world and metric servers need them."""
    bin_dir, env = core
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    libs = tmp_path / "bench-libs"
    _run([bin_dir / "pip", "install", "-q", "--target", libs,
          *project["optional-dependencies"]["bench"]], env=env, timeout=900)  # fmt: skip
    env = {**env, "PYTHONPATH": str(libs)}
    empty = tmp_path / "empty"
    empty.mkdir()
    sopgraph = bin_dir / "sopgraph"
    version = _run([sopgraph, "--version"], cwd=empty, env=env, timeout=60)
    assert version.stdout.strip() == f"sopgraph {project['version']}"
    helped = _run([sopgraph, "mcp", "serve", "--help"], cwd=empty, env=env, timeout=60)
    assert "{home}" not in helped.stdout and "SOPGRAPH_HOME" in helped.stdout
    demo = _run([sopgraph, "demo", "--alarms", "3"], cwd=empty, env=env, timeout=900)
    assert "match ground truth: 3/3" in demo.stdout, demo.stdout
    home = empty / ".sopgraph"
    assert (home / "reports" / "demo.html").is_file()
    assert sorted(p.name for p in home.iterdir() if p.name.startswith("fc_world")) == ["fc_world"]
