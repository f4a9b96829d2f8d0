"""``sopgraph bench sopbench``: run an agent on SOP-Bench domains and print the metrics table."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from sopgraph.arguments import subcommands
from sopgraph.evals.sopbench.domain import Domain, DomainError, load_domain, resolve_domain
from sopgraph.graphs.home import home_dir
from sopgraph.graphs.untrusted_text import json_text
from sopgraph.progress import per_item


def register(sub: Any) -> None:
    """Register ``sopbench`` under the ``bench`` command (registered before, in bench.py)."""
    p = subcommands(sub.choices["bench"]).add_parser(
        "sopbench",
        help="SOP-Bench: ECR, C-TSR, TSR (strict and lenient) of an agent on domain folders",
        description=(
            "Run an agent on SOP-Bench domain folders (CC BY-NC 4.0 data, evaluation only; read "
            "from --data, never copied). One JSON line per task is kept in the run folder; "
            "running the same command again resumes an interrupted run."
        ),
    )
    p.add_argument("domains", nargs="*", metavar="PATH/DOMAIN", help="domain folders or names")
    p.add_argument(
        "--agent",
        choices=["sopgraph", "fc", "react"],
        default="sopgraph",
        help="sopgraph: the compiled graph (no LLM); fc/react: the baselines on "
        "SOPGRAPH_MODEL (default: %(default)s)",
    )
    p.add_argument(
        "--tasks",
        type=int,
        default=None,
        metavar="N",
        help="a stratified sample of N tasks across answer labels (default: all)",
    )
    p.add_argument("--seed", type=int, default=0, help="sample and distractor seed (default: 0)")
    p.add_argument(
        "--decide",
        choices=["none", "code", "quote", "verify"],
        default="none",
        help="fc/react: code: after the agent answers, the model writes the SOP's decision rule "
        "as Python over the data the agent gathered, run in the sandbox; its answer replaces "
        "the agent's when it is one the SOP allows; quote: the same, each step of the code "
        "under the SOP's sentence it applies, copied as a comment; verify: quote's answer "
        'replaces an agent answer that decides nothing ("Unable to Decide"), and a decided '
        "one only when code gives the same answer (default: %(default)s)",
    )
    p.add_argument(
        "--votes",
        type=int,
        default=1,
        metavar="N",
        help="with --decide code or quote: sample N-1 more replies of the rule as code and take "
        "the answer most usable replies give (default: %(default)s, the greedy reply alone)",
    )
    p.add_argument(
        "--bloat",
        type=float,
        default=0.0,
        metavar="R",
        help="add R distractor tools per domain tool from the other domains "
        "(the paper's 20/6 = 3.33; default: 0)",
    )
    p.add_argument(
        "--data",
        type=Path,
        default=None,
        help="folder of domains for bare names (default: $SOPBENCH_DATA or /work/shared/sopbench)",
    )
    p.add_argument(
        "--graphs",
        type=Path,
        default=None,
        help="folder of compiled graphs, one per domain (default: evals/sopbench/graphs)",
    )
    p.add_argument(
        "--make",
        action="store_true",
        help="sopgraph: make the graph from the domain folder, label-free, even where a "
        "hand-written one exists (a domain without one is always made; docs/sopbench-made.md)",
    )
    p.add_argument(
        "--samples",
        type=int,
        default=8,
        metavar="N",
        help="making: rule replies sampled on SOPGRAPH_MODEL (default: %(default)s; a make is "
        "as good as the best rule it draws, and 4 drew no good one on some CPUs: "
        "docs/sopbench-made.md)",
    )
    p.add_argument(
        "--make-inputs",
        type=int,
        default=20,
        metavar="N",
        help="making: task inputs (never labels) the samples are run and chosen on "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--repairs",
        type=int,
        default=0,
        metavar="N",
        help="making: 1 sends a sampled rule with a problem (it does not parse, compares data "
        "with a value the SOP never states, fails on every input) back to the model once; "
        "0 keeps the samples as drawn (default: %(default)s: on the development domains no "
        "repair changed the rule kept; docs/sopbench-made.md)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="root of the run folders (default: $SOPGRAPH_HOME/sopbench)",
    )
    p.add_argument(
        "--budget-s",
        type=float,
        default=None,
        metavar="SECONDS",
        help="start no task after this many seconds (the same command resumes the rest)",
    )
    p.add_argument(
        "--table",
        action="store_true",
        help="print the table of every run under --out instead of running",
    )
    p.add_argument("--json", action="store_true", help="print the runs and figures as JSON")
    p.set_defaults(fn=cmd_sopbench)


def _out_root(args: argparse.Namespace) -> Path:
    return args.out or home_dir() / "sopbench"


def _graph_for(domain: Domain, args: argparse.Namespace) -> Path | None:
    """The hand-written graph, or None: the graph is made (``--make``, or none written)."""
    from sopgraph.evals.sopbench.compiled import graph_dir

    return None if args.make else graph_dir(domain.name, args.graphs)


async def _made_graph(domain: Domain, args: argparse.Namespace, root: Path) -> tuple[Path, str]:
    """Make (or reuse) the domain's graph label-free; the graph folder and the run's model."""
    from sopgraph.evals.sopbench.made import make_graph
    from sopgraph.nodes.models import chat_model

    name = _model_label()
    out = root / domain.name / f"made{_made(args)}-s{args.seed}"
    info = await make_graph(
        domain, out, chat_model(), name, args.samples, args.make_inputs, args.seed, args.repairs
    )
    tokens = info["tokens"]
    print(
        f"{domain.name}: graph made by {info['model']} in {info['seconds']:.0f} s, "
        f"{info['calls']} calls, {tokens['prompt']} prompt + {tokens['completion']} completion "
        f"tokens (once); rule sample {info['chosen']} kept, {info.get('reach', '?')} answers "
        f"reached and agreeing on {info['agreement']} of {len(info['make_inputs'])} make "
        f"inputs -> {info['graph']}",
        file=sys.stderr,
    )
    made = f"{args.samples} samples, {args.make_inputs} make inputs, repairs {args.repairs}"
    return Path(info["graph"]), f"none at run time (made by {info['model']}; {made})"


def _check_making(domains: list[Domain], args: argparse.Namespace) -> None:
    """Before any run: a domain whose graph is to be made needs a model and stated outcomes."""
    from sopgraph.evals.sopbench.made import outcome_values
    from sopgraph.nodes.models import Settings

    made = [d for d in domains if _graph_for(d, args) is None]
    if made and not Settings().model:
        raise DomainError(
            f"{', '.join(d.name for d in made)}: no hand-written graph, so it is made by a model; "
            "set SOPGRAPH_MODEL (local: the offline model, `make local-llm`)"
        )
    if args.samples < 1 or args.make_inputs < 1 or args.repairs not in (0, 1):
        raise DomainError("--samples and --make-inputs must be 1 or more, --repairs 0 or 1")
    for d in made:
        outcome_values(d)


def _made(args: argparse.Namespace) -> str:
    """What makes a graph, in its folder's name: ``-k4-m20-r1``."""
    return f"-k{args.samples}-m{args.make_inputs}-r{args.repairs}"


def _decided(decide: str, votes: int) -> str:
    """The decide step in a run's name: ``decide-code``, ``decide-code-votes3``."""
    return f"decide-{decide}" + (f"-votes{votes}" if votes > 1 else "")


def _run_dir(root: Path, domain: Domain, args: argparse.Namespace, agent: str) -> Path:
    bloat = f"-bloat{args.bloat:g}" if args.bloat else ""
    decide = f"-{_decided(args.decide, args.votes)}" if args.decide != "none" else ""
    n = f"n{args.tasks}" if args.tasks else "all"
    # a made graph's runs are kept apart by what made it, as its graph folder is
    made = _made(args) if agent == "sopgraph-made" else ""
    return root / domain.name / f"{agent}{made}{decide}{bloat}-{n}-s{args.seed}"


def _model_label() -> str:
    from sopgraph.nodes.models import Settings

    settings = Settings()
    label = settings.model or ""
    if settings.provider == "local":
        from sopgraph.nodes.models import tool_format

        label += f" ({tool_format(settings)})"
    mode = os.environ.get("SOPGRAPH_CASSETTE_MODE")
    if mode and os.environ.get("SOPGRAPH_CASSETTE"):
        label += f" (cassette {mode})"
    return label


def _state(record: dict[str, Any]) -> str:
    state = "ok" if record["strict"] else ("wrong" if record["completed"] else "not completed")
    decided = record.get("decided")
    if decided:
        votes = decided.get("votes") or []
        agreed = sum(v["answer"] == decided["answer"] for v in votes) if decided["answer"] else 0
        tally = f", {agreed} of {len(votes)} votes" if votes else ""
        why = f": {decided['why']}" if decided.get("why") else ""
        state += f" (decided by {decided['by']}{tally}{why})"
    return state


def _line(record: dict[str, Any], i: int, n: int) -> str:
    return f"  task {i}/{n} {record['task_id']}: {_state(record)}, {record['seconds']:.1f} s"


async def _run_one(domain: Domain, args: argparse.Namespace, root: Path):
    from sopgraph.evals.sopbench.bloat import distractors
    from sopgraph.evals.sopbench.compiled import CompiledGraphAgent
    from sopgraph.evals.sopbench.runner import RunSpec, run_tasks
    from sopgraph.evals.sopbench.sample import stratified_sample

    tasks = stratified_sample(domain, args.tasks, args.seed)
    extra = distractors(domain, args.bloat, args.seed) if args.bloat else []
    agent_name = args.agent
    if args.agent == "sopgraph":
        graph = _graph_for(domain, args)
        model = "none (compiled graph)"
        if graph is None:
            graph, model = await _made_graph(domain, args, root)
            agent_name = "sopgraph-made"
        agent: Any = CompiledGraphAgent(domain, graph, extra)
    else:
        from sopgraph.evals.sopbench.agents import FunctionCallingAgent, ReActAgent
        from sopgraph.nodes.models import chat_model

        cls = FunctionCallingAgent if args.agent == "fc" else ReActAgent
        from sopgraph.evals.sopbench.agents import results_as_user_turns

        as_text = results_as_user_turns()
        agent = cls(
            domain,
            chat_model(),
            extra,
            tool_results_in_user_turns=as_text,
            decide=args.decide,
            votes=args.votes,
        )
        model = _model_label()
    spec = RunSpec(
        domain=domain.name,
        agent=agent_name,
        domain_tasks=len(domain.tasks),
        tasks=[t.task_id for t in tasks],
        seed=args.seed,
        distractors=extra,
        model=model,
        decide=args.decide,
        votes=args.votes,
    )
    out = _run_dir(root, domain, args, agent_name)
    print(
        f"{domain.name}: {agent_name} on {len(tasks)} tasks, {len(domain.tools)} tools"
        f"{f' + {len(extra)} distractors' if extra else ''} -> {out}",
        file=sys.stderr,
    )
    import openai

    try:
        async with agent:
            label = f"{domain.name} {agent_name}"
            with per_item(label, len(tasks), _line, _state) as shown:
                records = await run_tasks(domain, agent, tasks, out, spec, shown, args.budget_s)
    except (openai.APIConnectionError, openai.InternalServerError) as exc:
        raise DomainError(
            f"{out}: the model could not be reached ({exc}); the finished tasks are kept: "
            "run the same command again to resume"
        ) from None
    return _row(spec, records)


def _row(spec: Any, records: list[dict[str, Any]]):
    from sopgraph.evals.sopbench.metrics import majority_tsr, summarise
    from sopgraph.evals.sopbench.report import Row

    n = len(spec.tasks)
    total = spec.domain_tasks
    sample = f"all {n}" if n == total else f"{n} of {total}, seed {spec.seed}"
    if len(records) < n:
        sample += f" ({len(records)} done)"
    registry = f"+{len(spec.distractors)} distractors" if spec.distractors else "minimal"
    return Row(
        domain=spec.domain,
        agent=spec.agent
        + (f"+{_decided(spec.decide, spec.votes)}" if spec.decide != "none" else ""),
        model=spec.model,
        registry=registry,
        sample=sample,
        summary=summarise(records),
        majority_tsr=majority_tsr(records),
    )


def _stored_rows(root: Path, domains: list[str]) -> list[Any]:
    from sopgraph.evals.sopbench.runner import RunSpec, read_records

    rows = []
    for meta in sorted(root.glob("*/*/run.json")):
        spec = RunSpec.model_validate_json(meta.read_text(encoding="utf-8"))
        if domains and spec.domain not in domains:
            continue
        wanted = set(spec.tasks)
        records = [r for r in read_records(meta.parent / "records.jsonl") if r["task_id"] in wanted]
        if records:
            rows.append(_row(spec, records))
    return rows


def cmd_sopbench(args: argparse.Namespace) -> int:
    from sopgraph.evals.sopbench.report import as_json, markdown_table

    root = _out_root(args)
    if args.tasks is not None and args.tasks < 1:
        print("error: --tasks must be 1 or more (leave it out for every task)", file=sys.stderr)
        return 2
    if args.votes < 1 or (args.votes > 1 and args.decide not in ("code", "quote")):
        print(
            f"error: --votes {args.votes}: give a count of at least 1, and more than 1 only "
            "with --decide code or quote",
            file=sys.stderr,
        )
        return 2
    if args.decide != "none" and args.agent == "sopgraph":
        print(
            "error: --decide is for --agent fc or react (the graph decides by itself)",
            file=sys.stderr,
        )
        return 2
    if args.bloat < 0:
        print("error: --bloat must be 0 or more distractors per tool", file=sys.stderr)
        return 2
    try:
        if args.table:
            rows = _stored_rows(root, [Path(d).name for d in args.domains])
            if not rows:
                raise DomainError(f"{root}: no SOP-Bench runs there; run one first")
        else:
            if not args.domains:
                raise DomainError("give at least one PATH/DOMAIN (or --table)")
            # every domain is checked before any runs, so a typo costs no run time
            domains = [load_domain(resolve_domain(d, args.data)) for d in args.domains]
            if args.agent == "sopgraph":
                _check_making(domains, args)
            rows = []
            for domain in domains:
                rows.append(asyncio.run(_run_one(domain, args, root)))
    except DomainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json_text(as_json(rows)))
    else:
        print(markdown_table(rows))
    return 0
