"""``sopgraph ui``, the local run console (issue 27): the real server over HTTP (a token to get in,
the runs and a run's path and verdicts, values from tools escaped, CSRF refused, the approval
policy kept, the token's identity recorded as the approver), then a real headless Chromium
that logs in, approves a paused run with the button and sees the trail name the approver.

With ``SOPGRAPH_CONSOLE_SHOTS=DIR`` the browser test also saves its screenshots in DIR
(``make console-shots`` refreshes docs/console-runs.png and docs/console-run.png).
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
import yaml
from sop_factory import make_sop

ROOT = Path(__file__).resolve().parents[2]
GATED = yaml.safe_load((Path(__file__).parent / "gated_sop.yaml").read_text())
CHECK = "return Verdict(value=True, observed=3.5, threshold=2, explanation='3.5 over 2')"
# what a hostile tool or data server could put in a run: markup, a bidi override, a control
HOSTILE = (
    "return Verdict(value=True, observed='<script>alert(1)</script>', threshold=\"'><img "
    "src=x onerror=alert(2)>\", explanation='evil\\u202etxt.exe\\x1b[2J')"
)
ALARM = '{"type": "alarm"}'
ALICE = "alice@example.com"
ALICE_TOKEN = "a" * 8 + "-alice-token-" + "z" * 24
BOB_TOKEN = "bob-token-" + "q" * 30


def sopgraph(*args: object, home: Path) -> subprocess.CompletedProcess:
    env = {
        k: v for k, v in os.environ.items() if k not in ("SOPGRAPH_MODEL", "SOPGRAPH_MCP_TOKENS")
    }
    env["SOPGRAPH_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "sopgraph", *map(str, args)], stdin=subprocess.DEVNULL,
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
    )  # fmt: skip


def _ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def _made_world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The runs are made once a module (two ``sopgraph run`` processes); each test gets a copy."""
    import hashlib

    tmp_path = tmp_path_factory.mktemp("ui_world")
    home = tmp_path / "home"
    gated = make_sop(tmp_path / "gated", GATED, {"check": CHECK})
    hostile = make_sop(tmp_path / "hostile", {**GATED, "id": "hostile"}, {"check": HOSTILE})
    _ok(sopgraph("run", hostile, "-i", ALARM, "--thread", "evil1", "--approval", "reject",
                 home=home))  # fmt: skip
    _ok(sopgraph("run", gated, "-i", ALARM, "--thread", "wait1", home=home))
    tokens = tmp_path / "tokens"
    digest = hashlib.sha256(BOB_TOKEN.encode()).hexdigest()
    tokens.write_text(f"# who  token\n{ALICE} {ALICE_TOKEN}\nbob sha256:{digest}\n")
    tokens.chmod(0o600)
    return {"home": home, "gated": gated, "hostile": hostile, "tokens": tokens}


@pytest.fixture
def world(_made_world: dict[str, Path], tmp_path: Path) -> dict[str, Path]:
    """A home with a paused run (``wait1``), a finished one whose tool wrote hostile text
    (``evil1``), and a tokens file of two identities (one a sha256 digest): this test's own copy
    of the home, so what it answers stays its own."""
    home = tmp_path / "home"
    shutil.copytree(_made_world["home"], home)
    return {**_made_world, "home": home}


@contextmanager
def console(world: dict[str, Path], *extra: str) -> Iterator[str]:
    """``sopgraph ui`` started for real on a free port; yields its URL."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("SOPGRAPH_MODEL", "SOPGRAPH_MCP_TOKENS")
    }
    env.update(SOPGRAPH_HOME=str(world["home"]), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sopgraph", "ui", "--port", "0", "--tokens", str(world["tokens"]),
         *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    try:
        line = proc.stdout.readline()
        m = re.match(r"sopgraph console: (http://127\.0\.0\.1:\d+)/ \(runs in (.+)\)$", line)
        assert m, (line, proc.stderr.read() if proc.poll() is not None else "")
        assert m[2] == str(world["home"].resolve() / "checkpoints.sqlite")
        yield m[1]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _client(url: str) -> httpx.Client:
    """A client of the console; its requests' time limit is generous, as the test workers share
    two cores in CI with the servers they start."""
    return httpx.Client(base_url=url, timeout=60.0)


def _login(client: httpx.Client, token: str) -> httpx.Response:
    return client.post("/login", data={"token": token, "next": "/"})


def _csrf(page: str) -> str:
    return re.search(r"name=csrf value='([^']+)'", page)[1]


def _gate(page: str) -> dict[str, str]:
    """The hidden fields naming the gated action a run page's form answers."""
    return {
        "interrupt": re.search(r"name=interrupt value='([^']+)'", page)[1],
        "node": re.search(r"name=node value='([^']+)'", page)[1],
    }


def _run(world: dict[str, Path], thread: str) -> dict:
    return json.loads(_ok(sopgraph("runs", "show", thread, "--json", home=world["home"])))


def test_the_console_lets_no_one_in_without_a_token(world: dict[str, Path]) -> None:
    with console(world) as url, _client(url) as client:
        page = client.get("/runs/wait1")
        assert page.status_code == 303 and page.headers["location"] == "/login?next=%2Fruns%2Fwait1"
        assert client.get("/", headers={"Authorization": "Bearer " + "x" * 40}).status_code == 303
        refused = client.post("/runs/wait1/decision", data={"decision": "approve"})
        assert refused.status_code == 401
        wrong = _login(client, "y" * 40)
        assert wrong.status_code == 401 and "not in the console&#x27;s tokens file" in wrong.text
        assert "set-cookie" not in wrong.headers
        # a login never sends the browser to another site
        off = client.post("/login", data={"token": ALICE_TOKEN, "next": "//evil.example/x"})
        assert off.status_code == 303 and off.headers["location"] == "/"
    assert _run(world, "wait1")["status"] == "interrupted"


def test_a_logged_in_page_lists_the_runs_and_draws_a_run_with_its_verdicts(
    world: dict[str, Path],
) -> None:
    with console(world) as url, _client(url) as client:
        login = _login(client, BOB_TOKEN)  # a token listed by its sha256 digest
        assert login.status_code == 303
        cookie = login.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and BOB_TOKEN not in cookie
        home = client.get("/")
        assert home.status_code == 200 and "signed in as <b>bob</b>" in home.text
        assert home.headers["content-security-policy"].startswith("default-src 'none'")
        rows = re.findall(r"<tr class=run data-thread='(\w+)'>.*?class='status s-(\w+)'", home.text)
        assert rows == [("wait1", "interrupted"), ("evil1", "finished")]
        waiting = home.text.split("<h2>Waiting for approval</h2>")[1].split("<h2>Runs")[0]
        assert "data-thread='wait1'" in waiting and "value=approve" in waiting
        assert "<b>standby</b>: standby" in waiting

        run = client.get("/runs/wait1")
        assert run.status_code == 200
        svg = run.text.split("<div class=drawing>")[1].split("</svg>")[0]
        assert svg.startswith("<svg") and ">check<" in svg and ">standby<" in svg
        step = re.search(r"<tr class=step data-node='check'>(.*?)</tr>", run.text)[1]
        cells = re.findall(r"<td[^>]*>(.*?)</td>", step)
        assert cells[:6] == ["check", "observation", "decided", "true", "3.5", "2"]
        assert cells[7] == "3.5 over 2"
        assert "action=&#x27;/runs/wait1/decision&#x27;" not in run.text  # not escaped twice
        assert "action='/runs/wait1/decision'" in run.text

        assert client.get("/runs/nope").status_code == 404


def test_values_from_tools_are_escaped(world: dict[str, Path]) -> None:
    with console(world) as url, _client(url) as client:
        _login(client, ALICE_TOKEN)
        page = client.get("/runs/evil1").text
        assert "<script>" not in page and "<img" not in page and "\u202e" not in page
        assert "\x1b" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "&#x27;&gt;&lt;img src=x onerror=alert(2)&gt;" in page
        assert "evil\\u202etxt.exe\\x1b[2J" in page


def test_a_form_without_the_sessions_csrf_token_or_from_another_site_is_refused(
    world: dict[str, Path],
) -> None:
    with console(world) as url, _client(url) as client:
        _login(client, ALICE_TOKEN)
        page = client.get("/runs/wait1").text
        csrf, gate = _csrf(page), _gate(page)
        bare = client.post("/runs/wait1/decision", data={"decision": "approve", **gate})
        assert bare.status_code == 403
        forged = client.post(
            "/runs/wait1/decision", data={"decision": "approve", "csrf": "x" * 43, **gate}
        )
        assert forged.status_code == 403
        cross = client.post(
            "/runs/wait1/decision", data={"decision": "approve", "csrf": csrf, **gate},
            headers={"Origin": "http://evil.example"},
        )  # fmt: skip
        assert cross.status_code == 403 and "another site" in cross.text
        assert _run(world, "wait1")["status"] == "interrupted"  # nothing was answered

        own = client.post(
            "/runs/wait1/decision", data={"decision": "reject", "csrf": csrf, **gate},
            headers={"Origin": url},
        )  # fmt: skip
        assert own.status_code == 303 and own.headers["location"] == "/runs/wait1?answered=reject"
    run = _run(world, "wait1")
    assert run["status"] == "finished" and run["final"] == "action standby rejected"
    assert run["result"]["actions"][0]["approver"] == ALICE


def test_an_approval_over_a_bearer_header_records_the_tokens_identity(
    world: dict[str, Path],
) -> None:
    with console(world) as url, _client(url) as client:
        auth = {"Authorization": f"Bearer {ALICE_TOKEN}"}
        gate = _gate(client.get("/runs/wait1", headers=auth).text)
        unnamed = client.post("/runs/wait1/decision", data={"decision": "approve"}, headers=auth)
        assert unnamed.status_code == 409 and "the answer names no gated action" in unnamed.text
        answer = {"decision": "approve", **gate}
        done = client.post("/runs/wait1/decision", data=answer, headers=auth)
        assert done.status_code == 303, done.text
        page = client.get("/runs/wait1?answered=approve", headers=auth).text
        assert "id=status class='s-finished'" in page
        assert "You approved as alice@example.com." in page
        again = client.post("/runs/wait1/decision", data=answer, headers=auth)
        assert again.status_code == 409 and "not waiting for a decision" in again.text
    run = _run(world, "wait1")
    assert run["result"]["path"] == ["check", "standby", "confirm"]
    standby = run["result"]["actions"][0]
    assert (standby["node"], standby["approved"], standby["by"]) == ("standby", True, "human")
    assert standby["approver"] == ALICE


def test_a_reject_console_approves_nothing(world: dict[str, Path]) -> None:
    with (
        console(world, "--approval", "reject") as url,
        _client(url) as client,
    ):
        auth = {"Authorization": f"Bearer {ALICE_TOKEN}"}
        page = client.get("/runs/wait1", headers=auth).text
        assert "value=approve" not in page and "value=reject" in page
        answer = {"decision": "approve", **_gate(page)}
        refused = client.post("/runs/wait1/decision", data=answer, headers=auth)
        assert (
            refused.status_code == 409 and "approval policy is &#x27;reject&#x27;" in refused.text
        )
    assert _run(world, "wait1")["status"] == "interrupted"


def test_sop_limits_the_console_to_that_sops_runs(world: dict[str, Path]) -> None:
    with (
        console(world, "--sop", str(world["hostile"])) as url,
        _client(url) as c,
    ):
        auth = {"Authorization": f"Bearer {ALICE_TOKEN}"}
        assert re.findall(r"<tr class=run data-thread='(\w+)'", c.get("/", headers=auth).text) == [
            "evil1"
        ]
        assert c.get("/runs/wait1", headers=auth).status_code == 404
        (pending,) = _run(world, "wait1")["result"]["interrupts"]
        gate = {"interrupt": pending["id"], "node": pending["node"]}
        answer = c.post("/runs/wait1/decision", data={"decision": "approve", **gate}, headers=auth)
        assert answer.status_code == 404
    assert _run(world, "wait1")["status"] == "interrupted"


def test_ui_without_a_tokens_file_is_one_line(tmp_path: Path) -> None:
    proc = sopgraph("ui", "--port", "0", home=tmp_path / "home")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: sopgraph ui needs a")
    assert "--tokens FILE" in proc.stderr


# -- a real browser --------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs Chromium and its driver from Debian: apt-get install chromium chromium-driver "
    "(make system-deps)",
)
def test_a_browser_logs_in_and_approves_a_paused_run(world: dict[str, Path], tmp_path: Path):
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
    shots = Path(os.environ.get("SOPGRAPH_CONSOLE_SHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    with console(world) as url:
        driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
        try:
            driver.get(url + "/")
            assert "/login" in driver.current_url
            driver.find_element(By.ID, "token").send_keys(ALICE_TOKEN)
            driver.find_element(By.ID, "login").click()
            WebDriverWait(driver, 30).until(EC.url_to_be(url + "/"))
            assert (
                "signed in as alice@example.com" in driver.find_element(By.TAG_NAME, "header").text
            )
            _shot(driver, shots / "console-runs.png")

            waiting = driver.find_element(By.CSS_SELECTOR, ".waiting[data-thread='wait1']")
            waiting.find_element(By.CSS_SELECTOR, "button.approve").click()
            # the console resumes the run (opens its SOP, runs the action) before it answers
            WebDriverWait(driver, 90).until(EC.url_contains("answered="))
            assert driver.current_url == url + "/runs/wait1?answered=approve"
            assert driver.find_element(By.ID, "status").text == "finished"
            assert driver.find_element(By.ID, "answered").text == f"You approved as {ALICE}."
            row = driver.find_element(By.CSS_SELECTOR, "tr.action[data-node='standby']")
            assert row.find_element(By.CLASS_NAME, "approver").text == ALICE
            assert row.find_element(By.CLASS_NAME, "decided").text == f"approved by {ALICE}"
            _shot(driver, shots / "console-run.png")
        finally:
            driver.quit()
    run = _run(world, "wait1")
    assert run["status"] == "finished" and run["result"]["path"] == ["check", "standby", "confirm"]
    assert run["result"]["actions"][0]["approver"] == ALICE
    assert (shots / "console-runs.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _shot(driver, out: Path) -> None:
    """The whole page as PNG: the window is made as tall as the page first."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, min(max(height + 140, 600), 4000))
    driver.save_screenshot(str(out))
