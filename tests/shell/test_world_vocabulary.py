"""No example world's vocabulary in the package (issue 52): the executors, prompts and tools are
the framework, and a word of one example world (a station, an alarm, a refund) in them means
the framework was fitted to that world instead of reading the SOP it is given.

A world is a folder of examples/ with SOPs (its ``**/sop.yaml``). Its words are read from
them: the words (lowercase, four letters or more) of the SOP's id, title, parameters, input
fields and entry names, and of each node's id, title, text, data hints and `when` outcomes,
less those any other world's SOP uses too and less STOPWORDS (English, and the framework's own
words that an SOP happens to use). Each world word is counted, as a whole word with
identifiers split on `_` and `.`, in the Python files of nodes/, prompts/ and tools/ and in
the prompt templates (prompts/**/*.md).

The modules that hold world words today are listed in WAITING, each with its counts, and may
only lose them. A count that has come down must be lowered in the list (the failing test
prints the lines to paste), so the list says what is left.
"""

from __future__ import annotations

import builtins
import json
import keyword
import re
from collections import Counter
from pathlib import Path

from package_files import ROOT

from sopgraph.graphs.loader import load_sop
from sopgraph.graphs.model import Predicate, Sop

FOLDERS = ("nodes", "prompts", "tools")
ENGLISH = """  # words of any text, whatever the world
    across added agrees always arrive arrives asked asks available back based because been believes
    below center chose closed color coming complains covers currently deal decline declines delay
    does done down each enough enter every existing exists falls find first five from generate give
    gone half have identified illustrated instantly internal into just know last latest leave
    leaves less look made makes manage member misunderstanding more most must nearly needed never
    older once only original other otherwise over present product promptly received recent recently
    remain remaining returned some soon speed stays still sufficiently sustained take telling than
    thank that their them there they things this through tomorrow toward unavoidable under unstable
    until using visit waited were what when whole whose wide widespread with working works worse
    wrongly
"""
FRAMEWORK = """  # words the framework uses for its own things (a pool, a window, a state)
    active address advise alert answer approve assess assure attached attempts authentication
    average averaged backed backing backup basic block blocked cancellation capacity case change
    chat clean cleaned cleaning clear cleared clearing code confirmed contact contract controls
    cost costs count cover create credentials critical current data date defects degraded detected
    dialogue differ dispatch downgrade dropped duplicate duty empty engineering errors escalation
    events exporter extend extension extra fail fails failure failures faults feed feeds file fill
    findings flow free grace guest handle handling head high holder home hour hours inactive inform
    inquiry internet intervals intervention invalid labels lead leading level lines loses mean
    membership metrics minute minutes missing months move note observed offline operational
    operations oracle order overflow pack packages percentage persist persistent pick plan planned
    points pool precondition privileges procedure proceed progress provide provider pull query
    question rate ratio read reading readings reads reason record recorded recovers recovery
    release remote remove removed repeat repeated replace replaced replacement reporting request
    requested requests resolve resolved rest roll router runner running safe scenario schedule
    service share shift shortfall side silent size slot solver spread state states stop stopped
    store success successful system technical telemetry test threshold throughput tickets times
    timestamp total transfer units update updated upgrade upgraded upstream user username valid
    validate values week window
"""
STOPWORDS = {w.lower() for w in [*keyword.kwlist, *dir(builtins), "self"]} | set(
    (ENGLISH + FRAMEWORK).split()
)

# fmt: off
WAITING = {  # the module -> its world words and the most of each it may hold
    "nodes/codeact_demos.py": {"site": 1},
    "nodes/label_judge.py": {"receipt": 2},
    "nodes/mcp/_config.py": {"interruption": 1},
    "nodes/mcp/_pool.py": {"authenticate": 1, "interruption": 1},
    "nodes/mcp/_stdio.py": {"triage": 1},
    "nodes/mcp_functions.py": {"idle": 1, "robotics": 2, "station": 1},
    "nodes/sandbox/_jail.py": {"site": 1},
    "nodes/sandbox/_rootfs.py": {"site": 1},
    "nodes/sandbox/_run.py": {"idle": 2, "site": 1, "station": 1},
    "nodes/sandbox/corpus/02_allowed_tool.py": {"idle": 3, "station": 1},
    "nodes/sandbox/selftest.py": {"idle": 2, "station": 2},
    "prompts/routing.py": {"alarm": 2},
    "prompts/signatures.py": {"site": 1},
    "prompts/toolmaker.py": {"site": 5},
    "prompts/verdict.py": {"idle": 2},
    "tools/contract.py": {"alarm": 2, "refund": 1, "site": 4},
    "tools/invocation_log.py": {"idle": 2, "site": 1},
    "tools/jailed.py": {"paid": 2, "site": 6},
    "tools/kit.py": {"idle": 2, "site": 2, "station": 4},
    "tools/monitor.py": {"site": 1},
    "tools/params.py": {"alarm": 1, "idle": 1, "site": 4, "triage": 1},
    "tools/registry.py": {"idle": 1, "interruption": 1, "station": 1},
    "tools/similar.py": {"camera": 1},
    "tools/spec/__init__.py": {"idle": 5, "jams": 1, "robotics": 1, "site": 2, "sorter": 3, "station": 4},
    "tools/spec/bind.py": {"site": 6},
    "tools/spec/compare.py": {"inducted": 2, "robotics": 3},
    "tools/spec/errors.py": {"idle": 2},
    "tools/spec/measures.py": {"idle": 1, "site": 4, "station": 1},
    "tools/spec/model.py": {"alarm": 1, "alarmed": 1, "robot": 2, "site": 1, "station": 1},
    "tools/spec/rows.py": {"conveyance": 1, "site": 4},
    "tools/spec/series.py": {"idle": 2, "robotics": 1, "site": 4, "station": 2},
    "tools/sqlite_wal.py": {"idle": 3},
    "tools/toolmaker/__init__.py": {"collector": 1},
    "tools/toolmaker/context.py": {"site": 1},
    "tools/toolmaker/data_catalog.py": {"camera": 1, "robotics": 2},
    "tools/toolmaker/demos.py": {"camera": 1, "idle": 1, "station": 1},
    "tools/toolmaker/docstring.py": {"paid": 2},
    "tools/toolmaker/execution.py": {"site": 2, "station": 2},
    "tools/toolmaker/record.py": {"site": 4},
    "tools/toolmaker/sampling.py": {"site": 2, "station": 1},
    "tools/toolmaker/session.py": {"idle": 1, "station": 1},
}
# fmt: on


def _words(text: object) -> list[str]:
    return re.findall(r"[a-z]+", str(text).lower())


def _sop_words(sop: Sop) -> set[str]:
    parts = [sop.id, sop.title, *sop.params, *sop.input, *sop.entry]
    for node_id, node in sop.nodes.items():
        parts += [node_id, node.title, node.text, *node.data]
        for case in node.next.when:
            if isinstance(case.if_, Predicate):
                parts += [case.if_.var, case.if_.value]
            else:
                parts.append(case.if_)
    return {w for part in parts for w in _words(part) if len(w) >= 4}


def world_words() -> dict[str, set[str]]:
    """Each example world -> the words of its SOPs that no other world's SOP uses."""
    worlds: dict[str, set[str]] = {}
    for file in sorted((ROOT / "examples").glob("*/**/sop.yaml")):
        world = file.relative_to(ROOT / "examples").parts[0]
        worlds.setdefault(world, set()).update(_sop_words(load_sop(file)))
    return {
        world: words - STOPWORDS - set().union(*(o for w, o in worlds.items() if w != world))
        for world, words in worlds.items()
    }


def _package_files() -> list[Path]:
    files = []
    for folder in FOLDERS:
        for file in sorted((ROOT / folder).rglob("*")):
            kept = file.suffix == ".py" or (folder == "prompts" and file.suffix == ".md")
            if kept and "__pycache__" not in file.parts:
                files.append(file)
    return files


def occurrences() -> dict[str, dict[str, int]]:
    """Each package module that uses world words -> those words and how often."""
    vocabulary = set().union(*world_words().values())
    found = {}
    for file in _package_files():
        counts = Counter(w for w in _words(file.read_text(encoding="utf-8")) if w in vocabulary)
        if counts:
            found[file.relative_to(ROOT).as_posix()] = dict(sorted(counts.items()))
    return found


def _line(module: str, counts: dict[str, int]) -> str:
    return f'    "{module}": {json.dumps(counts)},'


def test_the_vocabulary_has_words_of_every_world():
    worlds = world_words()
    folders = {d.name for d in (ROOT / "examples").iterdir() if d.is_dir()} - {"__pycache__"}
    assert len(worlds) > 1 and set(worlds) == folders, f"example worlds not read: {sorted(worlds)}"
    empty = [world for world, words in worlds.items() if not words]
    assert not empty, f"no words of their own (all shared or stopwords): {empty}"


def test_no_world_words_in_the_package():
    over = {}
    for module, counts in occurrences().items():
        allowed = WAITING.get(module, {})
        if any(n > allowed.get(w, 0) for w, n in counts.items()):
            over[module] = counts
    assert not over, (
        "example world words in the package (or more than WAITING allows); say it in the "
        "framework's words, or add a word that is no world's to STOPWORDS:\n"
        + "\n".join(f"{_line(m, c)}  # WAITING: {WAITING.get(m)}" for m, c in over.items())
    )


def test_the_waiting_list_is_only_what_is_left():
    found = occurrences()
    stale = {
        module: found.get(module, {})
        for module, counts in WAITING.items()
        if any(found.get(module, {}).get(w, 0) < n for w, n in counts.items())
    }
    assert not stale, (
        "fewer world words now; put these lines in WAITING in place of theirs (a module now at "
        "{} leaves the list):\n" + "\n".join(_line(m, c) for m, c in stale.items())
    )
