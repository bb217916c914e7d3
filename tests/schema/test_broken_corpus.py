"""Every file in tests/schema/broken/ is a broken spec; its `# expect: ` comment lines give the
exact error lines load_spec must report (in order), and `# set: PATH=VALUE` lines are --set
overrides applied while loading."""

from pathlib import Path

import pytest

from specflow.schema.loader import load_spec_text
from tests.schema.spec_errors import error_lines

BROKEN = Path(__file__).parent / "broken"
FILES = sorted(BROKEN.glob("*.yaml"))


def directives(text: str, key: str) -> list[str]:
    prefix = f"# {key}: "
    return [line[len(prefix):] for line in text.splitlines() if line.startswith(prefix)]


def test_corpus_is_large_enough():
    assert len(FILES) >= 30


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_broken_spec(path):
    text = path.read_text()
    expected = directives(text, "expect")
    assert expected, f"{path.name} has no '# expect: ' line"
    got = error_lines(load_spec_text, text, f"broken/{path.name}", overrides=directives(text, "set"))
    assert got == expected
