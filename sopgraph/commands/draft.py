"""``sopgraph draft DOC -o DIR``: a written SOP drafted into a reviewable SOP folder; and
``sopgraph publish DIR``: a reviewed draft whose checks pass, copied as a new version."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sopgraph.errors import UserError
from sopgraph.graphs.drafting.document import DocumentError
from sopgraph.graphs.drafting.drafter import MAX_REPAIRS, MAX_SAMPLES, SOP_FILE, total_steps
from sopgraph.graphs.drafting.facts import FACTS_FILE
from sopgraph.graphs.drafting.reader import read_document
from sopgraph.graphs.drafting.steps import CatalogEntry
from sopgraph.progress import progress_bar

REVIEW_FILE = "review.md"
DRAWING_FILE = "sop.mmd"
BUDGET_S = 900.0  # a draft of a long document on the 1.5B model: 15 minutes (docs/drafting.md)


async def _catalog(mcp_json: Path) -> dict[str, CatalogEntry]:
    """The names the servers of ``mcp_json`` serve (``server.tool``, ``server.metric``,
    ``server.table`` and ``server.table.column``), each with what it is about (a tool's
    description and the fields and values of the record it returns) and the arguments it
    requires."""
    from sopgraph.nodes.mcp import McpPool, load_server_configs
    from sopgraph.tools.toolmaker.catalog import Catalog
    from sopgraph.tools.toolmaker.data_catalog import DataCatalog

    folder = mcp_json if mcp_json.is_dir() else mcp_json.parent
    configs = load_server_configs(folder)
    if not configs:
        raise UserError(f"--data {mcp_json}: no MCP servers found; give an mcp.json file")
    pool = McpPool(configs)
    await pool.start()
    try:
        catalog = await Catalog.read(pool)
        data = await DataCatalog.read(catalog, list(catalog.servers))
    finally:
        await pool.close()
    out: dict[str, CatalogEntry] = {}
    for s, tools in catalog.servers.items():
        for t in tools:
            fields = t.record_fields()
            values = [str(v) for f in fields.values() for v in f.get("enum") or []]
            props = (t.input_schema or {}).get("properties", {})
            out[f"{s}.{t.name}"] = CatalogEntry(
                " ".join([t.description, *fields, *values]),
                {a: props.get(a, {}) for a in t.required},
            )
    out |= {f"{s}.{m}": CatalogEntry() for s, ms in data.metrics.items() for m in ms}
    for s, tables in data.tables.items():
        for table, cols in tables.items():
            out |= {f"{s}.{table}": CatalogEntry(), **{f"{s}.{table}.{c}": CatalogEntry()
                                                        for c in cols}}  # fmt: skip
    return out


def _model_name() -> str:
    from sopgraph.nodes.models import Settings

    return Settings().model or "none"


def _write_folder(out: Path, files: dict[str, str], force: bool) -> None:
    """``files`` into ``out`` all at once: written in a sibling temporary folder, then renamed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name, text in files.items():
            (tmp / name).write_text(text, encoding="utf-8")
        if out.exists():
            old = out.with_name(f".{out.name}.old")
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old)
        else:
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def cmd_draft(args: argparse.Namespace) -> int:
    from sopgraph.graphs.drafting.drafter import draft
    from sopgraph.graphs.drafting.review import drawing, review_page

    out = Path(args.output)
    if out.exists() and not (out.is_dir() and (not any(out.iterdir()) or args.force)):
        raise UserError(
            f"-o {out}: exists and is not an empty folder; give a new folder or --force"
        )
    try:
        doc = read_document(args.document)
    except DocumentError as exc:
        raise UserError(str(exc)) from None
    sha = hashlib.sha256(Path(args.document).read_bytes()).hexdigest()
    about = asyncio.run(_catalog(Path(args.data))) if args.data else None

    from sopgraph.nodes.models import dspy_lm
    from sopgraph.prompts.drafting import dspy_propose

    if args.samples > 0 or args.repairs > 0:
        lm, model = dspy_lm(role="default"), _model_name()
    else:  # the structural candidate alone: no model is started
        lm, model = None, "none (structural only)"
    started = time.monotonic()
    with progress_bar(sys.stderr.isatty()) as bar:
        task = bar.add_task(
            f"drafting {doc.file}", total=total_steps(doc, args.samples, args.repairs)
        )

        def on_step(what: str) -> None:
            bar.update(task, advance=1, description=what[:60])

        result = asyncio.run(draft(doc, dspy_propose(lm), catalog=list(about) if about else None,
                                   about=about, samples=args.samples,
                                   repairs=args.repairs, sop_id=args.id, sha256=sha,
                                   structural=not args.no_structural,
                                   budget_s=args.budget_s,
                                   on_step=on_step))  # fmt: skip
    result.cost.seconds = time.monotonic() - started
    files = {
        SOP_FILE: result.draft.text,
        FACTS_FILE: result.facts.model_dump_json(indent=1) + "\n",
        REVIEW_FILE: review_page(result, model, args.document),
    }
    if (mermaid := drawing(result.draft.text)) is not None:
        files[DRAWING_FILE] = mermaid
    _write_folder(out, files, args.force)
    problems = result.draft.problems
    print(f"wrote {out}/ ({', '.join(files)}): {len(problems)} failed check"
          f"{'' if len(problems) == 1 else 's'}, {result.choice_line()}, "
          f"{result.repairs} repair round{'' if result.repairs == 1 else 's'}")  # fmt: skip
    print(f"cost: {result.cost.line()} ({model})")
    for p in problems[:20]:
        print(p, file=sys.stderr)
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from sopgraph.graphs.drafting.publish import PublishError, publish

    try:
        version, path = publish(Path(args.folder))
    except PublishError as exc:
        raise UserError(str(exc)) from None
    print(f"published {path} (version {version})")
    return 0


def register(sub: Any) -> None:
    """Register ``draft`` and ``publish`` on the top-level subparsers."""
    d = sub.add_parser("draft", help="draft an SOP from a written document (md, txt, pdf, docx)")
    d.add_argument("document", help="the SOP document: Markdown, text, PDF or Word (.docx)")
    d.add_argument("-o", "--output", required=True, help="the draft folder to write")
    d.add_argument("--data", help="an mcp.json whose servers' names the data hints may use")
    d.add_argument(
        "--samples",
        type=int,
        default=3,
        help=f"model drafts to sample; the checks choose among them and the structural draft "
        f"made without the model (0-{MAX_SAMPLES}, default 3; 0 and --repairs 0: no model)",
    )
    d.add_argument(
        "--repairs",
        type=int,
        default=1,
        help=f"rounds that send failed checks back to the model (0-{MAX_REPAIRS}, default 1)",
    )
    d.add_argument(
        "--budget-s",
        type=float,
        default=BUDGET_S,
        metavar="SECONDS",
        help="start no sample or repair round that would, at the pace of those before it, end "
        f"past this many seconds (the first sample always runs; default {BUDGET_S:.0f})",
    )
    d.add_argument(
        "--no-structural",
        action="store_true",
        help="leave out the draft made without the model (measure the model's drafts alone)",
    )
    d.add_argument("--id", help="the SOP's id (default: from the document's title)")
    d.add_argument("--force", action="store_true", help="replace an existing draft folder")
    d.set_defaults(fn=cmd_draft)
    p = sub.add_parser(
        "publish", help="publish a reviewed draft whose checks pass, as a new version"
    )
    p.add_argument("folder", help="the draft folder (sop.yaml, draft.json)")
    p.set_defaults(fn=cmd_publish)
