"""keyguard as a release installs it: one `keyguard` import root, a wheel and an sdist that
twine accepts, and an install that lives beside PyPI's `formats` and `guard` packages and beside
a project's own `formats/` package."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

import keyguard

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
#: The folders at the repository's root that the build maps under `keyguard.`.
MAPPED = ("formats", "guard", "sparkio")


def _run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
         timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """A command with the environment a user's shell has (no PYTHONPATH of the suite's)."""
    if env is None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(list(args), capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=timeout)
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done


def test_every_package_folder_is_mapped_under_keyguard() -> None:
    setuptools = PYPROJECT["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"keyguard": "keyguard",
                                         **{f"keyguard.{p}": p for p in MAPPED}}
    on_disk = {"keyguard"} | {
        "keyguard." + ".".join(init.parent.relative_to(REPO).parts)
        for p in MAPPED for init in (REPO / p).rglob("__init__.py")}
    assert set(setuptools["packages"]) == on_disk


def test_one_version_source() -> None:
    assert "version" not in PYPROJECT["project"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "keyguard.__version__"}
    from importlib.metadata import version
    assert version("keyguard") == keyguard.__version__
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert f"## [{keyguard.__version__}] - " in changelog


def test_the_cli_says_its_version() -> None:
    done = _run(sys.executable, "-m", "keyguard", "--version")
    assert done.stdout.strip() == f"keyguard {keyguard.__version__}"


def test_classifiers_name_every_python_the_suite_runs_on() -> None:
    classifiers = PYPROJECT["project"]["classifiers"]
    floor = PYPROJECT["project"]["requires-python"].removeprefix(">=")
    assert f"Programming Language :: Python :: {floor}" in classifiers
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert f"Programming Language :: Python :: {running}" in classifiers


def test_dependencies_have_no_unexplained_upper_bound() -> None:
    project = PYPROJECT["project"]
    specs = [*project["dependencies"],
             *(d for extra in project["optional-dependencies"].values() for d in extra)]
    capped = {d for d in specs if "<" in d.split(";")[0]}
    lines = (REPO / "pyproject.toml").read_text().splitlines()
    for spec in capped:
        where = [n for n, line in enumerate(lines) if f'"{spec}"' in line]
        assert where, spec
        for i in where:
            reason = [line for line in lines[max(0, i - 4):i] if line.lstrip().startswith("#")]
            assert any("<" in line or "cap" in line for line in reason), (
                f"an upper bound without a reason written beside it: {spec} (line {i + 1})")
    assert not any(d.startswith("typer") and "<" in d for d in specs)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`python -m build` of this checkout: a wheel and an sdist, as a release makes them."""
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--outdir", str(out), str(REPO), timeout=900)
    return out


@pytest.mark.slow
def test_the_wheel_holds_one_import_root_and_twine_accepts_both(dist: Path) -> None:
    (wheel,) = dist.glob("keyguard-*.whl")
    (sdist,) = dist.glob("keyguard-*.tar.gz")
    assert wheel.name.startswith(f"keyguard-{keyguard.__version__}-")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert {n.split("/")[0] for n in names} == {
        "keyguard", f"keyguard-{keyguard.__version__}.dist-info"}
    for needed in ("keyguard/__init__.py", "keyguard/py.typed",
                   "keyguard/formats/registry/http.py", "keyguard/guard/cli/__init__.py",
                   "keyguard/guard/compat/known_differences.json", "keyguard/sparkio/writer.py"):
        assert needed in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    with tarfile.open(sdist) as t:
        members = {m.name.split("/", 1)[1] for m in t.getmembers() if "/" in m.name}
    assert {"LICENSE", "CHANGELOG.md", "formats/plan.py", "keyguard/__init__.py"} <= members
    done = _run(sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist))
    assert done.stdout.count("PASSED") == 2


#: A project's own `formats` package, in the directory a user runs keyguard from.
THEIR_FORMATS = "raise ImportError('this is the project’s own formats package')\n"

#: A Spark write and read back through the installed wheel (run by the venv's Python).
SPARK_WRITE = """
import json, sys
import keyguard, keyguard.sparkio as sparkio
from pyspark.sql import SparkSession
bootstrap, topic = sys.argv[1], sys.argv[2]
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.pyspark.python", sys.executable).getOrCreate())
df = spark.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, name STRING")
summary = sparkio.write_upsert(df, topic=topic, **{
    "properties.bootstrap.servers": bootstrap, "primary-key": "id",
    "key.format": "json", "value.format": "json"})
print(json.dumps({"file": keyguard.__file__, "records": summary.records}))
spark.stop()
"""


@pytest.mark.slow
@pytest.mark.spark
def test_the_wheel_lives_beside_pypi_formats_and_guard(dist: Path, tmp_path: Path,
                                                       kafka_bootstrap: str) -> None:
    from broker import new_topic

    (wheel,) = dist.glob("keyguard-*.whl")
    venv = tmp_path / "venv"
    # keyguard's dependencies come from this interpreter's site-packages; keyguard itself,
    # and PyPI's `formats` and `guard`, are installed into the venv.
    _run(sys.executable, "-m", "venv", "--system-site-packages", str(venv))
    python = str(venv / "bin" / "python")
    # --ignore-installed: the interpreter's own keyguard (an editable install of this checkout)
    # must not stand in for the wheel.
    pip = [python, "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed"]
    _run(*pip, str(wheel))
    _run(*pip, "formats==0.1.1", "guard==1.0.1")  # after keyguard, as the failure report had it
    site = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"
                ).stdout.strip()
    top = {p.name.removesuffix(".py") for p in Path(site).iterdir()
           if not p.name.endswith(".dist-info")}
    assert {"keyguard", "formats", "guard"} <= top and "sparkio" not in top

    work = tmp_path / "their-project"
    (work / "formats").mkdir(parents=True)
    (work / "formats" / "__init__.py").write_text(THEIR_FORMATS)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    version = _run(str(venv / "bin" / "keyguard"), "--version", cwd=work, env=env)
    assert version.stdout.strip() == f"keyguard {keyguard.__version__}"
    rules = _run(str(venv / "bin" / "keyguard"), "rules", "KG101", cwd=work, env=env)
    assert "key-field-added" in rules.stdout
    imported = _run(python, "-c", "import keyguard.guard.check, keyguard.formats.registry, "
                    "keyguard; print(keyguard.__file__)", cwd=work, env=env)
    assert imported.stdout.strip().startswith(site), "the wheel's keyguard, not the checkout's"

    topic = new_topic(kafka_bootstrap, 1)
    script = tmp_path / "write.py"
    script.write_text(SPARK_WRITE)
    wrote = _run(python, str(script), kafka_bootstrap, topic, cwd=work, env=env, timeout=600)
    last = wrote.stdout.strip().splitlines()[-1]
    assert '"records": 2' in last and site in last

    # Uninstalling PyPI's packages takes nothing of keyguard's with it.
    _run(python, "-m", "pip", "uninstall", "-q", "-y", "formats", "guard")
    again = _run(str(venv / "bin" / "keyguard"), "--version", cwd=work, env=env)
    assert again.stdout.strip() == f"keyguard {keyguard.__version__}"
    _run(python, "-c", "import keyguard.formats.codec, keyguard.guard.check", cwd=work, env=env)
