"""Text windows in code points."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jcli_sidecar.base.errors import InvalidWindow
from jcli_sidecar.read.textwindow import window


@given(st.text(), st.integers(min_value=1, max_value=50))
def test_walking_next_offset_rebuilds_the_text(text, limit):
    pieces, offset = [], 0
    while True:
        piece, info = window(text, offset, limit)
        assert info["returned_characters"] == len(piece) <= limit
        assert info["total_characters"] == len(text)
        assert info["truncated"] == (len(piece) < len(text))
        pieces.append(piece)
        if info["next_offset"] is None:
            break
        assert info["next_offset"] == offset + len(piece)
        offset = info["next_offset"]
    assert "".join(pieces) == text


def test_the_whole_text_is_not_truncated():
    assert window("abc") == ("abc", {"offset": 0, "returned_characters": 3, "total_characters": 3, "truncated": False, "next_offset": None})


@pytest.mark.parametrize("offset, limit", [(-1, None), (0, 0), (True, None), (0, 2.5), ("1", None), (4, None)])
def test_bad_windows(offset, limit):
    with pytest.raises(InvalidWindow):
        window("abc", offset, limit)
