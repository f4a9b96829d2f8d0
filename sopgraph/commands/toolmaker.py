"""The tool-making pipeline's commands: ``sopgraph tools make`` and ``sopgraph eval toolmaker``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sopgraph.arguments import CliParser, positive_int, subcommands
from sopgraph.errors import UserError
from sopgraph.graphs.home import home_dir
from sopgraph.graphs.untrusted_text import json_text, printable
from sopgraph.output_file import write_output

SPEC_TOKENS = 400  # a filled spec is ~150 tokens; room for a model that explains first
JUDGE_TOKENS = 200  # a diagnosis of two or three sentences, or a yes/no with one
CONFIG_HELP = "sop | sop+d (traces) | sop+r (repair loop) | sop+d+r (both, default)"
CONFIGS = ("sop", "sop+d", "sop+r", "sop+d+r")


def _sop_dir(spec: str) -> Path:
    path = Path(spec)
    if not path.exists():
        raise UserError(f"{path}: no such SOP file or folder; check the path")
    folder = path if path.is_dir() else path.parent
    if not (folder / "sop.yaml").exists():
        raise UserError(f"{folder}: no sop.yaml in this folder; give an SOP file or its folder")
    return folder


def _cases_dir(spec: str | None, sop_dir: Path) -> Path:
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


@dataclass
class MakerModels:
    """The models of a make: the collector's chat model, the tool-maker's and judges' LMs."""

    name: str
    chat: Any
    lm: Any  # tool-maker
    judge_lm: Any  # reflector and judges: short answers


def _models() -> MakerModels:
    from sopgraph.nodes.models import Settings

    settings = Settings()
    name = settings.model.strip()
    if not name:
        raise UserError(
            "the tool-maker needs a model: set SOPGRAPH_MODEL (`local` for the local model; "
            "SOPGRAPH_CASSETTE=<file> replays a recorded run)"
        )
    from sopgraph.nodes.models import chat_model, dspy_lm

    # No DSPy cache: every figure is a real call (a cassette replays at the HTTP layer).
    return MakerModels(
        name=name,
        chat=chat_model(settings, role="codeact"),
        lm=dspy_lm(settings, role="toolmaker", cache=False, max_tokens=SPEC_TOKENS),
        judge_lm=dspy_lm(settings, role="toolmaker", cache=False, max_tokens=JUDGE_TOKENS),
    )


def _nodes(sop_dir: Path, nodes: list[str], cases_dir: Path) -> list[str]:
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


def _program(program: str) -> str | None:
    """``--program`` checked before any model call: the saved program's name, or None."""
    from sopgraph.prompts.toolmaker import program_path

    try:
        path = program_path(program)
    except FileNotFoundError as exc:
        raise UserError(f"--program {exc}") from None
    return path.name if path else None


def _progress(enabled: bool):
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    return Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
        console=Console(stderr=True), disable=not enabled,
    )  # fmt: skip


def _log(line: str) -> None:
    """A stage line on stderr when no live display can show it (a background run's log)."""
    if not sys.stderr.isatty():
        # stage lines quote the models' and the tools' errors
        print(f"{time.strftime('%H:%M:%S')} {printable(line)}", file=sys.stderr, flush=True)


def _split_list(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def _pipeline_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pipeline", choices=["spec", "legacy"], default="spec",
        help="spec (default): N constrained spec candidates chosen by execution, library "
        "demonstrations; legacy: one candidate a round, tested in the sandbox",
    )  # fmt: skip
    p.add_argument(
        "--samples", type=positive_int, default=8, help="spec: candidates a round (default 8)"
    )
    p.add_argument(
        "--demos", choices=["library", "none"], default="library",
        help="spec: demonstrations from the library's verified specs, or none (cold start)",
    )  # fmt: skip
    p.add_argument(
        "--program", default="default", metavar="FILE|none",
        help="spec: the tool-maker's saved DSPy program (default: the one `sopgraph tools "
        "optimize-maker` saved in prompts/optimized/, when there is one; none: zero-shot)",
    )  # fmt: skip
    p.add_argument(
        "--no-enumeration", dest="enumeration", action="store_false",
        help="spec: the model's samples alone; by default the LLM-free search's enumerated "
        "specs join round 0's samples and the same execution chooses (rows marked +enum)",
    )  # fmt: skip
    p.add_argument(
        "--with-enumeration", dest="enumeration", action="store_true", help=argparse.SUPPRESS
    )  # the default since 2026-11-28; kept for old commands


def _budget_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--traces", type=int, default=3, help="training cases traced (default 3)")
    p.add_argument(
        "--collector-turns", type=int, help="the data collector's turn budget (default 6)"
    )


# -- sopgraph tools make ----------------------------------------------------------------


def make_parser() -> argparse.ArgumentParser:
    p = CliParser(
        prog="sopgraph tools make",
        description="make tools for decision nodes: collect traces, write, test in the "
        "sandbox, repair; each kept candidate is registered as a new inactive version",
    )
    p.add_argument("sop", help="SOP file or folder")
    p.add_argument("nodes", nargs="+", metavar="NODE", help="decision node ids")
    p.add_argument("--config", choices=CONFIGS, default="sop+d+r", help=CONFIG_HELP)
    p.add_argument("--label-free", action="store_true", help="no labels: votes and judges")
    p.add_argument(
        "--rounds", type=int, help="repair rounds (default 1 with --pipeline spec, 3 legacy)"
    )
    p.add_argument(
        "--seed", type=int, default=0, help="sampling seed (legacy: which cases to trace)"
    )
    p.add_argument("--form", choices=("spec", "code"), default="spec",
                   help="legacy pipeline: fill a ToolSpec (default) or write the file")  # fmt: skip
    _pipeline_options(p)
    _budget_options(p)
    p.add_argument("--cases", help="folder of <node>.jsonl labeled cases (default: the world's)")
    p.add_argument("--no-register", action="store_true", help="make and score only")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    return p


def cmd_tools_make(argv: list[str]) -> int:
    args = make_parser().parse_args(argv)
    if args.rounds is None:
        args.rounds = 1 if args.pipeline == "spec" else 3
    if args.pipeline == "spec" and args.label_free:
        raise UserError("--label-free runs on the legacy pipeline: add --pipeline legacy")
    if not 0 <= args.rounds <= 10:
        raise UserError(f"--rounds {args.rounds}: give 0 to 10 repair rounds")
    sop_dir = _sop_dir(args.sop)
    cases_dir = _cases_dir(args.cases, sop_dir)
    nodes = _nodes(sop_dir, args.nodes, cases_dir)
    _program(args.program)
    models = _models()
    from sopgraph.evals.toolmaker_eval import node_cases, spec_deps
    from sopgraph.tools.registry import Registry
    from sopgraph.tools.toolmaker.label_free import Judges, make_label_free
    from sopgraph.tools.toolmaker.pipeline import make_tool, register, score_heldout
    from sopgraph.tools.toolmaker.sampling import (
        make_spec_tool,
        score_spec_heldout,
        search_candidates,
    )
    from sopgraph.tools.toolmaker.session import MakeSession

    async def go() -> list[dict[str, Any]]:
        out = []
        session = MakeSession(
            sop_dir, chat=models.chat, lm=models.lm, judge_lm=models.judge_lm,
            model=models.name, form=args.form, collector_turns=args.collector_turns,
        )  # fmt: skip
        async with session:
            with _progress(not args.json or sys.stderr.isatty()) as bar:
                for node in nodes:
                    task = bar.add_task(f"{node}: start", total=None)

                    def stage(s: str, d: str, node=node, task=task) -> None:
                        bar.update(task, description=f"{node}: {s} {d}")
                        _log(f"{node}: {s} {d}")

                    train = node_cases(cases_dir, node, "train")
                    held_out = node_cases(cases_dir, node, "eval")
                    if args.pipeline == "spec":
                        sdeps = await spec_deps(session, node, args.demos, program=args.program)
                        record = await make_spec_tool(
                            sdeps, train, config=args.config, samples=args.samples,
                            rounds=args.rounds, seed=args.seed, on_stage=stage,
                            extra_candidates=search_candidates(sdeps) if args.enumeration else None,
                        )  # fmt: skip
                        stage("score", f"{len(held_out)} held-out cases")
                        record = await score_spec_heldout(sdeps, record, held_out)
                    deps = session.deps(node)
                    if args.pipeline == "spec":
                        pass
                    elif args.label_free:
                        record = await make_label_free(
                            deps, train, Judges(lm=models.judge_lm), rounds=min(args.rounds, 2),
                            seed=args.seed, on_stage=stage,
                        )  # fmt: skip
                    else:
                        record = await make_tool(
                            deps, train, config=args.config, rounds=args.rounds,
                            seed=args.seed, traces=args.traces, on_stage=stage,
                        )  # fmt: skip
                    if args.pipeline != "spec":
                        stage("score", f"{len(held_out)} held-out cases")
                        record = await score_heldout(deps, record, held_out)
                    version, kept = None, None
                    if not args.no_register and record.best and record.best.candidate.code:
                        version = register(record, Registry(sop_dir / "tools"), node)
                        kept = sop_dir / "tools" / node / f"v{version}.make.json"
                    else:  # nothing registered: the record is kept all the same
                        name = f"{node}.{record.config}.seed{record.seed}.{int(time.time())}"
                        kept = write_output(
                            home_dir() / "toolmaker" / f"{name}.make.json",
                            record.model_dump_json(indent=1, by_alias=True),
                        )
                    bar.update(task, description=f"{node}: done")
                    out.append(_make_row(record, version, kept))
        return out

    rows = asyncio.run(go())
    if args.json:
        print(json_text(rows))
        return 0
    for r in rows:
        print(_make_line(r, args.sop))
    return 0


def _make_row(record: Any, version: int | None, kept: Path) -> dict[str, Any]:
    return {
        "node": record.node, "config": record.config, "label_free": record.label_free,
        "model": record.model, "version": version, "best_round": record.best_round,
        "rounds": len(record.rounds), "train_pass": record.train_pass,
        "eval_pass": record.eval_pass, "tokens": record.tokens, "seconds": record.seconds,
        "record": str(kept),
        "notes": record.notes,
    }  # fmt: skip


def _make_line(r: dict[str, Any], sop: str) -> str:
    ev = "-" if r["eval_pass"] is None else f"{r['eval_pass']:.0%}"
    head = (
        f"{r['node']}: train {r['train_pass']:.0%} (round {r['best_round']} of {r['rounds']}), "
        f"held-out {ev}, {r['tokens']:,} tokens, {r['seconds']:.0f} s"
    )
    if r["version"] is None:
        notes = f" ({printable('; '.join(r['notes']))})" if r["notes"] else ""
        return f"{head}; not registered{notes}; record {r['record']}"
    return (
        f"{head}; registered v{r['version']} (inactive), record {r['record']}\n"
        f"  promote: sopgraph tools promote {sop} {r['node']} {r['version']}"
    )


# -- sopgraph tools optimize-maker ------------------------------------------------------


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
    p.add_argument("--config", choices=CONFIGS, default="sop",
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
    sop_dir = _sop_dir(args.sop)
    cases_dir = _cases_dir(args.cases, sop_dir)
    out = Path(args.out) if args.out else OPTIMIZED_MAKER
    models = _models()

    async def go() -> tuple[Any, list[dict[str, Any]], list[str]]:
        session = MakeSession(
            sop_dir, chat=models.chat, lm=models.lm, judge_lm=models.judge_lm,
            model=models.name,
        )  # fmt: skip
        async with session:
            # the evaluation's nodes are neither optimized on nor shown: the pool of library
            # demonstrations leaves them out, and so does every node that reads their data
            library = [d for d in library_specs(session.sop, Registry(sop_dir / "tools"))
                       if d.node not in NODE_SET]  # fmt: skip
            held = {h.split(".", 1)[-1] for n in NODE_SET for h in session.node(n).data}
            label = {d.node: canonical(d.spec) for d in library}
            if args.nodes:
                nodes = _nodes(sop_dir, _split_list(args.nodes), cases_dir)
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


# -- sopgraph eval toolmaker ------------------------------------------------------------


def cmd_eval_toolmaker(args: argparse.Namespace) -> int:
    from sopgraph.evals.toolmaker_eval import (
        NODE_SET,
        dump,
        eval_spec_toolmaker,
        eval_toolmaker,
        render_report,
        summarize,
    )
    from sopgraph.tools.toolmaker.session import MakeSession

    sop_dir = _sop_dir(args.sop)
    configs = _split_list(args.configs) or ["sop", "sop+d+r"]
    if args.label_free and args.pipeline != "spec":
        raise UserError(
            "--label-free in `eval toolmaker` runs on the spec pipeline; drop --pipeline"
        )
    if bad := [c for c in configs if c not in CONFIGS]:
        raise UserError(f"--configs: {', '.join(bad)} unknown; use {', '.join(CONFIGS)}")
    try:
        seeds = [int(s) for s in _split_list(args.seeds)] or [0]
    except ValueError:
        raise UserError(f"--seeds {args.seeds}: give comma-separated whole numbers") from None
    cases_dir = _cases_dir(args.cases, sop_dir)
    nodes = _nodes(sop_dir, _split_list(args.nodes) or NODE_SET, cases_dir)
    program = _program(args.program) if args.pipeline == "spec" else None
    models = _models()
    out_dir = Path(args.out)
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"--out {args.out}: is a file; give a folder for the records")
    import os

    # fill replays what an interrupted live run already recorded and asks the model the rest
    live = not os.environ.get("SOPGRAPH_CASSETTE") or os.environ.get(
        "SOPGRAPH_CASSETTE_MODE", "replay"
    ) in ("record", "fill")

    async def go() -> list[dict[str, Any]]:
        session = MakeSession(
            sop_dir, chat=models.chat, lm=models.lm, judge_lm=models.judge_lm,
            model=models.name, collector_turns=args.collector_turns,
        )  # fmt: skip
        async with session:
            with _progress(not args.json or sys.stderr.isatty()) as bar:
                task = bar.add_task("start", total=None)

                def stage(config: str, node: str, s: str, d: str) -> None:
                    bar.update(task, description=f"[{config}] {node}: {s} {d}")
                    _log(f"[{config}] {node}: {s} {d}")

                def partial(rows: list[dict[str, Any]]) -> None:
                    write_output(out_dir / "summary.json", dump(summarize(rows, models.name, live)))

                if args.pipeline == "spec":
                    return await eval_spec_toolmaker(
                        session, cases_dir, nodes, configs, seeds, samples=args.samples,
                        rounds=args.rounds if args.rounds is not None else 1,
                        train_limit=args.train_cases, demos_from=args.demos,
                        baseline=not args.no_baseline, with_enumeration=args.enumeration,
                        label_free=args.label_free, program=args.program,
                        out_dir=out_dir / "records",
                        on_stage=stage, on_row=partial,
                    )  # fmt: skip
                return await eval_toolmaker(
                    session, cases_dir, nodes, configs, seeds,
                    rounds=args.rounds if args.rounds is not None else 3,
                    traces=args.traces, out_dir=out_dir / "records", on_stage=stage,
                    on_row=partial,
                )  # fmt: skip

    rows = asyncio.run(go())
    summary = summarize(rows, models.name, live)
    write_output(out_dir / "summary.json", dump(summary))
    report = write_output(out_dir / "report.md", render_report(summary))
    registered = _register_into(args, configs, out_dir, sop_dir) if args.register_into else []
    if args.json:
        summary["registered"] = registered
        print(dump(summary))
        return 0
    mode = "live" if live else "replayed/scripted (not live)"
    print(f"tool-maker eval, model {models.name} ({mode}); records and report in {out_dir}")
    if args.pipeline == "spec":
        print(f"tool-maker program: {program or 'zero-shot (no optimized program)'}")
    for name, c in summary["configs"].items():
        print(
            f"{name}: held-out pass@1 {c['pass_at_1']:.0%} ({len(c['nodes_passed'])} of "
            f"{c['makes']} makes), {c['tokens_per_node']:,} tokens and "
            f"{c['seconds_per_node']:.0f} s per node, {c['minutes_total']:.1f} min in all"
            + (
                f", kept candidate from the search in {c['kept_from_search']}"
                if c["kept_from_search"]
                else ""
            )
        )
    for r in rows:
        ev = "-" if r["eval_pass"] is None else f"{r['eval_pass']:.0%}"
        mark = "PASS" if r["passed"] else "fail"
        print(
            f"  {mark} [{r['config']} s{r['seed']}] {r['node']}: held-out {ev}, "
            f"train {r['train_pass']:.0%}, {r['tokens']:,} tok, {r['seconds']:.0f} s"
            + (f"  ({'; '.join(r['notes'])[:160]})" if r["notes"] and not r["passed"] else "")
        )
        if r.get("vs_library"):
            print(f"       vs the library's spec: {'; '.join(r['vs_library'])[:300]}")
    print(f"report: {report}")
    if args.pipeline == "spec":
        from sopgraph.evals.toolmaker_eval import sampling_speed

        speed = sampling_speed(out_dir / "records")
        if speed:
            print(
                f"sampling: {speed['samples']:g} samples from one prompt took "
                f"{speed['all_samples_s']:.0f} s against {speed['one_sample_s']:.0f} s for one "
                f"({speed['cost_ratio']:.1f}x the time; {speed['all_samples_out_tok_s']:.1f} against "
                f"{speed['one_sample_out_tok_s']:.1f} generated tokens/s), mean of "
                f"{speed['nodes']} makes"
            )
    if args.register_into:
        for line in registered:
            print(f"  {line}")
        print(f"registered into {args.register_into}; score it with: sopgraph eval triage "
              f"--sop {args.register_into}")  # fmt: skip
    return 0


def _register_into(args: Any, configs: list[str], out_dir: Path, sop_dir: Path) -> list[str]:
    """Register the tools of one configuration that passed held-out into ``--register-into``."""
    from sopgraph.evals.toolmaker_eval import record_folder, register_passing

    config = args.register_config or configs[-1]
    spec = args.pipeline == "spec"
    folder = record_folder(config, args.demos if spec else "library",
                           spec and args.enumeration, spec and args.label_free)  # fmt: skip
    return register_passing(out_dir / "records", folder, sop_dir, Path(args.register_into))


def register(sub: Any) -> None:
    """Register ``toolmaker`` under the ``eval`` command (registered before, in eval.py)."""
    p = subcommands(sub.choices["eval"]).add_parser(
        "toolmaker", help="held-out pass@1 of the tool-making pipeline"
    )
    p.add_argument("sop", help="SOP file or folder")
    p.add_argument("--nodes", help="comma-separated node ids (default: the fixed node set)")
    p.add_argument("--configs", help="comma-separated, default sop,sop+d+r; " + CONFIG_HELP)
    p.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    p.add_argument(
        "--rounds", type=int, help="repair rounds (default 1 with --pipeline spec, 3 legacy)"
    )
    _pipeline_options(p)
    p.add_argument("--train-cases", type=positive_int, help="spec: use N training cases a node")
    p.add_argument("--no-baseline", action="store_true", help="spec: skip the LLM-free search")
    p.add_argument(
        "--label-free", action="store_true",
        help="spec: the tool-maker never reads the training labels: round 0's samples vote "
        "them (rows marked label-free); held-out is scored against the real labels",
    )  # fmt: skip
    _budget_options(p)
    p.add_argument("--cases", help="folder of <node>.jsonl labeled cases (default: the world's)")
    p.add_argument("--out", default=".sopgraph/toolmaker_eval", help="records, JSON and report")
    p.add_argument(
        "--register-into", metavar="DIR",
        help="copy the SOP folder to DIR (once) and register there, promoted, every tool that "
        "passed its held-out cases (as tool-maker:<model>)",
    )  # fmt: skip
    p.add_argument("--register-config", help="which config's tools to register (default the last)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(fn=cmd_eval_toolmaker)
