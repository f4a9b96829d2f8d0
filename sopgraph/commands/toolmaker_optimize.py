"""``sopgraph tools optimize-maker``: compile the spec tool-maker with DSPy's BootstrapFewShot
on nodes the evaluation never scores, and save the program where the tool-maker loads it."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from pathlib import Path
from typing import Any

from sopgraph.arguments import CliParser, positive_int
from sopgraph.commands import toolmaker_common as common
from sopgraph.errors import UserError
from sopgraph.graphs.untrusted_text import json_text


def optimize_parser() -> argparse.ArgumentParser:
    p = CliParser(
        prog="sopgraph tools optimize-maker",
        description="compile the spec tool-maker with DSPy's BootstrapFewShot on nodes the "
        "evaluation never scores: a spec the model fills is kept as a demonstration when it "
        "passes every training case of its node (the library's verified specs fill up); the "
        "program is saved where the tool-maker loads it by default",
    )
    p.add_argument("sop", help="SOP file or folder")
    p.add_argument(
        "--nodes", help="comma-separated node ids to optimize on (default: every node with a "
        "spec tool and labeled cases, outside the evaluation's node set and its measurements)",
    )  # fmt: skip
    p.add_argument("--max-nodes", type=positive_int, default=12,
                   help="at most this many nodes, in a seeded order (default 12)")  # fmt: skip
    p.add_argument("--demos", type=positive_int, default=2,
                   help="demonstrations in the program (default 2)")  # fmt: skip
    p.add_argument("--config", choices=common.CONFIGS, default="sop",
                   help="the inputs the demonstrations show (default sop: the shortest)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="the nodes' order (default 0)")
    p.add_argument("--cases", help="folder of <node>.jsonl labeled cases (default: the world's)")
    p.add_argument(
        "--out", help="where to save the program (default prompts/optimized/check_maker.json)"
    )
    p.add_argument("--json", action="store_true", help="print the attempts as JSON")
    return p


def cmd_tools_optimize_maker(argv: list[str]) -> int:
    import random

    from sopgraph.evals.toolmaker_eval import NODE_SET, node_cases, spec_deps
    from sopgraph.prompts.toolmaker import OPTIMIZED_MAKER
    from sopgraph.tools.registry import Registry
    from sopgraph.tools.similar import reads
    from sopgraph.tools.toolmaker.demos import canonical, library_specs
    from sopgraph.tools.toolmaker.grammar import response_format, spec_model
    from sopgraph.tools.toolmaker.optimize import Task, optimize_check_maker, passed_all
    from sopgraph.tools.toolmaker.sampling import inputs, params_of
    from sopgraph.tools.toolmaker.session import MakeSession

    args = optimize_parser().parse_args(argv)
    sop_dir = common.sop_dir_of(args.sop)
    cases_dir = common.cases_dir_of(args.cases, sop_dir)
    out = Path(args.out) if args.out else OPTIMIZED_MAKER
    models = common.maker_models()

    async def go() -> tuple[Any, list[dict[str, Any]], list[str]]:
        session = MakeSession(sop_dir, lm=models.lm, judge_lm=models.judge_lm, model=models.name)
        async with session:
            # the evaluation's nodes are neither optimized on nor shown: the pool of library
            # demonstrations leaves them out, and so does every node that reads their data
            library = [d for d in library_specs(session.sop, Registry(sop_dir / "tools"))
                       if d.node not in NODE_SET]  # fmt: skip
            held = {h.split(".", 1)[-1] for n in NODE_SET for h in session.node(n).data}
            label = {d.node: canonical(d.spec) for d in library}
            if args.nodes:
                nodes = common.decision_nodes(sop_dir, common.split_list(args.nodes), cases_dir)
                bad = [n for n in nodes if n in NODE_SET or n not in label]
                if bad:
                    raise UserError(
                        f"--nodes: {', '.join(bad)} is in the evaluation's node set or has no "
                        "spec tool; optimize on other nodes"
                    )
            else:
                nodes = []
                for d in library:
                    try:
                        node_cases(cases_dir, d.node, "train")
                    except FileNotFoundError:
                        continue
                    if not reads(d.spec) & held:
                        nodes.append(d.node)
                random.Random(args.seed).shuffle(nodes)
            if not nodes:
                raise UserError(f"{sop_dir}: no node to optimize on (spec tools with cases)")
            tasks = []
            for node in nodes:
                if len(tasks) == args.max_nodes:
                    break
                deps = await spec_deps(session, node, exclude=frozenset(NODE_SET))
                train = node_cases(cases_dir, node, "train")
                check = await deps.runner.score(label[node], train)
                if check.problem or check.passed < check.cases:
                    # the grammar cannot say this tool (a field it lacks): no label to show
                    print(f"{node}: skipped, its spec in the grammar's form passes "
                          f"{check.passed}/{check.cases} training cases", file=sys.stderr)  # fmt: skip
                    continue
                reply = spec_model(deps.data, params_of(deps.brief, deps.node.text),
                                   deps.input_fields, list(deps.node.data))  # fmt: skip
                tasks.append(Task(
                    node=node, texts=inputs(deps, args.config, "none"),
                    response_format=response_format(reply),
                    train=train, runner=deps.runner,
                    label=label[node], lm=models.lm,
                ))  # fmt: skip

            def attempt(row: dict[str, Any]) -> None:
                ok = "kept" if passed_all(row) else "not kept"
                why = f" ({row['problem']})" if row["problem"] else ""
                print(f"{time.strftime('%H:%M:%S')} {row['node']}: train "
                      f"{row['passed']}/{row['cases']}{why}: {ok}", file=sys.stderr, flush=True)  # fmt: skip

            with contextlib.redirect_stdout(sys.stderr):  # DSPy's optimizer prints progress
                program, attempts = await optimize_check_maker(
                    tasks, demos=args.demos, on_attempt=attempt
                )
            return program, attempts, [t.node for t in tasks]

    program, attempts, nodes = asyncio.run(go())
    out.parent.mkdir(parents=True, exist_ok=True)
    program.save(str(out))
    kept = [a["node"] for a in attempts if passed_all(a)]
    summary = {"model": models.name, "optimizer": "BootstrapFewShot", "nodes": nodes,
               "attempts": attempts, "bootstrapped": kept[: args.demos],
               "demos": len(program.write.demos), "program": str(out)}  # fmt: skip
    if args.json:
        print(json_text(summary, default=str))
        return 0
    print(
        f"tool-maker optimized with BootstrapFewShot ({models.name}) on {len(attempts)} of "
        f"{len(nodes)} nodes: {len(kept)} specs passed every training case; the program has "
        f"{len(program.write.demos)} demonstrations ({', '.join(kept[: args.demos]) or 'none'} "
        f"bootstrapped, the rest the library's verified specs); saved to {out}"
    )
    return 0
