"""Open notebooks in JupyterLab in headless Chromium and report how every widget output renders.

    pip install playwright             # the Python package only; never `playwright install`
    python scripts/check_notebooks_browser.py SHOTS_DIR [NOTEBOOK ...] [--phases ...]

What a student sees is what counts, so the check uses a real JupyterLab and a real browser
(Debian's ``/usr/bin/chromium``, or ``--chromium PATH``) on *copies* of the notebooks (default:
every ``notebooks/NN_*.ipynb``; the originals are never written). Five phases:

1. ``untrusted``: opened as a fresh clone is, without running anything;
2. ``trusted``: after ``jupyter trust``, without running anything;
3. ``saved``: trusted, Run All, one control of the first widget driven (``browser_drive.py``:
   a dropdown, a slider or a button; the line says whether its output changed), save, kernel
   shut down, reopened;
4. ``saved-untrusted``: the file saved in phase 3, opened by a JupyterLab that never trusted it
   (a classmate's clone of a student's commit);
5. ``partial-save``: the committed notebook, trusted, opened in a new kernel, three cells run
   that are not widget cells, saved (as autosave would), reopened: with agentlab's pre-save
   hook (``agentlab/widgets/save_hook.py``) the widget outputs whose state the save lost show
   their picture, never "model not found".

For each widget output of the file on disk (an output whose bundle holds a widget view) it
prints how JupyterLab rendered it: ``picture`` (the ``image/png`` in the bundle), ``live
controls`` (the widget, with inputs), ``text repr`` (``VBox(children=...``), ``model not found``
or ``loading``; a verdict per notebook (``ok`` when every widget output is a picture or live
controls in every phase); and saves a screenshot of every widget output as
``SHOTS_DIR/<notebook>.<phase>.<cell>-<output>.png``. It also prints whether the JupyterLab
under test saves widget state (``saveState``, see ``agentlab/widgets/lab_settings.py``).

JupyterLab runs with its own settings, workspace and data folders under a temporary directory
(cells are all rendered, news and autosave are off); nothing of the user's is read or written.
Exit status 0 when every notebook with widgets is ``ok``.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import nbformat
from playwright.sync_api import sync_playwright

from browser_drive import drive_one_control, partial_run_and_save, wait_idle

ROOT = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PHASES = ("untrusted", "trusted", "saved", "saved-untrusted", "partial-save")
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]
USER_SETTINGS = {  # the check's own JupyterLab user settings (never the user's)
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}

# -- in the page ------------------------------------------------------------------------------
_OPEN = """async (path) => {
  const app = window.jupyterapp;
  for (const w of app.shell.widgets('main')) {      // never a "save changes?" dialog
    if (w.context && w.context.model) w.context.model.dirty = false;
  }
  await app.commands.execute('application:close-all');
  const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  await panel.context.ready;
  await panel.sessionContext.ready;
  return panel.content.widgets.length;
}"""
_CLASSIFY = """(targets) => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = panel.content.widgets;
  return targets.map(([c, o]) => {
    const cell = cells[c];
    const child = cell && cell.outputArea ? cell.outputArea.widgets[o] : null;
    if (!child) return ['missing', 'no output ' + o + ' in cell ' + c];
    const node = child.node, text = (node.innerText || '').trim();
    if (/Error displaying widget/.test(text)) return ['model not found', text.slice(0, 70)];
    if (/Loading widget/.test(text)) return ['loading', ''];
    const widget = node.querySelector('.jupyter-widgets, .jp-RenderedJupyterWidget');
    if (widget) {
      const n = widget.querySelectorAll(
          'input, select, button, textarea, .widget-slider, .widget-hslider').length;
      const off = node.querySelector('.jupyter-widgets-disconnected') ? ', no kernel' : '';
      return [n ? 'live controls' : 'widget without controls', n + ' controls' + off];
    }
    if (node.querySelector('.jp-RenderedImage img')) return ['picture', ''];
    if (node.querySelector('.jp-RenderedText')) return ['text repr', text.slice(0, 70)];
    return ['other', node.className];
  });
}"""
_RUN_ALL = """async () => {
  const app = window.jupyterapp, panel = app.shell.currentWidget;
  await app.commands.execute('notebook:run-all-cells');
}"""
_SAVE = """async () => {
  const app = window.jupyterapp, panel = app.shell.currentWidget;
  await app.commands.execute('docmanager:save');
  return panel.context.model.dirty;
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A JupyterLab server on 127.0.0.1 with its own settings/data/runtime folders."""

    def __init__(self, root: Path, home: Path, token: str = "agentlab-check",
                 save_state: bool | None = None) -> None:
        self.root, self.home, self.token = root, home, token
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        settings = dict(USER_SETTINGS)
        if save_state is not None:   # a user's own choice, which beats agentlab's default
            settings["@jupyter-widgets/jupyterlab-manager/plugin.jupyterlab-settings"] = {
                "saveState": save_state}
        for rel, value in settings.items():
            path = home / "user-settings" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))
        self.env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"),
                    "JUPYTER_DATA_DIR": str(home / "data"),
                    "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
                    "JUPYTERLAB_SETTINGS_DIR": str(home / "user-settings"),
                    "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces")}
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "Lab":
        self.log = open(self.home / "jupyterlab.log", "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={self.port}",
             "--ip=127.0.0.1", f"--IdentityProvider.token={self.token}", "--allow-root",
             f"--ServerApp.root_dir={self.root}", "--LabApp.expose_app_in_browser=True",
             "--LabApp.news_url=", "--LabApp.extension_manager=readonly",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            env=self.env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                self.api("api/status")
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.3)
        raise RuntimeError(f"JupyterLab did not start; see {self.home / 'jupyterlab.log'}")

    def __exit__(self, *exc: Any) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.log.close()

    def api(self, path: str, method: str = "GET") -> Any:
        req = urllib.request.Request(f"{self.base}/{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def trust(self, path: Path) -> None:
        subprocess.run([sys.executable, "-m", "jupyter", "trust", str(path)], env=self.env,
                       check=True, capture_output=True)

    def shutdown_kernels(self) -> None:
        for s in self.api("api/sessions"):
            self.api(f"api/sessions/{s['id']}", method="DELETE")

    def save_state_setting(self) -> str:
        doc = self.api("lab/api/settings/@jupyter-widgets/jupyterlab-manager:plugin")
        default = doc["schema"]["properties"]["saveState"]["default"]
        user = (doc.get("settings") or {}).get("saveState")
        return f"saveState default {default}" + ("" if user is None else f", user {user}")


def model_ids(path: Path) -> set[str]:
    """Model ids the widget outputs of the file point to."""
    nb = nbformat.read(path, as_version=4)
    return {out["data"][WIDGET_VIEW]["model_id"] for cell in nb.cells
            for out in cell.get("outputs", []) if WIDGET_VIEW in out.get("data", {})}


def widget_outputs(path: Path) -> list[tuple[int, int]]:
    """(cell index, output index) of every output whose bundle holds a widget view."""
    nb = nbformat.read(path, as_version=4)
    return [(c, o) for c, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for o, out in enumerate(cell.get("outputs", []))
            if WIDGET_VIEW in out.get("data", {})]


def _settle(page: Any, targets: list, wait_s: float) -> list:
    """Classify until nothing is still loading (or ``wait_s`` passed)."""
    deadline = time.monotonic() + wait_s
    while True:
        found = page.evaluate(_CLASSIFY, targets) if targets else []
        if not any(k in ("loading", "missing") for k, _ in found) or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def inspect_notebook(page: Any, lab: Lab, rel: str, shots: Path, tag: str,
                     wait_s: float, targets: list | None = None) -> list:
    """Open ``rel`` in ``lab``, classify its widget outputs (or ``targets``: the outputs that
    held one before a save), screenshot each; return the list."""
    targets = widget_outputs(lab.root / rel) if targets is None else targets
    page.evaluate(_OPEN, rel)
    time.sleep(1.0)
    found = _settle(page, targets, wait_s)
    for (c, o), _ in zip(targets, found):
        handle = page.evaluate_handle(
            "([c, o]) => { const a = window.jupyterapp.shell.currentWidget.content"
            ".widgets[c].outputArea; return a && a.widgets[o] ? a.widgets[o].node : null; }",
            [c, o])
        element = handle.as_element()
        if element is not None:
            element.scroll_into_view_if_needed()
            element.screenshot(path=str(shots / f"{Path(rel).stem}.{tag}.{c}-{o}.png"))
    return found


def run_all_and_save(page: Any, lab: Lab, path: Path, timeout_s: float,
                     drove: list | None = None) -> str:
    """Run All in the open notebook ``path``, wait for the kernel, drive one control (its
    result appended to ``drove``), save; returns a note on problems ("" when the saved file
    holds new widget outputs)."""
    before = model_ids(path)
    page.evaluate(_RUN_ALL)
    if not wait_idle(page, timeout_s):
        return f"Run All did not finish within {timeout_s:.0f} s"
    time.sleep(1.0)   # let the widget manager catch the last state updates
    if drove is not None:
        drove.append(drive_one_control(page, widget_outputs(path)))
    dirty = page.evaluate(_SAVE)
    time.sleep(1.0)
    lab.shutdown_kernels()
    if dirty:
        return "not saved"
    after = model_ids(path)
    return "" if after and not (after & before) else "Run All did not re-create the widgets"


def summarize(found: list) -> str:
    counts: dict[str, int] = {}
    for kind, _ in found:
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join(f"{k} x{n}" for k, n in counts.items()) or "-"


@contextlib.contextmanager
def browser(chromium: str, profile: Path) -> Iterator[Any]:
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=chromium, headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 1000})
        try:
            yield context
        finally:
            context.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shots", type=Path, help="folder for the screenshots")
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--phases", default=",".join(PHASES),
                        help=f"comma-separated subset of {','.join(PHASES)}")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--run-timeout", type=float, default=300.0,
                        help="seconds Run All may take per notebook")
    parser.add_argument("--wait", type=float, default=15.0,
                        help="seconds to wait for widgets to finish loading")
    parser.add_argument("--save-state", choices=("default", "on", "off"), default="default",
                        help="JupyterLab's saveState: as installed (default), or forced by a "
                        "user setting (off = JupyterLab's own default, for comparison)")
    args = parser.parse_args(argv)
    # a SIGTERM unwinds like Ctrl-C: the JupyterLab servers and Chromium are stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    phases = [p for p in args.phases.split(",") if p]
    unknown = set(phases) - set(PHASES)
    if unknown:
        parser.error(f"unknown phases: {', '.join(sorted(unknown))}")
    notebooks = [p.resolve() for p in args.notebooks] or sorted(
        (ROOT / "notebooks").glob("[0-9]*.ipynb"))
    args.shots.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="agentlab-browser-"))
    roots = {"U": work / "root-untrusted", "T": work / "root-trusted"}
    for server, folder in (("U", "untrusted"), ("T", "trusted"), ("T", "saved"),
                           ("U", "saved-untrusted"), ("T", "partial-save")):
        (roots[server] / folder).mkdir(parents=True)
        if folder != "saved-untrusted":
            for nb in notebooks:
                shutil.copy(nb, roots[server] / folder / nb.name)
    report: dict[str, dict[str, tuple[str, list]]] = {nb.name: {} for nb in notebooks}
    drives: dict[str, str] = {}
    saves: dict[str, str] = {}
    try:
        forced = {"default": None, "on": True, "off": False}[args.save_state]
        with Lab(roots["U"], work / "home-untrusted", save_state=forced) as lab_u, \
                Lab(roots["T"], work / "home-trusted", save_state=forced) as lab_t, \
                browser(args.chromium, work / "chromium-profile") as context:
            from agentlab.widgets import lab_settings
            print(f"JupyterLab under test: {lab_t.save_state_setting()}; agentlab's settings "
                  f"and pre-save hook installed: {lab_settings.is_installed()} "
                  "(python -m agentlab.widgets.lab_settings)")
            page_u, page_t = context.new_page(), context.new_page()
            page_u.goto(f"{lab_u.base}/lab?token={lab_u.token}")
            page_t.goto(f"{lab_t.base}/lab?token={lab_t.token}")
            for page in (page_u, page_t):
                page.wait_for_function("() => window.jupyterapp !== undefined", timeout=90_000)
                page.evaluate("async () => { await window.jupyterapp.restored; }")
            for nb in notebooks:
                name = nb.name
                look = {"untrusted": (page_u, lab_u), "trusted": (page_t, lab_t),
                        "saved": (page_t, lab_t), "saved-untrusted": (page_u, lab_u),
                        "partial-save": (page_t, lab_t)}

                def check(phase: str, note: str = "", targets: list | None = None) -> None:
                    page, lab = look[phase]
                    report[name][phase] = (note, inspect_notebook(
                        page, lab, f"{phase}/{name}", args.shots, phase, args.wait, targets))
                    lab.shutdown_kernels()

                if "untrusted" in phases:
                    check("untrusted")
                if "trusted" in phases:
                    lab_t.trust(lab_t.root / "trusted" / name)
                    check("trusted")
                if "saved" in phases or "saved-untrusted" in phases:
                    lab_t.trust(lab_t.root / "saved" / name)
                    page_t.evaluate(_OPEN, f"saved/{name}")
                    drove: list[str] = []
                    note = run_all_and_save(page_t, lab_t, lab_t.root / "saved" / name,
                                            args.run_timeout, drove)
                    drives[name] = drove[0] if drove else ""
                    if "saved" in phases:
                        check("saved", note)
                    if "saved-untrusted" in phases:
                        shutil.copy(lab_t.root / "saved" / name,
                                    lab_u.root / "saved-untrusted" / name)
                        check("saved-untrusted", note)
                if "partial-save" in phases:
                    path = lab_t.root / "partial-save" / name
                    lab_t.trust(path)
                    code = [i for i, c in enumerate(nbformat.read(path, 4).cells)
                            if c.cell_type == "code"]
                    before = widget_outputs(path)
                    had = len(before)
                    page_t.evaluate(_OPEN, f"partial-save/{name}")
                    note = partial_run_and_save(page_t, lab_t, code,
                                                {c for c, _ in widget_outputs(path)},
                                                args.run_timeout)
                    kept = len(widget_outputs(path))
                    check("partial-save", note, before)
                    saves[name] = (f"{kept} of {had} widget view(s) left in the file, "
                                   f"{had - kept} dropped by the pre-save hook (picture)")
                _print(name, report[name], drives.get(name, ""), saves.get(name, ""))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    verdicts = [_verdict(r) for r in report.values()]
    print(f"\n{sum(v == 'ok' for v in verdicts)} ok, {verdicts.count('no widgets')} without "
          f"widgets, {sum(v.startswith('FAIL') for v in verdicts)} failing, "
          f"of {len(verdicts)} notebooks; screenshots in {args.shots}")
    return 1 if any(v.startswith("FAIL") for v in verdicts) else 0


def _verdict(phases: dict[str, tuple[str, list]]) -> str:
    found = [k for _, f in phases.values() for k, _ in f]
    notes = [n for n, _ in phases.values() if n]
    if not found:
        return "no widgets" if not notes else "FAIL: " + "; ".join(notes)
    bad = sorted({k for k in found if k not in ("picture", "live controls")})
    if bad or notes:
        return "FAIL: " + ", ".join(bad + notes)
    return "ok"


def _print(name: str, phases: dict[str, tuple[str, list]], drove: str = "",
           saved: str = "") -> None:
    print(f"\n{name}: {_verdict(phases)}")
    if drove:
        print(f"  drove a control:  {drove}")
    if saved:
        print(f"  partial save:     {saved}")
    for phase, (note, found) in phases.items():
        details = " ".join("; ".join(d for _, d in found if d).split())
        print(f"  {phase:<16} {len(found)} widget output(s): {summarize(found)}"
              + (f"  [{note}]" if note else "") + (f"  ({details[:110]})" if details else ""))


if __name__ == "__main__":
    sys.exit(main())
