"""Every advertised Python compiles every module (scripts/check_pythons.py; .ci/run also installs
the package and runs the demo on each). A version with no interpreter here is skipped."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("check_pythons", ROOT / "scripts" / "check_pythons.py")
check_pythons = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_pythons)
FOUND = check_pythons.find_pythons()


@pytest.mark.parametrize("version", check_pythons.ADVERTISED)
def test_every_module_compiles_on_each_advertised_python(version):
    if version not in FOUND:
        pytest.skip(f"no Python {version} interpreter here (pyenv or python{version} on PATH)")
    ok, text = check_pythons.compile_all(FOUND[version])
    assert ok, text


def test_a_lone_surrogate_in_a_docstring_is_caught(tmp_path, monkeypatch):
    """What broke 3.13 (issue 24): the check must see it wherever it runs."""
    newest = max(FOUND, key=lambda v: tuple(map(int, v.split("."))))
    if newest != "3.13":
        pytest.skip("needs Python 3.13, which refuses it at compile time")
    (tmp_path / "agentlab").mkdir()
    (tmp_path / "agentlab" / "bad.py").write_text('"""a \\ud800 b"""\n', encoding="utf-8",
                                                 errors="surrogatepass")
    monkeypatch.setattr(check_pythons, "ROOT", tmp_path)
    ok, text = check_pythons.compile_all(FOUND["3.13"])
    assert not ok and "bad.py" in text
