"""What the tool-maker's commands share: their inputs checked before any model call, the
models, the spec pipeline's options and the progress display."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from sopgraph.arguments import positive_int
from sopgraph.errors import UserError
from sopgraph.graphs.home import home_dir
from sopgraph.graphs.untrusted_text import printable
from sopgraph.tools.toolmaker.models import NO_MODEL, MakerModels, models_for

CONFIG_HELP = "sop | sop+d (data description) | sop+r (repair) | sop+d+r (both, default)"
CONFIGS = ("sop", "sop+d", "sop+r", "sop+d+r")
LABEL_FREE_HELP = (
    "the training labels are never read: round 0's samples vote them (rows marked "
    "label-free); held-out cases are still scored against their labels, to report pass@1"
)


def sop_dir_of(spec: str) -> Path:
    path = Path(spec)
    if not path.exists():
        raise UserError(f"{path}: no such SOP file or folder; check the path")
    folder = path if path.is_dir() else path.parent
    if not (folder / "sop.yaml").exists():
        raise UserError(f"{folder}: no sop.yaml in this folder; give an SOP file or its folder")
    return folder


def cases_dir_of(spec: str | None, sop_dir: Path) -> Path:
    if spec:
        path = Path(spec)
        if not path.is_dir():
            raise UserError(f"--cases {spec}: not a folder; give the folder of <node>.jsonl files")
        return path
    from sopgraph.examples import EXAMPLES

    if sop_dir.resolve() != (EXAMPLES / "fc_alarm_triage").resolve():
        raise UserError(
            f"{sop_dir}: no labeled cases known for this SOP; give --cases DIR "
            "(one <node>.jsonl of labeled cases per node)"
        )
    from sopgraph.evals.fc_triage.build import build_world

    return build_world(home_dir(), progress=sys.stderr.isatty()).cases


def maker_models() -> MakerModels:
    """The tool-maker's models from the settings, or one error line when no model is set."""
    from sopgraph.nodes.models import Settings

    settings = Settings()
    if not settings.model.strip():
        raise UserError(NO_MODEL)
    return models_for(settings)


def decision_nodes(sop_dir: Path, nodes: list[str], cases_dir: Path) -> list[str]:
    """The nodes, checked before any model call: decision nodes with labeled cases, each once
    (a node named twice is made once)."""
    from sopgraph.evals.toolmaker_eval import node_cases
    from sopgraph.graphs.loader import load_sop

    nodes = list(dict.fromkeys(nodes))

    known = {n.id for n in load_sop(sop_dir).decision_nodes}
    unknown = [n for n in nodes if n not in known]
    if unknown:
        raise UserError(
            f"no decision node {', '.join(unknown)} in {sop_dir}; "
            "see `sopgraph validate` for the node ids"
        )
    for node in nodes:
        try:
            node_cases(cases_dir, node, "train")
        except FileNotFoundError:
            raise UserError(
                f"{cases_dir / (node + '.jsonl')}: no labeled cases for {node}; "
                "give --cases DIR with one <node>.jsonl per node"
            ) from None
    return nodes


def check_program(program: str) -> str | None:
    """``--program`` checked before any model call: the saved program's name, or None."""
    from sopgraph.prompts.toolmaker import program_path

    try:
        path = program_path(program)
    except FileNotFoundError as exc:
        raise UserError(f"--program {exc}") from None
    return path.name if path else None


def progress(enabled: bool):
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    return Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
        console=Console(stderr=True), disable=not enabled,
    )  # fmt: skip


def log_stage(line: str) -> None:
    """A stage line on stderr when no live display can show it (a background run's log)."""
    if not sys.stderr.isatty():
        # stage lines quote the models' and the tools' errors
        print(f"{time.strftime('%H:%M:%S')} {printable(line)}", file=sys.stderr, flush=True)


def split_list(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def demos_source(text: str) -> str:
    """``--demos``: library, none, or an SOP folder with a tool library."""
    if text in ("library", "none"):
        return text
    if not (Path(text) / "sop.yaml").is_file() or not (Path(text) / "tools").is_dir():
        raise argparse.ArgumentTypeError(
            f"{text}: give library, none, or an SOP folder (sop.yaml and tools/)"
        )
    return str(Path(text).resolve())


def spec_options(p: argparse.ArgumentParser) -> None:
    """The spec pipeline's options, the same in `tools make` and `eval toolmaker`."""
    p.add_argument("--samples", type=positive_int, default=8, help="candidates a round (default 8)")
    p.add_argument(
        "--rounds", type=int, default=1, help="repair rounds with +r (default 1, at most 10)"
    )
    p.add_argument(
        "--demos", type=demos_source, default="library", metavar="library|none|SOP_DIR",
        help="demonstrations from the library's verified specs, none (cold start), or another "
        "SOP folder's verified specs (cold on this SOP)",
    )  # fmt: skip
    p.add_argument(
        "--program", default="default", metavar="FILE|none",
        help="the tool-maker's saved DSPy program (default: the one `sopgraph tools "
        "optimize-maker` saved in prompts/optimized/, when there is one; none: zero-shot)",
    )  # fmt: skip
    p.add_argument(
        "--no-enumeration", dest="enumeration", action="store_false",
        help="the model's samples alone; by default the LLM-free search's enumerated "
        "specs join round 0's samples and the same execution chooses (rows marked +enum)",
    )  # fmt: skip
    p.add_argument(
        "--with-enumeration", dest="enumeration", action="store_true", help=argparse.SUPPRESS
    )  # the default since 2026-11-28; kept for old commands
    p.add_argument("--label-free", action="store_true", help=LABEL_FREE_HELP)
    p.add_argument("--cases", help="folder of <node>.jsonl labeled cases (default: the world's)")


def check_rounds(rounds: int) -> None:
    if not 0 <= rounds <= 10:
        raise UserError(f"--rounds {rounds}: give 0 to 10 repair rounds")
