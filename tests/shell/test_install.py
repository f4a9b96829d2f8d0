"""A library user's install: a fresh virtual environment outside the checkout, ``pip install
<checkout>``, then ``sopgraph demo`` from an empty folder. Only ``sopgraph`` lands in
site-packages (PyPI has unrelated packages named tools, nodes, graphs, evals and prompts)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def _run(args: list, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)
    assert done.returncode == 0, f"{args}: {done.stderr[-3000:]}"
    return done


def test_pip_install_then_demo_from_an_empty_folder(tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], timeout=300)
    bin_dir = venv / "bin"
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    # dependencies first, so that what sopgraph itself adds to site-packages stands out; the
    # demo's world and metric servers need the [bench] extra
    deps = project["dependencies"] + project["optional-dependencies"]["bench"]
    _run([bin_dir / "pip", "install", "-q", *deps], timeout=1800)
    before = set(os.listdir(site))
    _run([bin_dir / "pip", "install", "-q", "--no-deps", REPO], timeout=600, cwd=tmp_path)
    added = set(os.listdir(site)) - before
    assert added == {"sopgraph", f"sopgraph-{project['version']}.dist-info"}, added
    assert (site / "sopgraph" / "examples" / "fc_alarm_triage" / "sop.yaml").is_file()
    # the jail hands the child the runner's source, read from its file in the package, and the
    # selftest reads its attack corpus from the package: both must resolve installed
    sandbox = site / "sopgraph" / "nodes" / "sandbox"
    assert (sandbox / "_runner.py").is_file() and len(list((sandbox / "corpus").glob("*.py"))) > 80
    runner = _run([bin_dir / "python", "-c", "from sopgraph.nodes.sandbox import _run, selftest;"
                   " print(_run.__file__, len(_run._RUNNER), len(selftest.load_corpus()))"],
                  cwd=tmp_path, timeout=120)  # fmt: skip
    assert runner.stdout.startswith(str(sandbox)), runner.stdout

    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("SOPGRAPH_HOME", "PYTHONPATH", "VIRTUAL_ENV", "SOPGRAPH_MODEL")}  # fmt: skip
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
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
