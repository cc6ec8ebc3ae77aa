"""The shared process-wide switch (cuvil_ref/shared_switch.py)."""

from __future__ import annotations

from cuvil_ref.shared_switch import SharedSwitch


def test_outermost_block_switches_and_hands_back_what_it_found():
    calls: list[object] = []
    switch = SharedSwitch(lambda: calls.append("on") or "found", lambda f: calls.append(f))
    with switch.hold():
        with switch.hold():
            assert calls == ["on"]
        assert calls == ["on"]
    assert calls == ["on", "found"]
    with switch.hold():
        pass
    assert calls == ["on", "found", "on", "found"]
