"""The sidecar client both plugins share is inlined into each plugin file setup writes.

The real hosts load those files (tests/hosts/test_host_opencode.py, tests/hosts/dsh);
this checks what the rendering did to them.
"""

from __future__ import annotations

import re

import pytest

from jcli.plugins import shared_module_path
from jcli.setup.plugin_file import render_plugin


@pytest.mark.parametrize("host", ["opencode", "dsh"])
def test_the_rendered_plugin_holds_the_shared_module_and_imports_no_sibling(host):
    with open(shared_module_path(), encoding="utf-8") as fh:
        shared = fh.read()
    rendered = render_plugin(host, ["j-cli"])
    assert 'sidecar-client.mjs"; // inlined' not in rendered and "sidecar-client.mjs' // inlined" not in rendered
    assert not re.search(r"""^import .* from ["']\.\.?/""", rendered, re.M), "an installed plugin imports nothing beside it"
    for name in ("sidecarReader", "sidecarRead", "sidecarPeerIsOurs", "sidecarWorkspaceHash"):
        assert re.search(rf"^(export )?(async )?function {name}\(", shared, re.M)
        assert re.search(rf"^(async )?function {name}\(", rendered, re.M), name
    assert rendered.count("function sidecarReader(") == 1


def test_the_opencode_plugin_exports_only_the_plugin_after_inlining():
    rendered = render_plugin("opencode", ["j-cli"])
    assert re.findall(r"^export .*$", rendered, re.M) == ["export default JcliPlugin;"]
