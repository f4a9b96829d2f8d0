"""``sopgraph publish``: a reviewed draft whose checks pass, copied as a new version under the
SOP home (``<home>/published/<sop id>/v<N>/``, with a manifest of every version)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
import tempfile
from pathlib import Path

from sopgraph.graphs.drafting.checks import check_draft
from sopgraph.graphs.drafting.facts import FACTS_FILE, DraftFacts
from sopgraph.graphs.home import home_dir
from sopgraph.graphs.problems import shown_problems

SOP_FILE = "sop.yaml"
MANIFEST = "manifest.json"


class PublishError(Exception):
    """A draft that cannot be published; one ``error:`` line per reason."""


def published_dir(sop_id: str) -> Path:
    return home_dir() / "published" / sop_id


def publish(folder: Path) -> tuple[int, Path]:
    """Check the draft in ``folder`` again and copy it as the next version; the same file
    published twice stays one version. Returns the version and its folder.

    Raises:
        PublishError: no draft there, or a check fails (each failed check one line).
    """
    sop_file, facts_file = folder / SOP_FILE, folder / FACTS_FILE
    if not sop_file.is_file() or not facts_file.is_file():
        raise PublishError(f"{folder}: not a draft folder (needs {SOP_FILE} and {FACTS_FILE}; "
                           "`sopgraph draft DOC -o DIR` writes one)")  # fmt: skip
    text = sop_file.read_text(encoding="utf-8")
    try:
        facts = DraftFacts.model_validate_json(facts_file.read_text(encoding="utf-8"))
    except ValueError as exc:
        first = str(exc).splitlines()[0]
        raise PublishError(f"{facts_file}: not a draft's facts ({first}); draft again") from None
    problems = check_draft(text, str(sop_file), facts)
    if problems:
        lines = shown_problems(problems)
        lines.append(f"error: {folder}: {len(problems)} failed check(s); fix them, then publish")
        raise PublishError("\n".join(lines))
    import yaml

    sop_id = str(yaml.safe_load(text)["id"])
    target = published_dir(sop_id)
    target.mkdir(parents=True, exist_ok=True)
    manifest_path = target / MANIFEST
    manifest = (
        json.loads(manifest_path.read_text()) if manifest_path.is_file() else {"versions": []}
    )
    sha = hashlib.sha256(text.encode()).hexdigest()
    for v in manifest["versions"]:
        if v["sha256"] == sha:
            return v["version"], target / f"v{v['version']}"
    version = max((v["version"] for v in manifest["versions"]), default=0) + 1
    tmp = Path(tempfile.mkdtemp(prefix=f".v{version}.", dir=target))
    for name in (SOP_FILE, FACTS_FILE, "review.md", "sop.mmd"):
        if (folder / name).is_file():
            shutil.copy2(folder / name, tmp / name)
    tmp.rename(target / f"v{version}")
    manifest["versions"].append({
        "version": version, "sha256": sha, "document": facts.document,
        "document_sha256": facts.sha256, "from": str(folder.resolve()),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    })  # fmt: skip
    manifest["active"] = version
    tmp_manifest = manifest_path.with_suffix(".json.tmp")
    tmp_manifest.write_text(json.dumps(manifest, indent=1) + "\n")
    tmp_manifest.replace(manifest_path)
    return version, target / f"v{version}"
