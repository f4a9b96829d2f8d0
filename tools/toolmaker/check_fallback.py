"""The fallback that fills a Check at run time: the tool-maker's grammar, sampled on the run's
input, decided by the verdict most candidates agree on, kept as a candidate tool version.

When a decision node has no tool (or its tool failed), the node's grammar is built as the
tool-maker builds it (``grammar.spec_model``: the catalog the SOP's MCP servers list, the SOP's
parameters, the fields the input's entry type carries, the node's ``data:`` hints), a few
Checks are sampled on the model (``sampling.sample_spec``: the tool-maker's constrained call),
and each distinct one runs on the run's input through the spec runner, over the run's MCP pool.
The prompt holds no input values, so a node's Checks are drawn once per session (and prompt)
and run on every later input. A sampled Check the validator rejects ("reduce mean needs a
column", a ``$name`` the input does not carry) goes back once with the validator's line as the
prompt's feedback (DSPy's ``Refine`` in small); the repair takes its place.
What the declarations settle, each change kept in the trail as ``settled`` (a conversion or a
reading of the text, not a guess): where the catalog declares the data's unit and the text the
threshold's, the units give the scale (``check_units``: a percentage against a percentage is
scale 1, a ratio of like quantities 100); where only the text gives the threshold's unit, a
threshold not stated as a percentage takes scale 1 and an age is counted in the threshold's
time unit; a comparison the text states in words (``above {x}``, ``{x} or more``:
``stated_ops``) sets the operator; a test of a record field's declared value takes the value
the node's branches state (``check_polarity``). A Check no scale reconciles (a count against a
percentage: its repair is drawn as ``a / b`` with scale 100, ``check_repair``), or one reading
a time column's min or mean as a number, or one its comparison decides before reading (a count
``>= 0``: ``check_repair.decided``), goes back like one the validator rejects. Every
sample votes the verdict its Check gives; the most-voted verdict wins. A tie draws as many
samples again, once (``check_votes``); a tie then, or no Check that runs, leaves the node
unresolved with the reason: no guess. The Check that gave the
winning verdict is registered as a new, inactive version (``author: fallback:<model>``) that
``sopgraph shadow`` compares and a person promotes.

It lives in the tool-maker's package, not ``nodes/``: the executors may not import the
tool-maker (pyproject's import contracts); the runtime builds it and hands it to the chain.

Example:
    >>> fallback = CheckFallback(sop, registry, lm, model="local")   # doctest: +SKIP
    >>> outcome = await fallback.decide(node, ctx)                  # doctest: +SKIP
    >>> outcome.verdict.value, outcome.detail["registered"]        # doctest: +SKIP
    ('true', {'tool': 'obs_flow_low', 'version': 3, 'author': 'fallback:local'})
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from sopgraph.graphs.drafting.numbers import stated_ops
from sopgraph.graphs.executors import Outcome, Refused, ToolContext, Unavailable
from sopgraph.graphs.model import Node, Sop, Verdict
from sopgraph.prompts.toolmaker import CheckMakerModule
from sopgraph.tools.registry import Registry, RegistryError
from sopgraph.tools.spec import Check, SpecError, trace
from sopgraph.tools.toolmaker import check_units as units_in
from sopgraph.tools.toolmaker.catalog import Catalog
from sopgraph.tools.toolmaker.check_polarity import stated_test
from sopgraph.tools.toolmaker.check_repair import decided, feedback, rejected, repair_format
from sopgraph.tools.toolmaker.check_votes import Candidate, Tally
from sopgraph.tools.toolmaker.context import brief_for
from sopgraph.tools.toolmaker.data_catalog import DataCatalog
from sopgraph.tools.toolmaker.demos import library_specs, nearest
from sopgraph.tools.toolmaker.execution import CachedMcp
from sopgraph.tools.toolmaker.grammar import bound_fields, response_format, spec_model
from sopgraph.tools.toolmaker.maker import Usage
from sopgraph.tools.toolmaker.sampling import (
    SpecDeps,
    inputs,
    params_of,
    sample_config,
    sample_spec,
    tool_file,
)

SAMPLES = 5  # odd: two verdicts cannot tie when every sample runs
DEMOS = 3  # the library's nearest verified specs shown, as the tool-maker shows them
CONFIG = "sop+d"  # the prompt's data: the catalog's names with units and types
ORDERING = (">", ">=", "<", "<=")  # the operators a stated comparison sets


# a draw: its Check, why it gives no vote, why it was sent back, how the units set its scale
Drawn = tuple[dict[str, Any] | None, str | None, str | None, str | None]


class NoModel(Exception):
    """The Check fallback was asked for without a DSPy LM (a user's configuration)."""


class CheckFallback:
    """Decides a decision node by sampling Checks under its grammar and taking the majority.

    Args:
        sop: the SOP (the node's place in it goes into the prompt, as the tool-maker's brief).
        registry: the SOP's tool library, where a winning Check becomes a candidate version.
        lm: the DSPy LM (``nodes.architectures.load_models(...).lm``).
        model: the model's label in the candidate's author (``fallback:<model>``).
    """

    name = "check"

    def __init__(
        self,
        sop: Sop,
        registry: Registry,
        lm: Any,
        model: str = "model",
        *,
        samples: int = SAMPLES,
        program: str | Path | None = "default",
    ):
        if lm is None:
            raise NoModel("the Check fallback needs a model: set SOPGRAPH_MODEL (e.g. `local`)")
        self.sop, self.registry, self.lm = sop, registry, lm
        self.model = model.strip() or "model"
        self.samples = samples
        self.module = CheckMakerModule(program=program)
        self._catalogs: dict[int, tuple[Catalog, DataCatalog]] = {}
        # per prompt: the Checks drawn so far, and each rejected Check's repair
        self._draws: dict[str, tuple[list[Drawn], dict[str, Drawn]]] = {}

    def serves(self, node: Node) -> bool:
        return not node.is_action  # a Check decides; an action does

    async def decide(self, node: Node, ctx: ToolContext) -> Outcome:
        if ctx.mcp is None:
            raise Unavailable("no MCP servers: a Check has nothing to read")
        catalog, full = await self._catalog(ctx.mcp)
        # the prompt shows the SOP's default parameters, not the input's own values: the Check
        # names a parameter and the run binds its value, so one draw serves every input
        brief = brief_for(self.sop, node, dict(self.sop.params), catalog)
        data = full.only(brief.server_names)
        # the fields a run of this entry type carries; with no input declared, this run's
        kind = ctx.input.get("type")
        fields = bound_fields(self.sop, kind) or sorted(f for f in ctx.input if f != "type")
        try:
            params = params_of(brief, node.text)
            reply = spec_model(data, params, fields, list(node.data))
        except ValueError as exc:  # no Check fits: the next executor (free code) may
            raise Unavailable(f"no Check fits this node: {exc}") from None
        demos = nearest(
            library_specs(self.sop, self.registry), node.text, list(node.data), DEMOS, node.id
        )
        deps = SpecDeps(
            sop=self.sop, node=node, brief=brief, data=data, runner=None,  # type: ignore[arg-type]
            demos=demos, input_fields=fields, lm=self.lm, model=self.model,
        )  # fmt: skip
        ratio = functools.partial(spec_model, data, params, fields, list(node.data), ratio=True)
        tally, spent = await self._sample(deps, reply, ratio, ctx)
        detail: dict[str, Any] = {
            "samples": [c.row() for c in tally.candidates],
            "votes": tally.votes(),
            "drawn": spent is not None,  # False: the Checks drawn for an earlier input ran
        }
        # the draw's tokens are the run's that drew it (run_tokens sums the step's detail)
        tokens = (
            {"input_tokens": spent.input_tokens, "output_tokens": spent.output_tokens}
            if spent is not None
            else {}
        )
        verdict, why = tally.winner()
        if verdict is None:
            return Outcome(None, self.name, error=why, detail={"check": detail, **tokens})
        kept = tally.kept(verdict)
        detail["kept"] = kept.index
        detail["registered"] = self._register(node, kept.spec or {}, tally)
        n = tally.votes()[verdict]
        return Outcome(
            Verdict(
                value=verdict,  # type: ignore[arg-type]
                observed=kept.observed,
                explanation=f"{n} of {len(tally.candidates)} sampled Checks: {verdict}",
            ),
            self.name,
            detail={"check": detail, **tokens},
        )

    async def _catalog(self, pool: Any) -> tuple[Catalog, DataCatalog]:
        """The pool's catalog, read once per pool (its servers do not change during a session)."""
        if id(pool) not in self._catalogs:
            catalog = await Catalog.read(pool)
            data = await DataCatalog.read(catalog, list(catalog.servers))
            self._catalogs[id(pool)] = (catalog, data)
        return self._catalogs[id(pool)]

    async def _sample(
        self, deps: SpecDeps, reply: Any, ratio: Callable[[], Any], ctx: ToolContext
    ) -> tuple[Tally, Usage | None]:
        """The node's Checks run on the input, and the tokens drawing them spent (None: none)."""
        fmt = response_format(reply)
        texts = inputs(deps, CONFIG, "none")
        units, text = deps.data.units, deps.node.text
        repair_fmt = repair_format(fmt, ratio, units, text, deps.input_fields)

        def check_problem(spec: dict[str, Any] | None) -> str | None:
            if spec is None:
                return None
            return (rejected(spec, deps.input_fields) or units_in.unit_problem(spec, units, text)
                    or units_in.time_problem(spec, deps.data.time_columns)
                    or decided(spec))  # fmt: skip

        stated = stated_ops(text)

        def settle(spec: dict[str, Any] | None) -> tuple[dict[str, Any] | None, str | None]:
            """The Check with what the declarations settle (see above), each change noted."""
            if spec is None:
                return None, None
            notes = []
            implied = units_in.implied_scale(spec, units, text)
            if implied is not None and spec.get("scale", 1) != implied[0]:
                notes.append(f"scale {spec.get('scale', 1)} -> {implied[0]}: {implied[1]}")
                spec = {**spec, "scale": implied[0]}
            elif implied is None:  # no declared units: what the text's own unit settles
                spec, by_text = units_in.text_settles(spec, text)
                notes += by_text
            said = stated.get(str(spec.get("threshold")))
            if said and spec.get("op") in ORDERING and spec["op"] != said:
                notes.append(f"op {spec['op']} -> {said}: the text compares with "
                             f"{{{spec['threshold']}}} so")  # fmt: skip
                spec = {**spec, "op": said}
            spec, polarity = stated_test(spec, deps.data.records, self.sop, deps.node)
            return spec, "; ".join(n for n in [*notes, polarity] if n) or None

        async def draw(n: int) -> tuple[list[Drawn], Usage | None]:
            return await self._drawn(deps.node.id, fmt, texts, check_problem, settle, repair_fmt, n)

        # every distinct MCP call once: candidates often read the same data
        run_ctx = SimpleNamespace(params=ctx.params, mcp=CachedMcp(ctx.mcp))
        drawn, spent = await draw(self.samples)
        tally = await _tally(Tally(), drawn, ctx.input, run_ctx)
        if tally.tied():  # as many samples again, once (check_votes); the first ones ran
            drawn, more = await draw(2 * self.samples)
            if more is not None:
                spent = spent or Usage()
                spent.add(more)
            tally = await _tally(tally, drawn, ctx.input, run_ctx)
        return tally, spent

    async def _drawn(
        self,
        node_id: str,
        fmt: dict[str, Any],
        texts: dict[str, str],
        check: Callable[[dict[str, Any] | None], str | None],
        settle: Callable[[dict[str, Any] | None], tuple[dict[str, Any] | None, str | None]],
        repair_fmt: Callable[[dict[str, Any]], dict[str, Any]],
        n: int,
    ) -> tuple[list[Drawn], Usage | None]:
        """The node's first ``n`` sampled Checks: drawn once per prompt, then run on every
        input; with the tokens drawing them spent, or None when they were drawn before.

        A Check drawn for one input is the same program for the next (the prompt holds no input
        values); a changed prompt (catalog, library) draws anew. Each sample is settled and
        checked; a rejected one goes back once with the reason (under ``repair_fmt``'s
        grammar), its repair settled and checked.
        """
        key = hashlib.sha256(
            json.dumps([node_id, fmt, texts], sort_keys=True, default=str).encode()
        ).hexdigest()
        drawn, repaired = self._draws.setdefault(key, ([], {}))
        if len(drawn) >= n:
            return drawn[:n], None
        spent = Usage()
        for i in range(len(drawn), n):
            spec, problem, used = await sample_spec(
                self.module, self.lm, fmt, sample_config(i, i), texts
            )
            spent.add(used)
            spec, settled = settle(spec)
            why = check(spec)
            if spec is None or why is None:
                drawn.append((spec, problem, None, settled))
                continue
            seen = json.dumps(spec, sort_keys=True)
            if seen not in repaired:  # each distinct rejected Check goes back once
                again = {**texts, "feedback": feedback(spec, why)}
                fixed, fixed_problem, used = await sample_spec(
                    self.module, self.lm, repair_fmt(spec), sample_config(i, i), again
                )
                spent.add(used)
                fixed, fixed_settled = settle(fixed)
                if (still := check(fixed)) is not None:  # kept for the record; gives no vote
                    fixed_problem = f"spec rejected again: {still}"
                repaired[seen] = (fixed, fixed_problem, why, fixed_settled)
            drawn.append(repaired[seen])
        return list(drawn), spent

    def _register(self, node: Node, spec: dict[str, Any], tally: Tally) -> dict[str, Any]:
        """The kept Check as a new, inactive version (an identical one already there is kept)."""
        code = tool_file(node.id, node.text, spec)
        author = f"fallback:{self.model}"
        sha = hashlib.sha256(code.encode("utf-8")).hexdigest()
        name = node.tool_name
        try:
            same = [v for v in self.registry.entry(name).versions if v.sha256 == sha]
        except RegistryError:  # no version of the node yet (ToolMissing)
            same = []
        if same:
            v = same[0]
            return {"tool": name, "version": v.version, "author": v.author, "new": False}
        record = {"node": node.id, "author": author, "samples": [c.row() for c in tally.candidates]}
        version = self.registry.add_version(
            name, code, author=author, activate=False, record_json=json.dumps(record, indent=1)
        )
        return {"tool": name, "version": version, "author": author, "new": True}


def fallback_candidates(registry: Registry) -> list[str]:
    """The versions the fallback registered in ``registry``, as ``node:version``."""
    return [
        f"{e.node_id}:{v.version}"
        for e in registry.list()
        for v in e.versions
        if v.author.startswith("fallback:")
    ]


async def _run(cand: Candidate, spec: dict[str, Any], inp: dict[str, Any], ctx: Any) -> None:
    """Run one Check on the input; its verdict, or why it gives none, onto ``cand``."""
    try:
        check = Check.from_dict(spec)
        check.validate()
    except SpecError as exc:
        cand.problem = f"spec rejected: {exc}"
        return
    try:
        verdict, _ = await trace(check, inp, ctx)
    except Refused:
        raise  # the run's identity may not read this data: final for the node
    except Exception as exc:  # noqa: BLE001 - a Check that raises gives no vote
        cand.problem = f"{type(exc).__name__}: {exc}"[:300]
        return
    cand.verdict, cand.observed = verdict.value, verdict.observed


async def _tally(tally: Tally, drawn: list[Drawn], inp: dict[str, Any], run_ctx: Any) -> Tally:
    """``tally`` with each drawn Check it does not hold yet run on the input (an identical one
    takes the first one's verdict)."""
    start = len(tally.candidates)
    for i, (spec, problem, why, settled) in enumerate(drawn[start:], start):
        cand = Candidate(i, spec, problem, repaired=why, settled=settled)
        tally.candidates.append(cand)
        if spec is None or problem is not None:
            continue
        key = json.dumps(spec, sort_keys=True)
        if key in tally.ran:
            first = tally.candidates[tally.ran[key]]
            cand.same_as, cand.verdict, cand.problem = first.index, first.verdict, first.problem
            cand.observed = first.observed
            continue
        tally.ran[key] = i
        await _run(cand, spec, inp, run_ctx)
    return tally
