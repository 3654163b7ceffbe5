"""The JupyterLab setting that keeps a student's saved widgets working.

JupyterLab's widget manager saves the widget state into the notebook only when its setting
*Save Widget State Automatically* (``saveState``) is on, and it is off by default. With it off,
Run All + save writes new outputs that point to new widget models but keeps the old state, and
the notebook reopens with "Error displaying widget: model not found" (measured in JupyterLab
4.6, see ``scripts/check_notebooks_browser.py``).

agentlab ships the setting as a JupyterLab *settings override*: JupyterLab reads every
``{sys.prefix}/share/jupyter/lab/settings/overrides.d/*.json`` as defaults (jupyterlab_server's
``_get_overrides``), so the file changes the default and a user's own choice still wins.

- ``pip install .`` (or a wheel) puts ``agentlab.json`` there (``[tool.setuptools.data-files]``
  in ``pyproject.toml``);
- an editable install (``pip install -e .``) does not install data files (setuptools skips
  them in editable wheels), so run once, in the environment JupyterLab runs from::

      python -m agentlab.widgets.lab_settings            # install or check the file
      python -m agentlab.widgets.lab_settings --check    # exit 1 if it is missing

With it comes a Jupyter server config file, ``{sys.prefix}/etc/jupyter/
jupyter_server_config.d/agentlab-save-hook.json``, that enables the server extension
``agentlab.widgets.save_hook``: its pre-save hook makes a save after a partial run (or an
autosave) never leave a widget output without its state and without its picture. It takes
effect when the server starts.

Only ``overrides.d/agentlab.json`` and that config file are ever written; a user's
``overrides.json`` and own server config are never touched. Restart JupyterLab afterwards.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["SETTINGS_FILE", "OVERRIDES_DIR", "SERVER_FILE", "SERVER_CONFIG_DIR", "settings_path",
           "server_config_path", "is_installed", "install_settings"]

#: The shipped override (also what the wheel installs).
SETTINGS_FILE = Path(__file__).resolve().parent / "jupyterlab" / "agentlab.json"
#: Where JupyterLab looks, relative to the environment's prefix.
OVERRIDES_DIR = Path("share", "jupyter", "lab", "settings", "overrides.d")
#: The server config that turns on the save hook, and where the server reads such files.
SERVER_FILE = SETTINGS_FILE.parent / "agentlab-save-hook.json"
SERVER_CONFIG_DIR = Path("etc", "jupyter", "jupyter_server_config.d")


def settings_path(prefix: str | Path | None = None) -> Path:
    """Where the override lives for the environment at ``prefix`` (default: this one)."""
    return Path(prefix or sys.prefix) / OVERRIDES_DIR / SETTINGS_FILE.name


def server_config_path(prefix: str | Path | None = None) -> Path:
    """Where the save hook's server config lives for the environment at ``prefix``."""
    return Path(prefix or sys.prefix) / SERVER_CONFIG_DIR / SERVER_FILE.name


def _same(path: Path, shipped: Path) -> bool:
    try:
        return json.loads(path.read_text()) == json.loads(shipped.read_text())
    except (OSError, ValueError):
        return False


def is_installed(prefix: str | Path | None = None) -> bool:
    """True when the environment has agentlab's override and save-hook config, as shipped."""
    return (_same(settings_path(prefix), SETTINGS_FILE)
            and _same(server_config_path(prefix), SERVER_FILE))


def install_settings(prefix: str | Path | None = None) -> Path:
    """Write the override and the save-hook config into the environment at ``prefix``; return
    the override's path (idempotent)."""
    for path, shipped in ((server_config_path(prefix), SERVER_FILE),
                          (settings_path(prefix), SETTINGS_FILE)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(shipped.read_text())
    return settings_path(prefix)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentlab.widgets.lab_settings",
                                     description="Make JupyterLab save widget state "
                                     "(agentlab's settings override).")
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if missing")
    parser.add_argument("--prefix", default=None, help="environment prefix (default: this one)")
    args = parser.parse_args(argv)
    path = settings_path(args.prefix)
    if is_installed(args.prefix):
        print(f"ok: JupyterLab saves widget state ({path})")
        return 0
    if args.check:
        print(f"missing: {path} (run: python -m agentlab.widgets.lab_settings)")
        return 1
    install_settings(args.prefix)
    print(f"installed {path} and {server_config_path(args.prefix)}; restart JupyterLab for "
          "them to take effect")
    return 0


if __name__ == "__main__":
    sys.exit(main())
