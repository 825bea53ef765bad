"""``flow.unittest``: what OneFlow's own tests are written against, so that a test file written for
OneFlow runs on Weir with only its import changed.

- ``flow.unittest.TestCase``: a ``unittest.TestCase`` whose ``setUp`` starts each test from an empty
  default session, with eager mode and the typing check as the environment asks
  (ONEFLOW_TEST_ENABLE_EAGER=1, ONEFLOW_TEST_ENABLE_TYPING_CHECK=1).
- ``flow.unittest.skip_unless_1n1d()`` ... ``skip_unless_2n4d()``: run a test only when the machines
  and devices the environment describes match (ONEFLOW_TEST_NODE_LIST, a comma-separated list of
  machines, default one; ONEFLOW_TEST_DEVICE_NUM, devices a machine, default 1).
- ``flow.unittest.env``: those settings as functions (``device_num()``, ``node_size()``, ...).

Tests of several machines are started the way every Weir program of several processes is (weir-launch,
docs/distributed.md); TestCase does not start workers over ssh as OneFlow's does.
"""

from __future__ import annotations

import importlib.util
import os
import types
import unittest
from typing import Any, Callable, Dict

from weir import _context, _function, _session

__all__ = ["TestCase", "env", "num_nodes_required", "register_test_cases", "skip_unless_1n1d",
           "skip_unless_1n2d", "skip_unless_1n3d", "skip_unless_1n4d", "skip_unless_2n1d",
           "skip_unless_2n2d", "skip_unless_2n4d"]


def _eager_execution_enabled() -> bool:
    return os.getenv("ONEFLOW_TEST_ENABLE_EAGER") == "1"


def _typing_check_enabled() -> bool:
    return os.getenv("ONEFLOW_TEST_ENABLE_TYPING_CHECK") == "1"


def _has_node_list() -> bool:
    return bool(os.getenv("ONEFLOW_TEST_NODE_LIST"))


def _node_list() -> list:
    value = os.getenv("ONEFLOW_TEST_NODE_LIST")
    if not value:
        raise RuntimeError("flow.unittest.env.node_list: ONEFLOW_TEST_NODE_LIST is not set")
    return value.split(",")


def _node_size() -> int:
    return len(_node_list()) if _has_node_list() else 1


def _has_world_size() -> bool:
    value = os.getenv("ONEFLOW_TEST_WORLD_SIZE")
    if not value:
        return False
    if not value.isdigit():
        raise ValueError(f"ONEFLOW_TEST_WORLD_SIZE must be a number, got {value!r}")
    return True


def _world_size() -> int:
    if not _has_world_size():
        raise RuntimeError("flow.unittest.env.world_size: ONEFLOW_TEST_WORLD_SIZE is not set")
    return int(os.environ["ONEFLOW_TEST_WORLD_SIZE"])


def _device_num() -> int:
    value = os.getenv("ONEFLOW_TEST_DEVICE_NUM")
    if not value:
        return 1
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"ONEFLOW_TEST_DEVICE_NUM must be a positive number, got {value!r}")
    return int(value)


env = types.SimpleNamespace(
    eager_execution_enabled=_eager_execution_enabled,
    typing_check_enabled=_typing_check_enabled,
    has_node_list=_has_node_list,
    node_list=_node_list,
    node_size=_node_size,
    has_world_size=_has_world_size,
    world_size=_world_size,
    device_num=_device_num,
)


class TestCase(unittest.TestCase):
    """Each test starts from an empty default session (OneFlow's tests configure devices and
    compile jobs per test), in eager or lazy mode and with the typing check as the environment says."""

    def setUp(self):
        _session.clear_default_session()
        _context.eager_execution = _eager_execution_enabled()
        _function.set_typing_check(_typing_check_enabled())


def _skip_unless(nodes: int, devices: int):
    if _node_size() == nodes and _device_num() == devices:
        return lambda test: test
    return unittest.skip(f"only runs when node_size is {nodes} and device_num is {devices}")


def skip_unless_1n1d():
    return _skip_unless(1, 1)


def skip_unless_1n2d():
    return _skip_unless(1, 2)


def skip_unless_1n3d():
    return _skip_unless(1, 3)


def skip_unless_1n4d():
    return _skip_unless(1, 4)


def skip_unless_2n1d():
    return _skip_unless(2, 1)


def skip_unless_2n2d():
    return _skip_unless(2, 2)


def skip_unless_2n4d():
    return _skip_unless(2, 4)


def num_nodes_required(num_nodes: int) -> Callable[[Callable], Callable]:
    """Marks a test function with the machines it needs (register_test_cases filters on it)."""
    if not isinstance(num_nodes, int) or num_nodes < 1:
        raise ValueError(f"flow.unittest.num_nodes_required: expected a positive int, got {num_nodes!r}")

    def mark(test):
        test.__oneflow_test_case_num_nodes_required__ = num_nodes
        return test

    return mark


def register_test_cases(scope: Dict[str, Any], directory: str, filter_by_num_nodes: Callable[[int], bool],
                        base_class: type = unittest.TestCase, test_case_mixin: type | None = None) -> None:
    """OneFlow's older way of collecting tests: every ``test*.py`` of `directory` becomes a TestCase
    class in `scope`, named after the file, holding its ``test*`` functions whose machine count (see
    num_nodes_required; 1 unmarked) passes `filter_by_num_nodes`. Each test starts from an empty
    default session in lazy mode unless `test_case_mixin` says otherwise."""
    mixin = test_case_mixin if test_case_mixin is not None else _EmptySession
    for file_name in sorted(os.listdir(directory)):
        path = os.path.join(directory, file_name)
        if not (os.path.isfile(path) and file_name.startswith("test") and file_name.endswith(".py")):
            continue
        spec = importlib.util.spec_from_file_location(file_name[:-3], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        tests = {name: getattr(module, name) for name in dir(module)
                 if name.startswith("test") and callable(getattr(module, name))
                 and filter_by_num_nodes(getattr(getattr(module, name),
                                                 "__oneflow_test_case_num_nodes_required__", 1))}
        scope[file_name[:-3]] = type(file_name[:-3], (mixin, base_class), tests)


class _EmptySession:
    def setUp(self):
        _session.clear_default_session()
        _context.eager_execution = False
