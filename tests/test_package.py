"""The package surface: lazy exports, a light import, the error contract."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from importlib import metadata
from pathlib import Path

import agentlab
from agentlab import errors


def test_import_is_light_and_offline():
    code = ("import sys, agentlab; heavy = [m for m in ('openai', 'tiktoken', 'matplotlib', "
            "'ipywidgets', 'httpx2', 'numpy') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_all_lists_only_real_names():
    assert "AgentRuntime" in agentlab.__all__
    assert agentlab.AgentError is errors.AgentError
    try:
        agentlab.NoSuchThing
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("unknown attribute did not raise")


def test_error_contract():
    err = errors.ProviderError("rate_limited", "slow down", retryable=True, details={"status": 429})
    assert isinstance(err, errors.AgentError)
    assert (err.code, err.message, err.retryable, err.details) == \
        ("rate_limited", "slow down", True, {"status": 429})
    assert err.to_dict()["type"] == "ProviderError"
    assert str(err) == "[rate_limited] slow down"
    for cls in (errors.ToolError, errors.ConfigError, errors.CheckpointError, errors.StateError):
        assert issubclass(cls, errors.AgentError)


def test_a_wheel_installed_in_a_fresh_venv_runs_the_demo(tmp_path):
    """``pip install .`` must work, not only ``pip install -e .``: package data inside the
    package, the console script, nothing read from the source tree. The wheel is built from a
    copy of what the build needs and installed with ``--no-deps`` into a new venv that sees
    this environment's dependencies (no network, no index)."""
    root = Path(__file__).resolve().parents[1]
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy(root / name, src)
    for folder in ("agentlab", "data"):  # data/ is mapped into the wheel as agentlab/data
        shutil.copytree(root / folder, src / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    try:  # the dev extra brings a setuptools that can build us: no index needed
        local = int(metadata.version("setuptools").split(".")[0]) >= 77
    except metadata.PackageNotFoundError:
        local = False
    how = ["--no-build-isolation", "--no-index"] if local else []  # else pip fetches setuptools
    built = subprocess.run([*pip, "wheel", "--no-deps", *how, "-w", str(tmp_path / "dist"),
                            str(src)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    wheel = next((tmp_path / "dist").glob("agentlab-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert {"agentlab/data/tiktoken/o200k_base.tiktoken", "agentlab/data/models.json",
            "agentlab/data/corpus/index.json"} <= names
    assert not any(n.startswith(("agentlab/data/providers", "agentlab/data/sweeps", "data/"))
                   for n in names)  # the repository's datasets stay in the repository
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # this environment's site-packages, for the dependencies only (its .pth files, such as an
    # editable agentlab, are not processed from a path listed in a .pth)
    (Path(site) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([*pip, "--python", str(py), "install", "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    away = tmp_path / "elsewhere"  # not the project folder: nothing to pick up by accident
    away.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENTLAB_MODEL")}
    where = subprocess.run([str(py), "-c", "import agentlab; print(agentlab.__file__)"], cwd=away,
                           env=env, check=True, capture_output=True, text=True).stdout
    assert where.startswith(site), where
    demo = subprocess.run([str(venv / "bin" / "agentlab"), "demo", "--output-dir", "out"],
                          cwd=away, env=env, capture_output=True, text=True, timeout=120)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "| completed (finished)" in demo.stdout and (away / "out" / "asyncio-report.md").exists()
    lost = subprocess.run([str(venv / "bin" / "agentlab"), "exercise", "list"], cwd=away,
                          env=env, capture_output=True, text=True, timeout=60)
    assert lost.returncode == 2 and "run this from the folder you cloned agentlab into" in lost.stderr
