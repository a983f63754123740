"""A real package (#9, finding 9): the wheel holds the shipped policies, examples, ``py.typed``
and the license; installed in a fresh virtual environment it runs the README's main job from
another directory; the sdist holds everything its tests need, and they pass against the wheel.

Fast and offline: the wheel and sdist are built with the project's backend without build
isolation; the fresh environment gets the wheel without dependencies (``--no-deps``) and sees
the current environment's third-party packages through a ``.pth`` file, never its cedarlite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAIN_JOB = [
    "tools", "check", "cedarlite:coding-agent",
    "--rules", "cedarlite:exec-commands", "--rules", "cedarlite:paths",
]  # fmt: skip


def run(argv: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    for target in ("wheel", "sdist"):
        built = run(
            [sys.executable, "-m", "hatchling", "build", "-t", target, "-d", str(out)], cwd=ROOT
        )
        assert built.returncode == 0, built.stderr
    return out


@pytest.fixture(scope="module")
def venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed (and nothing else of ours)."""
    home = tmp_path_factory.mktemp("venv") / "fresh"
    made = run([sys.executable, "-m", "venv", "--without-pip", str(home)], cwd=home.parent)
    assert made.returncode == 0, made.stderr
    python = home / "bin" / "python"
    site = run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], home)
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    Path(site.stdout.strip(), "dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    wheel = next(dist.glob("*.whl"))
    # --ignore-installed: the environment running the tests may have cedarlite installed
    # (CI installs it); through dependencies.pth pip would see it and skip the wheel.
    installed = run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
         "--ignore-installed", "--no-index", "--quiet", str(wheel)],
        cwd=home.parent,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    return home


def test_the_wheel_holds_policies_examples_types_and_license(dist: Path) -> None:
    names = set(zipfile.ZipFile(next(dist.glob("*.whl"))).namelist())
    assert "cedarlite/py.typed" in names
    assert "cedarlite-0.1.0.dist-info/licenses/LICENSE" in names
    assert {"cedarlite/policies/exec-commands.cedar", "cedarlite/policies/paths.cedar"} <= names
    assert "cedarlite/examples/coding-agent.json" in names
    assert "cedarlite/grammar/cedar.lark" in names
    shipped = {p.name for p in (ROOT / "policies").glob("*.cedar")}
    assert {n.rsplit("/", 1)[1] for n in names if n.startswith("cedarlite/policies/")} == shipped


def test_the_installed_wheel_runs_the_main_job_from_another_directory(
    venv: Path, tmp_path: Path
) -> None:
    where = run([str(venv / "bin" / "python"), "-c", "import cedarlite; print(cedarlite.__file__)"],
                tmp_path)  # fmt: skip
    assert where.stdout.startswith(str(venv)), where  # the wheel, not the checkout
    job = run([str(venv / "bin" / "cedarlite"), *MAIN_JOB], cwd=tmp_path)
    assert job.returncode == 0, job.stderr
    assert job.stdout.splitlines()[-1] == "13/13 calls decided as expected"
    listed = run([str(venv / "bin" / "cedarlite"), "tools", "shipped"], cwd=tmp_path)
    assert "cedarlite:paths" in listed.stdout and str(venv) in listed.stdout


PLUGIN_FILES = ("openclaw.plugin.json", "package.json", "index.js")


def test_the_wheel_ships_the_openclaw_plugin(dist: Path) -> None:
    wheel = zipfile.ZipFile(next(dist.glob("*.whl")))
    for name in PLUGIN_FILES:
        shipped = wheel.read(f"cedarlite/hosts/openclaw_plugin/{name}")
        assert shipped == (ROOT / "cedarlite/hosts/openclaw_plugin" / name).read_bytes(), name


def test_the_installed_wheel_prints_openclaw_settings_naming_its_plugin(
    venv: Path, tmp_path: Path
) -> None:
    import json

    config = tmp_path / "tools.json"
    config.write_text('{"tools": {"profile": "coding"}}')
    cli = str(venv / "bin" / "cedarlite")
    printed = run([cli, "hook", "openclaw", "--print-settings", "--config", str(config),
                   "--rules", "cedarlite:paths"], cwd=tmp_path)  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    plugins = json.loads(printed.stdout)["plugins"]
    (folder,) = plugins["load"]["paths"]
    assert folder.startswith(str(venv)), folder  # the installed copy, not the checkout
    assert sorted(p.name for p in Path(folder).iterdir() if p.is_file()) == sorted(PLUGIN_FILES)
    command = plugins["entries"]["cedarlite"]["config"]["command"]
    assert Path(command[0]).is_absolute() and command[1:5] == [
        "-m",
        "cedarlite",
        "serve",
        "--stdio",
    ]


def test_the_shipped_files_load_through_the_api(venv: Path, tmp_path: Path) -> None:
    code = (
        "from cedarlite import shipped\n"
        "rules = shipped.load_policies('exec-commands', 'paths')\n"
        "print(len(shipped.policy_names()), shipped.example('coding-agent')['calls'][0]['tool'],"
        " rules.label('paths:policy0'))\n"
    )
    out = run([str(venv / "bin" / "python"), "-c", code], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(len(list((ROOT / "policies").glob("*.cedar")))), "exec",
                                  "fs.no-secrets"]  # fmt: skip


def test_the_sdist_tests_pass_against_the_wheel(dist: Path, venv: Path, tmp_path: Path) -> None:
    with tarfile.open(next(dist.glob("*.tar.gz"))) as sdist:
        sdist.extractall(tmp_path, filter="data")
    (source,) = tmp_path.iterdir()
    members = {str(p.relative_to(source)) for p in source.rglob("*") if p.is_file()}
    tracked = run(["git", "ls-files"], cwd=ROOT)
    if tracked.returncode == 0:  # a checkout: the sdist has every file the tests can need
        wanted = {
            f for f in tracked.stdout.splitlines()
            if f.split("/")[0] in ("cedarlite", "grammar", "policies", "examples", "tests", ".ci")
            or f in ("README.md", "LICENSE", "pyproject.toml")
        }  # fmt: skip
        assert wanted <= members, sorted(wanted - members)
    # Those that read the shipped files, the examples and the README, on the wheel's code
    # (`-P`: the extracted sources are not importable).
    python = str(venv / "bin" / "python")
    where = run([python, "-P", "-c", "import cedarlite; print(cedarlite.__file__)"], source)
    assert where.stdout.startswith(str(venv)), where
    tests = ["tests/test_readme.py", "tests/test_cli.py", "tests/test_tools_policies.py",
             "tests/test_exfiltration.py"]  # fmt: skip
    result = run(
        [python, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=source,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_shipped_names_are_listed_and_checked(capsys: pytest.CaptureFixture[str]) -> None:
    from cedarlite import CedarliteError, shipped
    from cedarlite.cli import main

    assert "exec-commands" in shipped.policy_names()
    assert shipped.example_names() == ("coding-agent",)
    assert shipped.load_policies("paths").source == str(shipped.policy_path("paths"))
    with pytest.raises(CedarliteError) as info:
        shipped.policy_text("pahts")
    assert info.value.help == "did you mean `paths`?"
    assert main(["tools", "check", "cedarlite:coding-agnt"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cedarlite:coding-agnt: error[E0910]: no shipped example `coding-agnt`")
    assert main(["tools", "check", *MAIN_JOB[2:]]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "13/13 calls decided as expected"
