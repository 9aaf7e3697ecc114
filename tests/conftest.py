"""TAPEGRAD_TEST_SMALL_THRESHOLDS=1: run the suite with the memory savings that by default only large
arrays get (tape.RELEASE_BYTES, replay.REUSE_MIN) applied to every value and adjoint, so that every op and
test meets them. CI runs the suite once this way (.ci/run)."""
import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _small_thresholds():
    if os.environ.get("TAPEGRAD_TEST_SMALL_THRESHOLDS") != "1":
        yield
        return
    from tapegrad import replay, tape
    saved = tape.RELEASE_BYTES, replay.REUSE_MIN
    tape.RELEASE_BYTES, replay.REUSE_MIN = 0, 1
    yield
    tape.RELEASE_BYTES, replay.REUSE_MIN = saved
