"""Optional installs: the base install runs chapters 01-12 and the demo; a missing extra is one
line with the pip command (``agentlab.extras``). Missing packages are simulated by blocking
their import (``sys.modules[name] = None``) in a fresh interpreter."""
from __future__ import annotations

import subprocess
import sys

import pytest

from agentlab.extras import EXTRAS, MissingExtraError, missing, require

# what only the extras bring
EXTRA_ONLY = ["matplotlib", "ipywidgets", "IPython", "jupyterlab", "nbclient", "nbformat", "numpy",
              "scipy", "pandas", "pyarrow", "tqdm", "celery", "kombu", "redis", "opentelemetry"]


def _python(code: str, blocked: list[str], cwd=None) -> subprocess.CompletedProcess:
    block = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in blocked)
    return subprocess.run([sys.executable, "-c", block + code], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def test_a_missing_extra_is_one_line_with_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "celery", None)
    with pytest.raises(MissingExtraError) as caught:
        require("fleet")
    err = caught.value
    assert (err.code, err.details["extra"], err.details["missing"]) == ("missing_extra", "fleet",
                                                                        ["celery"])
    assert "\n" not in str(err) and "pip install 'agentlab[fleet]'" in str(err)
    assert isinstance(err, ImportError) and err.name == "celery"
    assert missing("experiments") == []  # installed here (the dev extra has everything)


@pytest.mark.parametrize("module, extra", [("agentlab.fleet", "fleet"),
                                           ("agentlab.experiments", "experiments"),
                                           ("agentlab.widgets", "notebooks"),
                                           ("agentlab.viz", "notebooks")])
def test_a_chapter_without_its_extra_says_which_pip_command(module, extra):
    proc = _python(f"import {module}", [EXTRAS[extra][1][0]])
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("agentlab.extras.MissingExtraError: [missing_extra]")
    assert f"pip install 'agentlab[{extra}]'" in last


def test_the_base_install_runs_chapters_01_to_12_and_the_demo(tmp_path):
    chapters = ["llm", "sim", "tools", "executor", "messages", "state", "runtime", "research",
                "timeouts", "dag", "checkpoints", "observe", "tokens", "errors"]
    code = ("import importlib\n"
            f"for name in {chapters!r}: importlib.import_module('agentlab.' + name)\n"
            "from agentlab.cli import main\n"
            f"raise SystemExit(main(['demo', '--output-dir', {str(tmp_path)!r}]))\n")
    proc = _python(code, EXTRA_ONLY, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "completed (finished)" in proc.stdout and (tmp_path / "asyncio-report.md").exists()


def test_environment_yml_installs_what_the_dev_extra_does():
    import re
    tomllib = pytest.importorskip("tomllib")
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra, reqs in project["optional-dependencies"].items():
        wanted += [r for r in reqs if not r.startswith("agentlab[")]
    conda_names = {"redis": "redis-py", "prometheus-client": "prometheus_client"}
    env = (root / "environment.yml").read_text()
    listed = set(re.findall(r"^\s+- ([A-Za-z0-9_.-]+)", env, re.M))
    names = {re.split(r"[\[<>=]", r)[0] for r in wanted}
    missing_names = sorted(n for n in names if conda_names.get(n, n) not in listed)
    assert missing_names == [], f"add these to environment.yml: {missing_names}"
    assert set(EXTRAS) >= {"notebooks", "fleet", "experiments", "otel"}
