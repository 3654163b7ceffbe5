"""show_source: the notebooks' listings come from the package, and a lost marker is loud."""
import pytest

from agentlab.errors import ConfigError
from agentlab.source import show_source, source_lines


def sample(x):
    y = x + 1
    # middle
    z = y * 2
    return z


def test_the_whole_source_or_from_start_to_the_line_before_stop(capsys):
    assert source_lines(sample).startswith("def sample(x):")
    part = source_lines(sample, "y = x + 1", "return z")
    assert part.splitlines() == ["y = x + 1", "# middle", "z = y * 2"]
    show_source(sample, "# middle")
    assert capsys.readouterr().out.splitlines() == ["# middle", "z = y * 2", "return z"]


@pytest.mark.parametrize("start, stop", [("no such line", None), ("y = x + 1", "no such line")])
def test_a_marker_no_longer_in_the_code_is_an_error_naming_it(start, stop):
    with pytest.raises(ConfigError) as err:
        source_lines(sample, start, stop)
    assert err.value.code == "source_marker_missing" and "no such line" in err.value.message
