"""flow.unittest: OneFlow's test base class and skip decorators, as OneFlow's own test files use them."""

import unittest

import numpy as np
import pytest
import weir as flow
import weir.typing as tp


def _run(case_class):
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(case_class).run(result)
    return result


def test_each_test_starts_from_an_empty_session_in_lazy_mode(monkeypatch):
    monkeypatch.delenv("ONEFLOW_TEST_ENABLE_EAGER", raising=False)
    seen = []

    class Case(flow.unittest.TestCase):
        def test_a(self):
            @flow.global_function()
            def job(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
                return flow.get_variable("w", (2,), initializer=flow.ones_initializer()) + x

            seen.append((flow.eager_execution_enabled(), job(np.ones(2, np.float32)).tolist()))

        test_b = test_a  # the same variable name again: only an emptied session allows it

    flow.enable_eager_execution(True)
    try:
        result = _run(Case)
    finally:
        flow.enable_eager_execution(False)
    assert result.wasSuccessful(), result.errors + result.failures
    assert seen == [(False, [2.0, 2.0])] * 2


def test_eager_mode_from_the_environment(monkeypatch):
    monkeypatch.setenv("ONEFLOW_TEST_ENABLE_EAGER", "1")
    modes = []

    class Case(flow.unittest.TestCase):
        def test_mode(self):
            modes.append(flow.eager_execution_enabled())

    try:
        assert _run(Case).wasSuccessful()
    finally:
        flow.enable_eager_execution(False)
    assert modes == [True]


@pytest.mark.parametrize("devices, runs", [(None, ["1n1d"]), ("2", ["1n2d"]), ("4", ["1n4d"])])
def test_skips_follow_the_device_count(monkeypatch, devices, runs):
    monkeypatch.delenv("ONEFLOW_TEST_NODE_LIST", raising=False)
    if devices is None:
        monkeypatch.delenv("ONEFLOW_TEST_DEVICE_NUM", raising=False)
    else:
        monkeypatch.setenv("ONEFLOW_TEST_DEVICE_NUM", devices)
    ran = []
    decorators = {"1n1d": flow.unittest.skip_unless_1n1d, "1n2d": flow.unittest.skip_unless_1n2d,
                  "1n4d": flow.unittest.skip_unless_1n4d, "2n1d": flow.unittest.skip_unless_2n1d}
    for name, decorator in decorators.items():

        @decorator()
        class Case(flow.unittest.TestCase):
            def test_it(self, name=name):
                ran.append(name)

        _run(Case)
    assert ran == runs
    assert flow.unittest.env.node_size() == 1
    assert flow.unittest.env.device_num() == (1 if devices is None else int(devices))


def test_node_list_and_bad_settings(monkeypatch):
    monkeypatch.setenv("ONEFLOW_TEST_NODE_LIST", "10.0.0.1,10.0.0.2")
    assert flow.unittest.env.node_size() == 2
    assert flow.unittest.env.node_list() == ["10.0.0.1", "10.0.0.2"]
    monkeypatch.setenv("ONEFLOW_TEST_DEVICE_NUM", "two")
    with pytest.raises(ValueError, match="ONEFLOW_TEST_DEVICE_NUM must be a positive number, got 'two'"):
        flow.unittest.env.device_num()
    monkeypatch.delenv("ONEFLOW_TEST_WORLD_SIZE", raising=False)
    with pytest.raises(RuntimeError, match="ONEFLOW_TEST_WORLD_SIZE is not set"):
        flow.unittest.env.world_size()
    with pytest.raises(ValueError, match="expected a positive int, got 0"):
        flow.unittest.num_nodes_required(0)


def test_register_test_cases_collects_a_folder(tmp_path):
    (tmp_path / "test_one.py").write_text(
        "import weir as flow\n"
        "def test_plain(test_case):\n"
        "    test_case.assertEqual(1 + 1, 2)\n"
        "@flow.unittest.num_nodes_required(2)\n"
        "def test_two_machines(test_case):\n"
        "    raise AssertionError('filtered out')\n")
    (tmp_path / "helper.py").write_text("raise AssertionError('not a test file')\n")
    scope = {}
    flow.unittest.register_test_cases(scope, str(tmp_path), lambda nodes: nodes == 1)
    assert list(scope) == ["test_one"]
    result = _run(scope["test_one"])
    assert result.testsRun == 1 and result.wasSuccessful()
