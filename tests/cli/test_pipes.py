"""Output into pipes, as a shell user writes it: `specflow inspect ... | head` and `specflow
inspect MODEL --format dot | dot -Tsvg` for a SavedModel or GraphDef too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .cli_helpers import ok

ROOT = Path(__file__).resolve().parents[2]
FROZEN = ROOT / "tests" / "io" / "data" / "tf2" / "frozen_cnn.pb"


def test_a_reader_that_leaves_early_gets_no_error_line():
    """`inspect big.yaml --format json | head -1` printed `error: Broken pipe` and exited 1 (the
    output, 229 KB, is more than a pipe holds)."""
    p = subprocess.Popen([sys.executable, "-m", "specflow.cli", "inspect", str(ROOT / "models" / "transformer_classifier.yaml"),
                          "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert p.stdout.readline().strip() == b"{"
    p.stdout.close()  # as head does after its line
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 141 and err == "", err


def test_inspect_a_graph_def_as_dot():
    """`--format dot` of a SavedModel or GraphDef was refused (exit 2): the graph as stored."""
    text = ok("inspect", FROZEN, "--format", "dot")
    assert text.startswith("digraph specflow {") and text.rstrip().endswith("}")
    assert '"x" [label="x\\nPlaceholder"];' in text and '-> "Identity"' in text
