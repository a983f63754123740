"""``cedarlite hook claude-code`` through the per-user decision service: the same payloads
give the same answers and decision-log lines through the service and in-process; loop
detection spans hook processes through it; a directory or socket that is not private, a
hung service, ``--no-service`` all leave the hook deciding in-process. The hook starts the
service in the background; each test stops it by the process id its lock file holds."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hook_support import pre_tool_use
from serve_support import ENV, SocketClient, short_dir, wait_for

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "claude-code"
SERVICE_ENV = {k: v for k, v in ENV.items() if k != "CEDARLITE_NO_SERVICE"}
OTHER_UID = 65534


@dataclass
class Hook:
    """A project (the example's .claude/ files) and the hook's state directory."""

    root: Path
    state: Path
    log: Path

    def args(self, *extra: str, config: Path | None = None) -> list[str]:
        rules = ["cedarlite:exec-commands", "cedarlite:paths", str(self.root / "rules.cedar")]
        return [
            sys.executable,
            "-m",
            "cedarlite",
            "hook",
            "claude-code",
            "--config",
            str(config or self.root / "cedarlite.json"),
            *(w for r in rules for w in ("--rules", r)),
            "--state-dir",
            str(self.state),
            "--decision-log",
            str(self.log),
            *extra,
        ]

    def event(self, tool: str, tool_input: Any, **fields: Any) -> bytes:
        return json.dumps(pre_tool_use(str(self.root), tool, tool_input, **fields)).encode()

    def run(
        self,
        data: bytes,
        *extra: str,
        service: bool = True,
        env: dict[str, str] | None = None,
        **kw: Any,
    ) -> Answer:
        args = self.args(*extra, **kw) if service else self.args("--no-service", *extra, **kw)
        env = SERVICE_ENV if env is None else env
        done = subprocess.run(args, input=data, capture_output=True, timeout=60, env=env)
        return Answer(done.returncode, done.stdout.decode(), done.stderr.decode())

    def serve_dir(self) -> Path:
        return self.state / "serve"

    def service_pids(self) -> list[int]:
        pids = []
        for lock in self.serve_dir().glob("*.lock") if self.serve_dir().is_dir() else ():
            text = lock.read_text().strip()
            if text.isdigit() and _alive(int(text)):
                pids.append(int(text))
        return pids

    def socket(self) -> str:
        found = list(self.serve_dir().glob("*.sock"))
        assert len(found) == 1, found
        return str(found[0])

    def start_service(self, env: dict[str, str] | None = None) -> None:
        """Have the hook start the service (two calls: the first creates the state
        directory), and wait until it answers."""
        warm = self.event("Read", {"file_path": str(self.root / "x")}, session_id="warm-up")
        for _ in range(2):
            assert self.run(warm, env=env).code == 0
        assert wait_for(lambda: self._answers(), timeout=60)

    def _answers(self) -> bool:
        try:
            client = SocketClient(self.socket(), timeout=5)
        except (OSError, AssertionError):
            return False
        ok = client.ask("health")["ok"] is True
        client.close()
        return ok

    def health(self) -> dict[str, Any]:
        client = SocketClient(self.socket())
        try:
            return client.ask("health")
        finally:
            client.close()


@dataclass
class Answer:
    code: int
    stdout: str
    stderr: str

    @property
    def decision(self) -> str:
        return str(json.loads(self.stdout)["hookSpecificOutput"]["permissionDecision"])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _started_for(state: Path) -> set[int]:
    """The pids of processes whose command line names ``state``: a service a hook spawned in
    the background has no lock file until it is up, and a test may end before that."""
    needle = os.fsencode(str(state))
    pids = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            with contextlib.suppress(OSError):
                if needle in (entry / "cmdline").read_bytes():
                    pids.add(int(entry.name))
    return pids


def stop_services(hook: Hook) -> None:
    """SIGTERM every service of the hook's state directory by pid (from its lock files, and any
    still starting); SIGKILL after 15 s."""
    for pid in sorted({*hook.service_pids(), *_started_for(hook.state)}):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGTERM)
        if not wait_for(lambda pid=pid: not _alive(pid), timeout=15):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def new_hook(name: str = "a", root: Path | None = None) -> Iterator[Hook]:
    """A hook of a new project (or of the project ``root``) with its own state directory
    and decision log."""
    base = short_dir()
    if root is None:
        root = base / "app"
        root.mkdir()
        for file in ("cedarlite.json", "rules.cedar"):
            shutil.copy(EXAMPLE / file, root / file)
    hook = Hook(root, base / "state", base / f"{name}.jsonl")
    try:
        yield hook
    finally:
        stop_services(hook)
        shutil.rmtree(base, ignore_errors=True)


def payloads(hook: Hook) -> list[bytes]:
    """Claude Code events: built-in tools, MCP tools, protected writes, post events, and
    input the hook must refuse."""
    r = hook.root
    events = [
        hook.event("Bash", {"command": "git status", "description": "Show status"}),
        hook.event("Bash", {"command": "rm -rf /"}),
        hook.event("Bash", {"command": "cat ~/.ssh/id_rsa"}),
        hook.event("Read", {"file_path": str(r / "README.md")}),
        hook.event("Read", {"file_path": "/etc/shadow"}),
        hook.event("Write", {"file_path": str(r / "a.txt"), "content": "hi"}),
        hook.event("Write", {"file_path": str(r / "cedarlite.json"), "content": "{}"}),
        hook.event(
            "Edit",
            {"file_path": str(r / ".claude/settings.json"), "old_string": "a", "new_string": "b"},
        ),
        hook.event(
            "MultiEdit",
            {
                "file_path": str(r / "m.py"),
                "edits": [
                    {"old_string": "a", "new_string": "b"},
                    {"old_string": "c", "new_string": "d"},
                ],
            },
        ),
        hook.event("WebFetch", {"url": "https://example.com", "prompt": "p"}),
        hook.event(
            "mcp__github__create_issue",
            {"repo": "a/b", "title": "t"},
            mcp_server={"name": "github", "source": "user"},
        ),
        hook.event("mcp__github__delete_repo", {"repo": "a/b"}),
        hook.event("TodoWrite", {"todos": []}),
        hook.event("Bash", {"command": "ls"}, agent_id="sub-1", agent_type="reviewer"),
        hook.event(
            "Bash",
            {"command": "ls"},
            hook_event_name="PostToolUse",
            tool_response={"stdout": "a", "stderr": ""},
        ),
        hook.event("Bash", {"command": "ls"}, hook_event_name="PostToolUseFailure", error="x"),
        hook.event("Bash", {"command": 7}),
        hook.event("Bash", {"command": "ls"}, hook_event_name="SessionStart"),
        b"{not json",
        b"",
        '{"tool_name": "Bash", "x": "\udcff"}'.encode("utf-8", "surrogatepass"),
    ]
    return events


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def log_lines(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        entry = json.loads(line)
        del entry["ts"], entry["latency_us"]
        out.append(entry)
    return out


def test_answers_and_decision_logs_are_identical_either_way() -> None:
    with new_hook("local") as local, new_hook("served", local.root) as served:
        served.start_service()
        before = served.health()["requests"]
        events = payloads(local)
        # The same project and event bytes; each path its own state directory and log.
        for event in events:
            a = local.run(event, service=False)
            b = served.run(event, service=True)
            assert (a.code, a.stdout) == (b.code, b.stdout), event
            assert a.stderr.splitlines()[-1:] == b.stderr.splitlines()[-1:], event
        # Every event went through the service (and this test's health request), but for
        # input that is not UTF-8: the in-process hook reports it.
        utf8 = [e for e in events if _is_utf8(e)]
        assert len(utf8) == len(events) - 1
        assert served.health()["requests"] - before == len(utf8) + 1
        served_lines = [e for e in log_lines(served.log) if e["session"] != "warm-up"]
        assert log_lines(local.log) == served_lines
        assert len(log_lines(local.log)) >= 12


def test_loop_detection_across_hook_processes_via_the_service(tmp_path: Path) -> None:
    with new_hook() as hook:
        config = hook.root / "loops.json"
        data = json.loads((EXAMPLE / "cedarlite.json").read_text())
        data["config"]["tools"]["loopDetection"] = {
            "enabled": True,
            "warningThreshold": 1,
            "criticalThreshold": 2,
            "globalCircuitBreakerThreshold": 3,
        }
        config.write_text(json.dumps(data))
        warm = hook.event("Read", {"file_path": "/x"}, session_id="warm-up")
        for _ in range(2):
            hook.run(warm, config=config)
        assert wait_for(lambda: hook.service_pids() != [] and hook._answers(), timeout=60)
        before = hook.health()["requests"]
        response = {"stdout": "On branch main", "stderr": "", "interrupted": False}
        decisions = []
        for i in range(5):
            call = {"session_id": "loop-session", "tool_use_id": f"toolu_{i}"}
            pre = hook.run(hook.event("Bash", {"command": "git status"}, **call), config=config)
            decisions.append(pre.decision)
            if pre.decision != "allow":
                break
            post = hook.event(
                "Bash",
                {"command": "git status"},
                hook_event_name="PostToolUse",
                tool_response=response,
                **call,
            )
            assert hook.run(post, config=config).code == 0
        assert decisions == ["allow", "allow", "allow", "deny"]
        assert hook.health()["requests"] - before == 8


def test_no_service_and_the_environment_opt_out() -> None:
    with new_hook() as hook:
        event = hook.event("Bash", {"command": "git status"})
        for _ in range(3):
            assert hook.run(event, service=False).decision == "allow"
        assert not hook.serve_dir().exists()
        env = {**SERVICE_ENV, "CEDARLITE_NO_SERVICE": "1"}
        for _ in range(2):
            done = subprocess.run(
                hook.args(), input=event, capture_output=True, env=env, timeout=60
            )
            assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
        assert not hook.serve_dir().exists()


def test_the_service_starts_once_and_exits_when_idle() -> None:
    with new_hook() as hook:
        hook.start_service()
        pids = hook.service_pids()
        assert len(pids) == 1
        args = Path(f"/proc/{pids[0]}/cmdline").read_bytes().split(b"\0")
        assert b"--idle-exit" in args and args[args.index(b"--idle-exit") + 1] == b"1800"
        mode = stat.S_IMODE(os.stat(hook.serve_dir()).st_mode)
        assert mode == 0o700 and stat.S_IMODE(os.stat(hook.socket()).st_mode) == 0o600
        # More hook calls (several at once) use it; none starts another.
        procs = [
            subprocess.Popen(
                hook.args(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=SERVICE_ENV
            )
            for _ in range(6)
        ]
        outs = [p.communicate(hook.event("Bash", {"command": "ls"}), timeout=60)[0] for p in procs]
        assert all(b'"allow"' in out for out in outs)
        assert hook.service_pids() == pids
    # The idle exit itself, on a short period.
    with new_hook() as hook:
        hook.run(hook.event("Bash", {"command": "ls"}))  # creates the state directory
        directory = hook.serve_dir()
        directory.mkdir(mode=0o700)
        args = [
            sys.executable,
            "-m",
            "cedarlite",
            "serve",
            "--claude-code",
            "--socket",
            str(directory / "s.sock"),
            "--config",
            str(hook.root / "cedarlite.json"),
            "--state-dir",
            str(hook.state),
            "--idle-exit",
            "1",
        ]
        proc = subprocess.Popen(args, env=SERVICE_ENV, stderr=subprocess.PIPE)
        try:
            assert proc.wait(60) == 0
            assert b"idle for 1 s: stopping" in proc.stderr.read()  # type: ignore[union-attr]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_a_world_writable_directory_is_not_used() -> None:
    with new_hook() as hook:
        hook.start_service()
        os.chmod(hook.serve_dir(), 0o777)
        try:
            before = hook.health()["requests"]
            answer = hook.run(hook.event("Bash", {"command": "git status"}))
            assert answer.decision == "allow"
            assert "the service directory is not private: deciding in-process" in answer.stderr
            assert hook.health()["requests"] == before + 1  # the health request alone
        finally:
            os.chmod(hook.serve_dir(), 0o700)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_a_socket_of_another_user_is_not_used() -> None:
    with new_hook() as hook:
        hook.start_service()
        os.chown(hook.socket(), OTHER_UID, -1)
        before = hook.health()["requests"]
        answer = hook.run(hook.event("Bash", {"command": "rm -rf /"}))
        assert answer.decision == "deny"
        assert "the service socket is not this user's: deciding in-process" in answer.stderr
        assert hook.health()["requests"] == before + 1
        # A directory of another user: the same.
        os.chown(hook.socket(), 0, -1)
        os.chown(hook.serve_dir(), OTHER_UID, -1)
        try:
            answer = hook.run(hook.event("Bash", {"command": "git status"}))
            assert answer.decision == "allow" and "not private" in answer.stderr
        finally:
            os.chown(hook.serve_dir(), 0, -1)


def test_a_hung_service_leaves_the_decision_to_the_hook_within_its_deadline() -> None:
    with new_hook() as hook:
        hook.start_service()
        (pid,) = hook.service_pids()
        os.kill(pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            answer = hook.run(hook.event("Bash", {"command": "rm -rf /"}), "--deadline", "2")
            elapsed = time.monotonic() - started
        finally:
            os.kill(pid, signal.SIGCONT)
        assert answer.decision == "deny" and "exec.dangerous" in answer.stdout
        assert elapsed < 2 + 5  # the settings' timeout: deadline + 5 s


def test_the_client_path_imports_almost_nothing() -> None:
    with new_hook() as hook:
        hook.start_service()
        done = subprocess.run(
            [sys.executable, "-X", "importtime", *hook.args()[1:]],
            input=hook.event("Bash", {"command": "ls"}),
            capture_output=True,
            env=SERVICE_ENV,
            timeout=60,
        )
        assert b'"allow"' in done.stdout
        loaded = {
            line.split("|")[-1].strip()
            for line in done.stderr.decode().splitlines()
            if line.startswith("import time:") and "|" in line
        }
        mine = sorted(m for m in loaded if m.startswith("cedarlite"))
        assert mine == [
            "cedarlite",
            "cedarlite._sha",
            "cedarlite._version",
            "cedarlite.hosts",
            "cedarlite.hosts.serve",
            "cedarlite.hosts.serve.client",
        ]
        for heavy in ("typing", "re", "json", "socket", "subprocess", "logging", "threading"):
            assert heavy not in loaded, heavy


def test_the_client_reads_the_command_line_as_the_hook_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cedarlite import _cache_dir
    from cedarlite.hosts import claude_code
    from cedarlite.hosts.serve import client

    assert client._DEFAULT_DEADLINE == claude_code.DEFAULT_DEADLINE
    assert client._MAX_INPUT == claude_code.MAX_INPUT
    assert set(client._FLAGS) == set(claude_code._FLAGS)
    monkeypatch.setenv("XDG_CACHE_HOME", "/tmp/xdg-test")
    assert client._cache_root() == _cache_dir.cache_root()
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert client._cache_root() == _cache_dir.cache_root()
    monkeypatch.delenv(client.NO_SERVICE)
    target, rest = client.read_target(
        [
            "claude-code",
            "--config=c.json",
            "--rules",
            "r.cedar",
            "--rules",
            "cedarlite:paths",
            "--deadline",
            "3",
        ]
    )
    assert target is not None and rest[0] == "claude-code"
    assert target.config == os.path.abspath("c.json") and target.deadline == 3
    assert target.rules == [os.path.abspath("r.cedar"), "cedarlite:paths"]
    for words in (
        ["claude-code", "--config", "c", "--no-service"],
        ["claude-code", "--help"],
        ["claude-code", "--config"],
        ["claude-code", "--config", "c", "--deadline", "x"],
        ["claude-code", "--print-settings", "--config", "c"],
    ):
        target, rest = client.read_target(words)
        assert target is None and "--no-service" not in rest


def test_a_service_that_cannot_start_is_not_started_at_every_call() -> None:
    with new_hook() as hook:
        broken = hook.root / "broken.json"
        broken.write_text('{"config": {"tools": {"profile": "codin"}}}')
        event = hook.event("Bash", {"command": "ls"})
        for _ in range(2):  # the first creates the state directory, the second starts one
            answer = hook.run(event, config=broken)
            assert answer.decision == "deny" and "codin" in answer.stdout
        assert wait_for(lambda: list(hook.serve_dir().glob("*.failed")) != [], timeout=60)
        (failed,) = hook.serve_dir().glob("*.failed")
        assert "codin" in failed.read_text()
        assert wait_for(lambda: hook.service_pids() == [], timeout=30)
        (log,) = hook.serve_dir().glob("*.log")
        size = log.stat().st_size
        for _ in range(3):
            assert hook.run(event, config=broken).decision == "deny"
        time.sleep(1)
        assert log.stat().st_size == size and hook.service_pids() == []


def test_unreadable_input_blocks_through_the_service_path() -> None:
    with new_hook() as hook:
        hook.start_service()
        for kwargs in ({"stdin": subprocess.DEVNULL}, {"preexec_fn": lambda: os.close(0)}):
            done = subprocess.run(
                hook.args(),
                capture_output=True,
                env=SERVICE_ENV,
                timeout=60,
                **kwargs,
            )
            assert done.returncode == 2 and done.stdout == b""
            assert b"cedarlite: blocked" in done.stderr


def test_a_service_of_another_project_does_not_answer_for_this_one() -> None:
    # The workspace of paths is the hook's CLAUDE_PROJECT_DIR: a service started from project
    # `other` must not decide project `app`'s calls (a write into `other` is outside `app`).
    with new_hook() as hook:
        other = hook.root.parent / "other"
        other.mkdir()
        hook.start_service({**SERVICE_ENV, "CLAUDE_PROJECT_DIR": str(other)})
        write = hook.event("Write", {"file_path": str(other / "a.txt"), "content": "x"})
        env = {**SERVICE_ENV, "CLAUDE_PROJECT_DIR": str(hook.root)}
        assert hook.run(write, service=False, env=env).decision == "deny"
        assert hook.run(write, env=env).decision == "deny"


def test_a_service_never_answers_with_rules_older_than_the_files() -> None:
    # The in-process hook reads the files at every call: so must the service's answer. A
    # tightened file is decided at once (not at the watcher's next poll), and a file that no
    # longer loads is not decided with the set loaded before it (the hook blocks and says why).
    with new_hook() as hook:
        hook.start_service()
        config = hook.root / "cedarlite.json"
        data = json.loads(config.read_text())
        event = hook.event("Bash", {"command": "git status"})
        assert hook.run(event).decision == "allow"
        data["config"]["tools"]["deny"].append("exec")
        config.write_text(json.dumps(data))
        assert hook.run(event).decision == "deny"
        config.write_text('{"config": {"tools": {"profile": "codin"}}}')
        assert wait_for(lambda: hook.health()["status"] == "degraded", timeout=30)
        answer = hook.run(event)
        assert answer.decision == "deny" and "codin" in answer.stdout
