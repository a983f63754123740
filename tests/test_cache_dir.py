"""Private cache directories (cedarlite/_cache_dir.py) and the caches built on them: the compile
cache of PolicySet.from_file and the grammar tables of the parsers.

Cache entries are pickles, and loading a pickle runs code: every test here that plants an
entry plants one that would leave a marker file if it were ever loaded, and checks the marker.
"""

from __future__ import annotations

import os
import pickle
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import cedarlite
from cedarlite import _cache_dir
from cedarlite.engine.compiler import CompiledPolicySet
from cedarlite.engine.compiler.cache import cache_key
from cedarlite.errors import CacheError

POLICY = 'permit (principal, action == Action::"read", resource);'
REQUEST = {"principal": 'U::"a"', "action": 'Action::"read"', "resource": 'R::"c"'}


class _Planted:
    """Unpickling this writes ``marker``: a stand-in for an attacker's payload."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "loaded"))


def planted(marker: Path) -> bytes:
    return pickle.dumps(_Planted(marker))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def xdg(tmp_path, monkeypatch):
    """A private XDG_CACHE_HOME for the test."""
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


# ---------------------------------------------------------------------------------------------
# Where the cache lives


def test_default_root_follows_xdg_then_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert Path(_cache_dir.cache_root()) == tmp_path / "x" / "cedarlite"
    # A relative XDG_CACHE_HOME is ignored, as the XDG spec says.
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert Path(_cache_dir.cache_root()) == tmp_path / "home" / ".cache" / "cedarlite"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert Path(_cache_dir.cache_root()) == tmp_path / "home" / ".cache" / "cedarlite"


def test_private_dir_is_created_owner_only(xdg):
    directory = Path(_cache_dir.private_dir("policies"))
    assert directory == xdg / "cedarlite" / "policies"
    assert mode(directory) == 0o700 and mode(directory.parent) == 0o700
    assert directory.stat().st_uid == os.geteuid()
    assert Path(_cache_dir.private_dir("policies")) == directory  # idempotent
    with pytest.raises(ValueError):
        _cache_dir.private_dir("../elsewhere")


@pytest.mark.parametrize("bits", [0o770, 0o777, 0o720, 0o702])
def test_a_directory_others_can_write_is_refused(tmp_path, bits):
    directory = tmp_path / "shared"
    directory.mkdir()
    directory.chmod(bits)
    with pytest.raises(CacheError, match="writable by others") as err:
        _cache_dir.ensure_private(directory)
    assert err.value.source == str(directory) and "chmod 700" in (err.value.help or "")


def test_a_readable_directory_of_ones_own_is_accepted(tmp_path):
    directory = tmp_path / "mine"
    directory.mkdir()
    directory.chmod(0o755)  # others may read, no one else may write: nothing can be planted
    assert _cache_dir.ensure_private(directory) == str(directory)


def test_a_symbolic_link_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(CacheError, match="symbolic link"):
        _cache_dir.ensure_private(link)


def test_a_file_in_the_way_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(CacheError, match="cannot open the cache directory"):
        _cache_dir.ensure_private(tmp_path / "file")


def test_a_directory_of_another_user_is_refused(tmp_path, monkeypatch):
    directory = tmp_path / "theirs"
    directory.mkdir(mode=0o700)
    monkeypatch.setattr(_cache_dir.os, "geteuid", lambda: directory.stat().st_uid + 1)
    with pytest.raises(CacheError, match="belongs to uid"):
        _cache_dir.ensure_private(directory)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a directory to another user")
def test_a_directory_chowned_to_another_user_is_refused(tmp_path):
    directory = tmp_path / "theirs"
    directory.mkdir(mode=0o700)
    os.chown(directory, 65534, 65534)
    with pytest.raises(CacheError, match="belongs to uid 65534"):
        _cache_dir.ensure_private(directory)


# ---------------------------------------------------------------------------------------------
# Entries


def test_store_then_load_round_trips_atomically(tmp_path):
    directory = Path(_cache_dir.ensure_private(tmp_path / "c"))
    assert _cache_dir.load(str(directory), "k1") is None
    assert _cache_dir.store(str(directory), "k1", b"one")
    assert _cache_dir.store(str(directory), "k1", b"two")  # replaced, never appended
    assert _cache_dir.load(str(directory), "k1") == b"two"
    assert [p.name for p in directory.iterdir()] == ["k1"]  # no temporary file left behind
    assert mode(directory / "k1") == 0o600
    for bad in ("../k", "", ".hidden", "a/b", "k\0"):
        with pytest.raises(ValueError):
            _cache_dir.load(str(directory), bad)


def test_an_entry_that_is_a_symbolic_link_is_not_followed(tmp_path):
    directory = Path(_cache_dir.ensure_private(tmp_path / "c"))
    target = tmp_path / "elsewhere"
    target.write_bytes(b"payload")
    (directory / "k").symlink_to(target)
    assert _cache_dir.load(str(directory), "k") is None


def test_entries_are_not_read_once_the_directory_stops_being_private(tmp_path):
    directory = Path(_cache_dir.ensure_private(tmp_path / "c"))
    marker = tmp_path / "marker"
    (directory / "k").write_bytes(planted(marker))
    directory.chmod(0o777)
    with pytest.raises(CacheError):
        _cache_dir.load_pickle(str(directory), "k")
    with pytest.raises(CacheError):
        _cache_dir.store(str(directory), "k", b"x")
    assert not marker.exists()
    directory.chmod(0o700)
    _cache_dir.load_pickle(str(directory), "k")  # the same entry, once private, does load
    assert marker.exists()


def test_a_corrupt_pickle_loads_as_none(tmp_path):
    directory = Path(_cache_dir.ensure_private(tmp_path / "c"))
    full = pickle.dumps({"a": list(range(100))})
    _cache_dir.store(str(directory), "k", full[: len(full) // 2])
    assert _cache_dir.load_pickle(str(directory), "k") is None


# ---------------------------------------------------------------------------------------------
# The compile cache of PolicySet.from_file


def test_compile_cache_in_an_unsafe_directory_is_refused_before_any_read(tmp_path):
    path = tmp_path / "p.cedar"
    path.write_text(POLICY)
    cache = tmp_path / "cache"
    cache.mkdir()
    marker = tmp_path / "marker"
    (cache / (cache_key(POLICY, False) + ".pickle")).write_bytes(planted(marker))
    cache.chmod(0o777)
    with pytest.raises(CacheError, match="writable by others"):
        cedarlite.PolicySet.from_file(path, cache_dir=cache)
    assert not marker.exists()
    # The planted entry sits where a private cache would read it: the check is what stops it.
    cache.chmod(0o700)
    cedarlite.PolicySet.from_file(path, cache_dir=cache)
    assert marker.exists()


def test_a_new_compile_cache_directory_is_owner_only(tmp_path):
    path = tmp_path / "p.cedar"
    path.write_text(POLICY)
    cache = tmp_path / "new" / "cache"
    ps = cedarlite.PolicySet.from_file(path, cache_dir=cache)
    assert mode(cache) == 0o700
    assert [p.name for p in cache.iterdir()] == [cache_key(POLICY, False) + ".pickle"]
    assert cedarlite.is_authorized(REQUEST, ps).allowed


def test_cache_dir_true_is_the_per_user_default(tmp_path, xdg):
    path = tmp_path / "p.cedar"
    path.write_text(POLICY)
    cedarlite.PolicySet.from_file(path, cache_dir=True)
    directory = xdg / "cedarlite" / "policies"
    assert mode(directory) == 0o700
    assert (directory / (cache_key(POLICY, False) + ".pickle")).is_file()
    warm = cedarlite.PolicySet.from_file(path, cache_dir=True)
    assert isinstance(warm._cache["compiled"], CompiledPolicySet) and warm._pending is not None
    assert cedarlite.is_authorized(REQUEST, warm).allowed
    cold = cedarlite.PolicySet.from_file(path, cache_dir=False)
    assert "compiled" not in cold._cache


def test_a_truncated_compile_cache_entry_is_rebuilt_and_replaced(tmp_path):
    path = tmp_path / "p.cedar"
    path.write_text(POLICY)
    cache = tmp_path / "cache"
    cedarlite.PolicySet.from_file(path, cache_dir=cache)
    entry = cache / (cache_key(POLICY, False) + ".pickle")
    good = entry.read_bytes()
    entry.write_bytes(good[: len(good) // 2])
    ps = cedarlite.PolicySet.from_file(path, cache_dir=cache)
    assert ps._pending is None and cedarlite.is_authorized(REQUEST, ps).allowed  # rebuilt
    assert entry.read_bytes() == good


_WORKER = textwrap.dedent(
    """
    import sys
    import cedarlite
    ps = cedarlite.PolicySet.from_file(sys.argv[1], cache_dir=sys.argv[2])
    req = {"principal": 'U::"a"', "action": 'Action::"read"', "resource": 'R::"c"'}
    print(cedarlite.is_authorized(req, ps).decision.value)
    """
)


def test_concurrent_processes_share_one_compile_cache_entry(tmp_path):
    # Many policies, so that writing an entry takes long enough for the processes to overlap.
    text = "\n".join(
        f'permit (principal == U::"u{i}", action == Action::"read", resource) '
        f"when {{ context has k{i} }};"
        for i in range(150)
    )
    path = tmp_path / "p.cedar"
    path.write_text(text + "\n" + POLICY)
    cache = tmp_path / "cache"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(path), str(cache)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            outputs.append(out.strip())
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.kill(proc.pid, 9)
                proc.wait()
    assert outputs == ["Allow"] * 4
    entries = sorted(p.name for p in cache.iterdir())
    assert entries == [cache_key(path.read_text(), False) + ".pickle"]  # no .tmp left over
    warm = cedarlite.PolicySet.from_file(path, cache_dir=cache)
    assert warm._pending is not None and cedarlite.is_authorized(REQUEST, warm).allowed


# ---------------------------------------------------------------------------------------------
# The grammar tables (Lark)

_PARSE_BOTH = textwrap.dedent(
    """
    from cedarlite.lang.parse.lalr import parse_lalr  # (valid text alone never needs the tables)
    from cedarlite.schema import Schema
    ps = parse_lalr('permit (principal, action, resource) when { 1 < 2 };')
    schema = Schema.from_str("entity U; action view appliesTo { principal: U, resource: U };")
    print(len(ps), len(schema.actions))
    """
)


def _run(code: str, env: dict[str, str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_a_grammar_file_planted_where_lark_used_to_cache_is_never_loaded(tmp_path):
    shared_tmp = tmp_path / "tmp"
    shared_tmp.mkdir()
    env = {"TMPDIR": str(shared_tmp), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    # Let Lark's own cache (`cache=True`, as cedarlite used to build both grammars) write its
    # files into this temp dir, then replace each with a payload.
    old_style = textwrap.dedent(
        """
        from lark import Lark
        from cedarlite.lang.parse.lalr_driver import grammar_text
        for name, placeholders in (("cedar.lark", False), ("cedarschema.lark", True)):
            Lark(grammar_text(name), parser="lalr", maybe_placeholders=placeholders, cache=True)
        """
    )
    _run(old_style, env)
    lark_files = sorted(shared_tmp.glob(".lark_cache_*"))
    assert len(lark_files) == 2
    marker = tmp_path / "marker"
    for f in lark_files:
        # Lark's cache format: a hash line, then pickles; the first one is the payload here.
        first_line = f.read_bytes().split(b"\n", 1)[0]
        f.write_bytes(first_line + b"\n" + planted(marker))
    assert _run(_PARSE_BOTH, env) == "1 1"
    assert not marker.exists()
    assert sorted(shared_tmp.iterdir()) == lark_files  # and nothing written there either
    # The files are planted where Lark's own cache looks: it would have run them.
    _run(old_style, env)
    assert marker.exists()


def test_grammar_tables_are_cached_privately_and_reused(tmp_path):
    xdg = tmp_path / "xdg"
    env = {"XDG_CACHE_HOME": str(xdg)}
    assert _run(_PARSE_BOTH, env) == "1 1"
    directory = xdg / "cedarlite" / "grammars"
    entries = sorted(p.name for p in directory.iterdir())
    assert [e.split("-")[0] for e in entries] == ["cedar.lark", "cedarschema.lark"]
    assert mode(directory) == 0o700 and all(mode(directory / e) == 0o600 for e in entries)
    # A second process loads the tables instead of building them: Lark() is never called.
    no_build = "import lark\nlark.Lark.__init__ = None\n" + _PARSE_BOTH
    assert _run(no_build, env) == "1 1"


def test_without_a_private_directory_the_grammar_is_built_and_nothing_is_read(tmp_path):
    xdg = tmp_path / "xdg"
    env = {"XDG_CACHE_HOME": str(xdg)}
    _run(_PARSE_BOTH, env)  # real entries, under their real names
    directory = xdg / "cedarlite" / "grammars"
    marker = tmp_path / "marker"
    for entry in directory.iterdir():
        entry.write_bytes(planted(marker))
    directory.chmod(0o777)
    assert _run(_PARSE_BOTH, env) == "1 1"  # built from the grammar instead
    assert not marker.exists()
    directory.chmod(0o700)
    _run(_PARSE_BOTH, env)
    assert marker.exists()  # the same entries in a private directory are loaded
