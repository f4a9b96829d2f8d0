"""The front door (issue 27, findings 2 and 5): every command docs/getting-started.md shows runs,
in order, as written; the README stays short and opens with the two commands; the links of the
README and the docs pages lead somewhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "getting-started.md"
README = ROOT / "README.md"
# The pages this issue wrote; the others keep their own links.
PAGES = (
    "reference", "getting-started", "concepts", "sop-format", "writing-tools", "making-tools",
    "models", "serving", "benchmarks", "troubleshooting", "commands", "honest-world",
    "development", "sopbench-made",
)  # fmt: skip
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```", re.M | re.S)


def guide_steps(text: str) -> list[tuple[str, str]]:
    """The guide's steps in order: ``("sh", command)`` for each command of a ```sh block (a
    backslash continues a line; a heredoc stays with its command), ``("file", path + text)``
    for a block whose first line is ``# file: PATH`` (the user saves it there)."""
    steps: list[tuple[str, str]] = []
    for lang, body in FENCE.findall(text):
        first = body.split("\n", 1)[0]
        if first.startswith("# file: "):
            steps.append(("file", body))
            continue
        if lang != "sh":
            continue
        command, heredoc = "", None
        for line in body.splitlines():
            if heredoc is None and not command and (not line.strip() or line.startswith("#")):
                continue
            command += line + "\n"
            if heredoc is None and (m := re.search(r"<<-?\s*'?(\w+)'?", line)):
                heredoc = m[1]
                continue
            if heredoc is not None:
                if line.strip() == heredoc:
                    heredoc = None
                else:
                    continue
            if line.endswith("\\"):
                continue
            steps.append(("sh", command.rstrip("\n")))
            command = ""
    return steps


def test_the_guide_parses_into_its_commands():
    text = "```sh\n# a comment\nsopgraph init x \\\n  --y\ncd x\n```\n```sh\ncat > f <<'EOF'\na\nEOF\n```\n"
    text += "```python\n# file: x/t.py\nprint(1)\n```\n```bash\npip install .\n```\n"
    assert guide_steps(text) == [
        ("sh", "sopgraph init x \\\n  --y"),
        ("sh", "cd x"),
        ("sh", "cat > f <<'EOF'\na\nEOF"),
        ("file", "# file: x/t.py\nprint(1)\n"),
    ]


def test_every_getting_started_command_runs(tmp_path):
    """Run the guide as a new user would after installing: a fresh folder, a fresh home, the
    installed `sopgraph` (and `python`) first on the PATH. Installing itself is the ```bash
    block, which tests/shell/test_install.py covers in a fresh virtual environment."""
    steps = guide_steps(GUIDE.read_text(encoding="utf-8"))
    commands = [s for kind, s in steps if kind == "sh"]
    assert any(c.startswith("sopgraph init") for c in commands), commands
    assert any(c.startswith("sopgraph tools add") for c in commands), commands
    assert any(c.startswith("sopgraph runs list") for c in commands), commands
    env = {
        **os.environ,
        "SOPGRAPH_HOME": str(tmp_path / "home"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    env.pop("SOPGRAPH_MODEL", None)  # the guide needs no model
    cwd = tmp_path / "work"
    cwd.mkdir()
    for kind, step in steps:
        if kind == "file":
            head, body = step.split("\n", 1)
            path = cwd / head.removeprefix("# file: ").strip()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
            continue
        if step.startswith("cd ") and "&&" not in step:
            cwd = (cwd / step[3:].strip()).resolve()
            assert cwd.is_dir(), f"`{step}`: no such folder"
            continue
        done = subprocess.run(
            ["bash", "-c", step], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, (
            f"`{step}` exited {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )


def test_the_readme_is_short_and_starts_with_the_two_commands():
    data = README.read_bytes()
    assert len(data) < 12 * 1024, f"README.md is {len(data)} bytes; keep it under 12 KB"
    text = data.decode("utf-8")
    lang, first_block = FENCE.search(text).groups()
    commands = [ln.split("#")[0].strip() for ln in first_block.splitlines() if ln.strip()]
    assert (lang, commands[:2]) == ("sh", ["make demo", "make test"])
    before = text[: text.index("```")]
    assert before.count("\n") <= 3, "the two commands come first, right under the title"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


def test_links_of_the_readme_and_the_docs_pages_lead_somewhere():
    broken = []
    for page in [README, *(ROOT / "docs" / f"{p}.md" for p in PAGES)]:
        text = FENCE.sub("", page.read_text(encoding="utf-8"))
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_readme_sop_validates_and_pauses_at_its_gate(tmp_path, monkeypatch, capsys):
    """The README's SOP is the init project's, shortened and with the refund gated: it must
    still validate and run on that project's tools and data."""
    from sopgraph.cli import main

    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    project = tmp_path / "my-sop"
    assert main(["init", str(project)]) == 0
    yaml = re.search(r"```yaml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)[1]
    assert len(yaml.splitlines()) <= 32, "the README's SOP is about 30 lines"
    (project / "sop.yaml").write_text(yaml, encoding="utf-8")
    capsys.readouterr()
    case = '{"order_id": "A100", "region": "us", "timestamp": "2025-03-10T12:00:00Z"}'
    assert main(["run", str(project), "--input", case, "--checkpoint", "memory"]) == 0
    out = capsys.readouterr().out
    assert "interrupted" in out and "act_refund needs approval" in out, out
