"""Every Python example of the package's README runs, as a test file of its own, in a pytest of its
own (the plugin loaded from the installed package, as a user's project loads it)."""

import re
from pathlib import Path

import pytest

from conftest import need

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_readme_has_its_examples():
    assert len(BLOCKS) >= 5, f"{README} lost its examples"


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=lambda i: f"block{i + 1}")
def test_readme_example_passes_as_written(pytester, index):
    block = BLOCKS[index]
    tests = re.findall(r"^def (test_\w+)", block, re.M)
    if "incus" in block:
        import shutil

        need("incus", shutil.which("incus") is not None, "the official incus client on PATH")
    if "import pylxd" in block:
        try:
            import pylxd  # noqa: F401
        except ImportError:
            need("pylxd", False, "pip install pylxd")
    pytester.makepyfile(**{f"test_readme_block{index + 1}": block})
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(tests))
