"""Every test starts with a fresh default session, as OneFlow's unittest harness does."""

import pytest

import weir as flow


@pytest.fixture(autouse=True)
def fresh_session():
    flow.clear_default_session()
    yield
    flow.enable_eager_execution(False)  # a test that switched eager mode on leaves it off
    flow.clear_default_session()
