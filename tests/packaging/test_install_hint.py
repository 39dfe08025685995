"""The "install the extra" hint (evalkit.util.extras.install_hint) for each way evalkit was installed
(PEP 610's direct_url.json): a git URL, an editable clone, a wheel file, a clone on PYTHONPATH, an index."""
from __future__ import annotations

import json

import pytest

from evalkit.util import extras


class _Dist:
    def __init__(self, text):
        self.text = text

    def read_text(self, name):
        assert name == "direct_url.json"
        return self.text


@pytest.mark.parametrize("direct_url, hint", [
    ({"url": "https://github.com/org/evalkit", "vcs_info": {"vcs": "git", "requested_revision": "v0.1.0"}},
     "pip install 'evalkit-harness[hf] @ git+https://github.com/org/evalkit@v0.1.0'"),
    ({"url": "file:///src/evalkit", "dir_info": {"editable": True}}, "pip install -e '/src/evalkit[hf]'"),
    ({"url": "file:///tmp/evalkit_harness-0.1.0-py3-none-any.whl", "archive_info": {}},
     "pip install '/tmp/evalkit_harness-0.1.0-py3-none-any.whl[hf]'"),
])
def test_hint_installs_the_extra_from_where_this_copy_came_from(monkeypatch, direct_url, hint):
    monkeypatch.setattr("importlib.metadata.distribution", lambda name: _Dist(json.dumps(direct_url)))
    assert extras.install_hint("hf") == hint
    assert extras.message_for("torch").endswith(hint)


def test_hint_without_pep610_metadata(monkeypatch, tmp_path):
    monkeypatch.setattr("importlib.metadata.distribution", lambda name: _Dist(None))
    # this test runs from the clone: the hint installs the extra from it
    root = extras._source_tree()
    assert root is not None and extras.install_hint("metrics") == f"pip install -e '{root[3:]}[metrics]'"
    # installed from an index (no clone above the package): the published name
    monkeypatch.setattr(extras, "_source_tree", lambda: None)
    assert extras.install_hint("metrics") == "pip install 'evalkit-harness[metrics]'"
