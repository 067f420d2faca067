"""``signet setup`` as a wizard on a pseudo-terminal, and the same answers given as flags.

The wizard is driven through its real prompts by ``pexpect`` (one answer refused and asked
again), then the flag-driven ``--non-interactive`` setup runs with the same answers; the two
results (workspace, and the harness files, launcher and service unit in the temporary home)
must be the same file for file. Both runs use the same absolute root, one after the other (the
first is moved aside), so not even the workspace path needs normalising: the harness ledgers
hold hashes of files that name the workspace. Harness CLIs and ``systemctl`` are fakes on
PATH (nothing real can run them here); git is real.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pexpect  # type: ignore[import-untyped]
import pytest
import yaml

from tests.conftest import default_sigint, free_port
from tests.pipeline.fake_llm import FakeLLM

SIGNET = [sys.executable, "-m", "signet.cli.entry"]
EPOCH = "1700000000"


def make_root(root: Path) -> dict[str, str]:
    """A machine: a home where Claude Code has its folder, `codex` and `systemctl` on PATH."""
    (root / "home" / ".claude").mkdir(parents=True)
    bin_dir = root / "bin"
    bin_dir.mkdir()
    fakes = {
        "codex": "#!/bin/sh\necho 'codex-cli 0.1.0'\n",
        # systemctl --user cannot run without a user session bus here: a fake that records its calls
        "systemctl": f'#!/bin/sh\necho "$@" >> "{root}/systemctl.calls"\nexit 0\n',
    }
    for name, text in fakes.items():
        path = bin_dir / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    drop = ("SIGNET_", "XDG_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return {
        **env,
        "HOME": str(root / "home"),
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "TERM": "xterm",
        "SIGNET_PORT": "1",
        # Reproducible timestamps: agent.yaml and the harness ledgers honour SOURCE_DATE_EPOCH,
        # git its own variables; the identity keeps the two commits comparable.
        "SOURCE_DATE_EPOCH": EPOCH,
        "GIT_AUTHOR_DATE": f"@{EPOCH} +0000",
        "GIT_COMMITTER_DATE": f"@{EPOCH} +0000",
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
    }


def spawn(env: dict[str, str], *args: str, cwd: Path) -> pexpect.spawn:
    # 400 columns: the detection line names temp paths (longer under pytest-xdist's per-worker
    # folders); a narrower terminal wraps the line and the expected text splits.
    return pexpect.spawn(
        SIGNET[0],
        [*SIGNET[1:], *args],
        env=env,
        cwd=str(cwd),
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 400),
        preexec_fn=default_sigint,
    )


def answer(child: pexpect.spawn, question: str, text: str) -> None:
    child.expect_exact(question)
    child.expect_exact(": ")
    child.sendline(text)


def tree(root: Path) -> Iterator[tuple[str, str, bytes]]:
    """(relative path, kind, content) of everything under ``root`` but git's own files."""
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == "ws" and len(rel.parts) > 1 and rel.parts[1] == ".git":
            continue
        if path.is_symlink():
            yield str(rel), "link", str(path.readlink()).encode()
        elif path.is_dir():
            yield str(rel), "dir", b""
        else:
            yield str(rel), oct(path.stat().st_mode & 0o777), path.read_bytes()


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, capture_output=True, text=True, check=True).stdout


@pytest.mark.timeout(300)
def test_wizard_and_flags_make_the_same_workspace(tmp_path: Path) -> None:
    root = tmp_path / "machine"
    env = make_root(root)
    ws = root / "ws"
    child = spawn(env, "setup", cwd=tmp_path)
    answer(child, "Workspace directory", f"{root}/home/.claude/../../ws")
    answer(child, "Agent name", "Ada")
    answer(child, "Agent description", "Keeps the build notes")
    answer(child, "Your name", "Lin")
    child.expect_exact("claude-code")
    answer(child, "Harnesses to connect", "notepad")
    child.expect_exact("unknown harness 'notepad'")  # refused with its reason, then asked again
    child.expect_exact("Harnesses to connect")
    child.expect_exact("(claude-code,codex)")  # what was found on this machine is the default
    child.sendline("")
    answer(child, "Embedding provider", "none")
    child.expect_exact("found codex (")  # the fake `codex` on PATH: detected, and the default
    child.expect_exact("Extraction (LLM) provider")
    answer(child, "(codex)", "claude-code")
    answer(child, "Search balance (0-1)", "1.5")
    child.expect_exact("out of range")
    answer(child, "Search balance (0-1)", "0.5")
    answer(child, "Make the workspace a git repository", "sure")
    child.expect_exact("type y or n")
    answer(child, "Make the workspace a git repository", "")
    answer(child, "Start the daemon at login", "y")
    answer(child, "Start the daemon now", "n")  # no dashboard question: nothing would serve it
    child.expect_exact("service at login")
    child.expect_exact("open the dashboard")
    answer(child, "Write this setup", "y")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before

    config = yaml.safe_load((ws / "agent.yaml").read_text())
    assert config["agent"]["name"] == "Ada"
    assert config["agent"]["description"] == "Keeps the build notes"
    assert "- description: Keeps the build notes" in (ws / "IDENTITY.md").read_text()
    assert config["search"]["alpha"] == 0.5
    assert config["harnesses"] == ["claude-code", "codex"]
    assert config["embedding"]["provider"] == "none"
    assert config["memory"]["pipelineV2"]["extraction"]["provider"] == "claude-code"
    assert "Lin" in (ws / "USER.md").read_text()
    assert (root / "home" / ".claude" / "settings.json").is_file() and (root / "home" / ".codex").is_dir()
    assert (root / "home" / ".config" / "systemd" / "user" / "signet.service").is_file()
    assert git(ws, "ls-files").split() and ".secrets" in (ws / ".gitignore").read_text()
    wizard_calls = (root / "systemctl.calls").read_text()
    assert "--user enable" in wizard_calls
    assert not (ws / ".daemon" / "daemon.json").exists()  # not started

    wizard_run = tmp_path / "wizard-run"
    root.rename(wizard_run)
    env = make_root(root)
    flags = subprocess.run(
        [
            *SIGNET,
            "setup",
            "--non-interactive",
            f"--workspace={ws}",
            "--agent-name=Ada",
            "--description=Keeps the build notes",
            "--user-name=Lin",
            "--harness=claude-code",
            "--harness=codex",
            "--embedding=none",
            "--llm=claude-code",
            "--search-alpha=0.5",
            "--git",
            "--service",
            "--no-start",
            "--no-open-dashboard",
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert flags.returncode == 0, flags.stderr
    assert (root / "systemctl.calls").read_text() == wizard_calls

    by_wizard = list(tree(wizard_run))
    by_flags = list(tree(root))
    assert [p for p, _, _ in by_wizard] == [p for p, _, _ in by_flags]
    for (path, kind_a, data_a), (_, kind_b, data_b) in zip(by_wizard, by_flags, strict=True):
        assert (kind_a, data_a) == (kind_b, data_b), f"{path} differs"
    # the repositories: the same commit (content, message, author and time)
    moved = wizard_run / "ws"
    assert git(moved, "rev-parse", "HEAD") == git(ws, "rev-parse", "HEAD")
    assert git(moved, "ls-files", "-s") == git(ws, "ls-files", "-s")


def wizard_until(env: dict[str, str], cwd: Path, ws: Path, stop_at: str) -> pexpect.spawn:
    """The wizard, answered up to the question ``stop_at`` (asked, not answered)."""
    child = spawn(env, "setup", cwd=cwd)
    for question, text in (
        ("Workspace directory", str(ws)),
        ("Agent name", "Ada"),
        ("Agent description", ""),
        ("Your name", ""),
    ):
        if question == stop_at:
            break
        answer(child, question, text)
    child.expect_exact(stop_at)
    return child


def nothing_written(root: Path, ws: Path) -> None:
    assert not ws.exists()
    assert not (root / "home" / ".local").exists()  # not even the launcher
    assert not (root / "home" / ".claude" / "settings.json").exists()


def one_line(text: str) -> str:
    """The last line the wizard printed: the one that says why it stopped (and no traceback)."""
    assert "Traceback" not in text and text.count("setup cancelled") == 1, text
    lines = [line for line in text.replace("\r", "").splitlines() if line.strip()]
    return lines[-1]


@pytest.mark.timeout(120)
def test_ctrl_c_eof_and_no_leave_nothing_written(tmp_path: Path) -> None:
    root = tmp_path / "machine"
    env = make_root(root)
    ws = root / "ws"

    child = wizard_until(env, tmp_path, ws, "Your name")
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert "setup cancelled (interrupted): nothing was written" in one_line(child.before)
    nothing_written(root, ws)

    child = wizard_until(env, tmp_path, ws, "Harnesses to connect")
    child.expect_exact(": ")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert "setup cancelled (end of input): nothing was written" in one_line(child.before)
    nothing_written(root, ws)

    child = wizard_until(env, tmp_path, ws, "Harnesses to connect")
    child.expect_exact(": ")
    child.sendline("")
    for question in ("Embedding provider", "Extraction (LLM) provider", "Search balance (0-1)"):
        answer(child, question, "")
    answer(child, "Make the workspace a git repository", "")
    answer(child, "Start the daemon at login", "")
    answer(child, "Start the daemon now", "")
    answer(child, "Open the dashboard in your browser", "")
    child.expect_exact("start the daemon")
    answer(child, "Write this setup", "n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert "setup cancelled: nothing was written" in one_line(child.before)
    nothing_written(root, ws)


def test_agent_yaml_is_written_last_and_whole(tmp_path: Path) -> None:
    """A step that fails before the end leaves no agent.yaml (so no workspace that looks
    finished) and no temporary file; the failure is one line."""
    root = tmp_path / "machine"
    env = make_root(root)
    ws = root / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").symlink_to(root / "nowhere" / "MEMORY.md")  # dangling: cannot be written through
    res = subprocess.run(
        [*SIGNET, "setup", "-y", f"--workspace={ws}", "--llm=none", "--no-launcher", "--no-git"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 1
    assert len(res.stderr.strip().splitlines()) == 1 and "MEMORY.md" in res.stderr, res.stderr
    assert not (ws / "agent.yaml").exists()
    assert not [p for p in ws.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp")]


def test_bad_flags_fail_in_one_line(tmp_path: Path) -> None:
    root = tmp_path / "machine"
    env = make_root(root)
    (root / "file").write_text("x")
    for flag, said in (
        (f"--workspace={root / 'file'}", "is not a directory"),
        ("--llm=gpt9", "unknown LLM provider"),
        ("--embedding=nope", "unknown embedding provider"),
        ("--agent-name=a\tb", "printable"),
        ("--description=one\ntwo", "printable"),
        ("--search-alpha=1.5", "from 0 to 1"),
        ("--search-alpha=nan", "from 0 to 1"),
        ("--search-alpha=half", "not a number"),
        ("--ollama-url=file:///etc/passwd", "http(s)"),
        ("--ollama-url=http://user:pw@127.0.0.1:11434", "no credentials"),
        ("--ollama-url=http://127.0.0.1:99999", "not a URL"),
    ):
        res = subprocess.run([*SIGNET, "setup", "-y", flag], env=env, capture_output=True, text=True, timeout=60)
        assert res.returncode == 2, (flag, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1 and said in res.stderr, (flag, res.stderr)
    assert not (root / "home" / ".agents").exists()


def fake(root: Path, name: str, text: str) -> Path:
    path = root / "bin" / name
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def offered_llm(env: dict[str, str], cwd: Path, ws: Path, *args: str) -> str:
    """What the wizard offers as the extraction provider (the default in brackets), and stop there."""
    child = spawn(
        env,
        "setup",
        f"--workspace={ws}",
        "--agent-name=Ada",
        "--harness=codex",
        "--embedding=none",
        *args,
        cwd=cwd,
    )
    answer(child, "Agent description", "")
    answer(child, "Your name", "")
    # the question, its default in brackets, then Rich's end of style
    child.expect(r"Extraction \(LLM\) provider.*?\(([a-z-]+)\)(?:\x1b\[[0-9;]*m)*: ")
    offered = str(child.match.group(1))
    # what was printed before it (the detection line), as plain text on one line
    said = re.sub(r"\x1b\[[0-9;]*m", "", child.before).replace("\r\n", " ")
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130 and not ws.exists()
    return f"{offered} | {said}"


@pytest.mark.timeout(180)
def test_the_extraction_default_is_what_this_machine_has(tmp_path: Path) -> None:
    """The wizard offers a harness CLI on PATH first, then an Ollama answering, else none, and
    says what it found; ``--llm auto`` takes the Ollama or none (never a CLI unasked)."""
    root = tmp_path / "machine"
    env = make_root(root)
    ws = root / "ws"
    (root / "bin" / "codex").unlink()
    ollama = FakeLLM().start()  # a real HTTP server speaking Ollama's /api/tags, on a port of its own
    try:
        url = f"--ollama-url={ollama.url}"
        claude = fake(root, "claude", "#!/bin/sh\necho '2.0.0 (Claude Code)'\n")
        got = offered_llm(env, tmp_path, ws, url)
        assert got.startswith("claude-code | ") and f"found claude-code ({claude})" in got, got
        assert f"ollama (answering at {ollama.url})" in got, got  # found too, second in line
        # --non-interactive (auto) never picks a paid CLI unasked: the local Ollama, and it says so
        res = subprocess.run(
            [*SIGNET, "setup", "-y", f"--workspace={ws}", url, "--no-git", "--no-launcher"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 0, res.stderr
        assert "extraction LLM: ollama (" in res.stdout and "run setup with --llm claude-code" in res.stdout
        assert yaml.safe_load((ws / "agent.yaml").read_text())["memory"]["pipelineV2"]["extraction"]["provider"] == (
            "ollama"
        )
        shutil.rmtree(ws)
        claude.unlink()
        got = offered_llm(env, tmp_path, ws, url)
        assert got.startswith("ollama | ") and "found ollama" in got, got
        # with no CLI, --non-interactive (auto) takes the same, and extraction uses the Ollama it found
        res = subprocess.run(
            [*SIGNET, "setup", "-y", f"--workspace={ws}", url, "--no-git", "--no-launcher"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 0, res.stderr
        assert f"extraction LLM: ollama (found ollama (answering at {ollama.url}))" in res.stdout
        extraction = yaml.safe_load((ws / "agent.yaml").read_text())["memory"]["pipelineV2"]["extraction"]
        assert extraction == {"provider": "ollama", "model": "qwen3:4b", "endpoint": ollama.url}
        shutil.rmtree(ws)
        ollama.stop()  # an outage: nothing answers there any more
        got = offered_llm(env, tmp_path, ws, url)
        assert got.startswith("none | ") and f"no Ollama at {ollama.url}" in got, got
    finally:
        ollama.stop()


@pytest.mark.timeout(180)
def test_setup_starts_the_daemon_and_opens_the_dashboard(tmp_path: Path) -> None:
    """--start and --open-dashboard run the real `signet start` and `signet dashboard` logic;
    $BROWSER is a fake that records the URL it was given."""
    root = tmp_path / "machine"
    env = make_root(root)
    ws = root / "ws"
    port = free_port()
    browser = fake(root, "browser", f'#!/bin/sh\necho "$@" >> "{root}/browser.calls"\n')
    env = {**env, "SIGNET_PORT": str(port), "BROWSER": str(browser)}
    args = [*SIGNET, "setup", "-y", f"--workspace={ws}", "--embedding=none", "--llm=none", "--no-git"]
    try:
        res = subprocess.run(
            [*args, "--start", "--open-dashboard"], env=env, capture_output=True, text=True, timeout=120
        )
        assert res.returncode == 0, res.stderr
        url = f"http://127.0.0.1:{port}/"
        assert (root / "browser.calls").read_text().split() == [url]
        assert f"opened {url}" in res.stdout and "the daemon is running" in res.stdout
        status = httpx.get(f"{url}api/status", timeout=10).json()
        assert status["pid"] == int((ws / ".daemon" / "pid").read_text())
    finally:
        stop = subprocess.run(
            [*SIGNET, "stop"], env={**env, "SIGNET_WORKSPACE": str(ws)}, capture_output=True, text=True, timeout=60
        )
    assert stop.returncode == 0 and "stopped" in stop.stdout, stop.stderr
    # opening with no daemon (and none started): one reason, exit 1, the workspace still made
    res = subprocess.run([*args, "--open-dashboard"], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1
    assert "dashboard: not opened: the daemon is not running" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and (ws / "agent.yaml").is_file()
    assert (root / "browser.calls").read_text().split() == [url]  # not called again
    # the README's first commands: setup asks nothing and starts nothing
    readme = subprocess.run(
        [*SIGNET, "setup", "--non-interactive"],
        env={**env, "SIGNET_WORKSPACE": str(ws)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert readme.returncode == 0 and not (ws / ".daemon" / "daemon.json").exists(), readme.stderr


@pytest.fixture(autouse=True)
def _need_git() -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
