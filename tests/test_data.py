"""The top-level ``data/`` folder (issue 19): one copy of each file, found by the package in a
checkout, described by its README; the reference sweep result loads and belongs to its spec."""
from __future__ import annotations

import json
from pathlib import Path

from agentlab import bundle, corpus, models, tokens
from agentlab.experiments import Experiment, Results

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"


def test_a_checkout_reads_the_top_level_data_folder():
    assert bundle.DATA_DIR == DATA and not (ROOT / "agentlab" / "data").exists()
    assert models.MODELS_PATH == DATA / "models.json"
    assert tokens.DATA_DIR == DATA / "tiktoken" and corpus.CORPUS_DIR == DATA / "corpus"


def test_the_readme_names_every_entry():
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    entries = [p.name for p in DATA.iterdir() if p.name not in ("README.md", "__pycache__")]
    entries += [f"sweeps/{p.name}" for p in (DATA / "sweeps").iterdir() if p.is_dir()]
    assert entries and all(f"`{name}" in readme for name in entries), entries


def test_the_reference_sweep_is_a_result_of_its_spec():
    spec = Experiment.from_toml(DATA / "sweeps" / "timeouts.toml")
    ref = Results.load(DATA / "sweeps" / "results" / "timeouts")
    manifest = json.loads((DATA / "sweeps" / "results" / "timeouts" / "manifest.json").read_text())
    assert manifest["spec_hash"] == spec.spec_hash  # regenerate it (data/README.md) if not
    assert len(ref.runs) == len(spec.cells()) and set(ref.runs["status"]) == {"ok"}
    assert set(ref.runs["config"]) == {"timeouts=fixed", "timeouts=adaptive"}
    assert len(ref.tool_calls) > len(ref.runs)


def test_the_example_class_is_generated_from_the_current_master():
    from agentlab.exercises import example_class
    made = example_class.submissions(ROOT)
    assert {name: (DATA / "class" / name).read_text(encoding="utf-8") for name in made} == made
    assert example_class.RETRY_AFTER not in made["carol_01_backoff.ipynb"]
