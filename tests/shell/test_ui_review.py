"""``sopgraph ui --draft DIR``, a draft's review page (issue 51): what the page shows, read from
drafts made without the model (``--samples 0 --repairs 0``, the structural candidate); the real
console over HTTP (the sentence highlighted with its node, the unused sentences, the failed
checks with file:line, the judgement steps, edits shown on reload, values escaped); a folder
that is not a draft refused in one line; and a real headless Chromium in which clicking a node
highlights its sentence and clicking a sentence highlights its node.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from sopgraph.graphs.drafting.review_page import ReviewError, read_review

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "r" * 8 + "-reviewer-token-" + "k" * 24
BEARER = {"Authorization": f"Bearer {TOKEN}"}
SERVICE = ROOT / "examples/service_interruption/sop.md"
# the structural draft of SERVICE: which node cites sentence 8, the entry observation that
# cites the opening statement (s1), and sentence 14, which a reviewer marks unused below
S8_NODE = "s8_account_active_check_known"
S1_NODE = "s1_this_procedure_customer_service"
S14_TEXT = "If the problem is resolved, end the conversation politely."
JUDGED = [
    S1_NODE, "s4_authenticate_customer_s_identity", "s6_account_authentication_successful_verify",
    S8_NODE, "s11_there_no_outage_proceed", "s13_after_troubleshooting_ask_customer",
]  # fmt: skip


def sopgraph(*args: object, home: Path) -> subprocess.CompletedProcess:
    env = {
        k: v for k, v in os.environ.items() if k not in ("SOPGRAPH_MODEL", "SOPGRAPH_MCP_TOKENS")
    }
    env["SOPGRAPH_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "sopgraph", *map(str, args)], stdin=subprocess.DEVNULL,
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
    )  # fmt: skip


def _draft(doc: Path, out: Path) -> Path:
    proc = sopgraph("draft", doc, "-o", out, "--samples", "0", "--repairs", "0", home=out.parent)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def drafts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Structural drafts, no model: the service SOP (passes every check), and the sample intake
    (fails two: its 'accepted' outcome is on no path)."""
    base = tmp_path_factory.mktemp("drafts")
    return {
        "service": _draft(SERVICE, base / "service"),
        "intake": _draft(ROOT / "tests/data/drafts/sample_intake.md", base / "intake"),
    }


def _copy(folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folder, tmp_path / folder.name))


# -- the page's data, no browser --------------------------------------------------------------


def test_the_review_links_each_sentence_to_its_node(drafts: dict[str, Path]) -> None:
    review = read_review(drafts["service"])
    by_number = {s.number: s for s in review.sentences}
    assert by_number[8].nodes == (S8_NODE,) and by_number[8].state == "cited"
    assert review.node(S8_NODE).sentences == (8,)
    assert review.node(S8_NODE).line == 54  # its line in sop.yaml
    assert by_number[1].nodes == (S1_NODE,) and by_number[1].state == "cited"  # the opening
    assert review.unused == []
    assert by_number[2].state == "background"  # not a procedure sentence: not for coverage
    assert [n.id for n in review.judgement] == JUDGED  # the judgement steps review.md lists
    assert all(n.judgement == "judge" for n in review.judgement)
    assert review.problems == [] and review.chosen == "structural"
    assert review.document == "sop.md" and review.sop is not None


def test_the_review_runs_the_checks_again(drafts: dict[str, Path]) -> None:
    review = read_review(drafts["intake"])
    shown = [str(p) for p in review.problems]
    sop = drafts["intake"] / "sop.yaml"
    assert len(shown) == 2 and all(line.startswith(f"error: {sop}:") for line in shown)
    assert "outcome 'accepted'" in shown[0] and "not reachable from any entry" in shown[1]


def test_an_edited_draft_shows_what_the_edit_changed(drafts: dict[str, Path], tmp_path: Path):
    folder = _copy(drafts["service"], tmp_path)
    sop = folder / "sop.yaml"
    text = sop.read_text()
    # the reviewer drops the citation of s10's node and gates the escalation on an approval
    text = text.replace("source: sop.md:19 (s10) ", "source: ")
    text = text.replace(
        "  s15_problem_persists_escalate_issue:\n    kind: action\n",
        "  s15_problem_persists_escalate_issue:\n    kind: action\n    approval: required\n    cost: high\n",
    )
    sop.write_text(text)
    review = read_review(folder)
    states = {s.number: s.state for s in review.sentences}
    assert states[10] == "uncovered" and states[1] == "cited"
    assert [s.number for s in review.unused] == [10]
    assert [p.message[:30] for p in review.problems] == ['sentence sop.md:19 (s10) "Afte']
    assert review.node("s15_problem_persists_escalate_issue").judgement == "approval"


def test_a_folder_that_is_not_a_draft_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ReviewError, match="not a draft folder \\(needs sop.yaml and draft.json"):
        read_review(tmp_path)
    (tmp_path / "sop.yaml").write_text("id: x\n")
    (tmp_path / "draft.json").write_text('{"document": 3}')
    with pytest.raises(ReviewError, match="draft.json: not a draft's facts"):
        read_review(tmp_path)


def test_ui_with_a_folder_that_is_not_a_draft_is_one_line(tmp_path: Path) -> None:
    tokens = _tokens(tmp_path)
    proc = sopgraph("ui", "--port", "0", "--tokens", tokens, "--draft", tmp_path,
                    home=tmp_path / "home")  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"error: --draft {tmp_path}: not a draft folder")
    assert "`sopgraph draft DOC -o DIR` writes one" in proc.stderr


# -- the real console over HTTP -----------------------------------------------------------------


def _tokens(where: Path) -> Path:
    tokens = where / "tokens"
    tokens.write_text(f"reviewer {TOKEN}\n")
    tokens.chmod(0o600)
    return tokens


@contextmanager
def console(tmp_path: Path, *folders: Path) -> Iterator[tuple[str, list[str]]]:
    """``sopgraph ui --draft ...`` started for real on a free port; yields its URL and the
    review pages' URLs it printed."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("SOPGRAPH_MODEL", "SOPGRAPH_MCP_TOKENS")
    }
    env.update(SOPGRAPH_HOME=str(tmp_path / "home"), PYTHONUNBUFFERED="1")
    drafts = [a for f in folders for a in ("--draft", str(f))]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sopgraph", "ui", "--port", "0", "--tokens", str(_tokens(tmp_path)),
         *drafts],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    try:
        line = proc.stdout.readline()
        m = re.match(r"sopgraph console: (http://127\.0\.0\.1:\d+)/ ", line)
        assert m, (line, proc.stderr.read() if proc.poll() is not None else "")
        pages = []
        for folder in folders:
            shown = re.match(r"draft review: (http://\S+) \((.+)\)$", proc.stdout.readline())
            assert shown and shown[2] == str(folder)
            pages.append(shown[1])
        yield m[1], pages
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_page_shows_the_sentence_with_its_node(drafts: dict[str, Path], tmp_path: Path):
    folder = _copy(drafts["service"], tmp_path)
    # the reviewer marks sentence 14 unused: no node cites it, draft.json lists it
    sop = folder / "sop.yaml"
    sop.write_text(sop.read_text().replace("source: sop.md:23 (s14) ", "source: "))
    facts = json.loads((folder / "draft.json").read_text())
    (folder / "draft.json").write_text(json.dumps({**facts, "unused": [14]}))
    with console(tmp_path, folder, drafts["intake"]) as (url, pages):
        assert pages == [f"{url}/drafts/service", f"{url}/drafts/intake"]
        with httpx.Client(base_url=url, timeout=60.0) as client:
            assert client.get("/drafts/service").headers["location"].startswith("/login?next=")
            page = client.get("/drafts/service", headers=BEARER)
            assert page.status_code == 200
            assert "script-src" not in page.headers["content-security-policy"]  # still no script
            html = page.text
            index = re.search(rf'<g id="n(\d+)" class="node observation judgement" '
                              rf'data-node="{S8_NODE}"', html)[1]  # fmt: skip
            # the node's box links to its sentence, the sentence to its node, and each lights
            # the other up
            assert f'<a href="#s8"><g id="n{index}" ' in html
            s8 = re.search(r"<li id=s8 class='sent cited' data-sentence=8>.*?</li>", html)[0]
            assert f"<a class=nref href='#n{index}'>{S8_NODE}</a>" in s8
            assert f".review:has(#n{index}:is(:hover,:target)) #s8{{background:" in html
            assert f".review:has(#s8:is(:hover,:target)) #n{index} rect{{" in html
            # the unused sentence, marked in the document and listed
            assert re.search(rf"<li id=s14 class='sent unused' [^>]*>.*?{S14_TEXT}", html)
            unused = re.search(r"<ul id=unused>(.*?)</ul>", html)[1]
            assert "sop.md:23 (s14)" in unused and S14_TEXT in unused
            judged = re.findall(r"<tr class=judgement data-node='([^']+)'>", html)
            assert judged == JUDGED
            assert "all checks pass" in html and "id=problems" not in html

            failing = client.get("/drafts/intake", headers=BEARER).text
            problems = re.search(r"<ul id=problems>(.*?)</ul>", failing)[1]
            sop = drafts["intake"] / "sop.yaml"
            assert f"error: {sop}:67: answer_accepted: not reachable from any entry" in problems
            assert "2 failed check(s): publish refuses it" in failing

            listing = client.get("/drafts", headers=BEARER).text
            assert re.findall(r"<tr class=draft data-draft='(\w+)'>", listing) == [
                "service",
                "intake",
            ]
            missing = client.get("/drafts/nope", headers=BEARER)
            assert missing.status_code == 404 and "no draft &#x27;nope&#x27;" in missing.text

            # an edit shows on reload: hostile text escaped, a dropped citation a failed check
            sop_file = folder / "sop.yaml"
            sop_file.write_text(
                sop_file.read_text()
                .replace("source: sop.md:19 (s10) ", "source: ")
                .replace(
                    "text: Authenticate the customer's identity and account details.",
                    "text: '<script>alert(1)</script> \u202eevil'",
                )  # fmt: skip
            )
            edited = client.get("/drafts/service", headers=BEARER).text
            assert "<script>" not in edited and "&lt;script&gt;alert(1)&lt;/script&gt;" in edited
            assert "\u202e" not in edited
            assert "<li id=s10 class='sent uncovered'" in edited
            assert "1 failed check(s)" in edited and f"error: {sop_file}:" in edited
            # a folder that stops being a draft after the start is a page, not a crash
            (folder / "draft.json").unlink()
            gone = client.get("/drafts/service", headers=BEARER)
            assert gone.status_code == 409 and "not a draft folder" in gone.text


# -- a real browser ---------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs Chromium and its driver from Debian: apt-get install chromium chromium-driver "
    "(make system-deps)",
)
def test_a_browser_click_on_a_node_highlights_its_sentence(drafts: dict[str, Path], tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,1000", "--no-first-run", "--disable-background-networking",
                 f"--user-data-dir={tmp_path / 'profile'}"):  # fmt: skip
        options.add_argument(flag)
    lit, plain = "rgba(255, 241, 118, 1)", "rgba(0, 0, 0, 0)"  # HIGHLIGHT, and none
    with console(tmp_path, drafts["service"]) as (url, pages):
        driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
        try:
            driver.get(pages[0])
            driver.find_element(By.ID, "token").send_keys(TOKEN)
            driver.find_element(By.ID, "login").click()
            WebDriverWait(driver, 30).until(EC.url_to_be(pages[0]))
            sentence = driver.find_element(By.ID, "s8")
            assert sentence.value_of_css_property("background-color") == plain
            box = driver.find_element(By.CSS_SELECTOR, f"g[data-node='{S8_NODE}']")
            box.click()
            WebDriverWait(driver, 10).until(EC.url_to_be(pages[0] + "#s8"))
            assert sentence.value_of_css_property("background-color") == lit
            # and the other way: a sentence's citation lights up its node's box
            rect = driver.find_element(
                By.CSS_SELECTOR, "g[data-node='s4_authenticate_customer_s_identity'] rect"
            )
            assert rect.value_of_css_property("stroke") != "rgb(245, 127, 23)"
            driver.find_element(By.CSS_SELECTOR, "#s4 a.cite").click()
            WebDriverWait(driver, 10).until(EC.url_to_be(pages[0] + "#s4"))
            assert rect.value_of_css_property("stroke") == "rgb(245, 127, 23)"
            assert sentence.value_of_css_property("background-color") == plain
        finally:
            driver.quit()
