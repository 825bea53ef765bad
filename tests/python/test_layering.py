"""The source tree's layers point one way: common <- kernels <- plan <- graph/actors <- api. Kernels
see op attributes as plain values (weir/op_attrs.hpp), never the job-building API or the plan; the
Plan (src/plan) belongs to neither the actors nor the kernels."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INCLUDE = re.compile(r'^#include "([^"]+)"', re.MULTILINE)


def _includes(folder):
    """(file, included path) for every quoted include under src/<folder>."""
    found = []
    for directory, _, names in os.walk(os.path.join(ROOT, "src", folder)):
        for name in names:
            if name.endswith((".hpp", ".cpp", ".cu", ".cuh")):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as f:
                    found += [(os.path.relpath(path, ROOT), target) for target in INCLUDE.findall(f.read())]
    return found


def test_kernels_include_neither_the_job_api_nor_the_plan_nor_the_layers_above():
    forbidden = re.compile(r'^(weir/(ops|job|optimizers|layers|session)\.hpp|plan/|actors/|graph/|api/|distributed/)')
    offending = [(path, target) for path, target in _includes("kernels") if forbidden.match(target)]
    assert offending == []


def test_common_and_plan_include_nothing_above_them():
    above_common = re.compile(r'^(plan|actors|graph|api|kernels|distributed)/')
    assert [(p, t) for p, t in _includes("common") if above_common.match(t)] == []
    above_plan = re.compile(r'^(actors|graph|api|distributed)/')
    assert [(p, t) for p, t in _includes("plan") if above_plan.match(t)] == []


def test_the_checks_see_the_tree():
    assert len(_includes("kernels")) > 100  # the walk found the kernels' sources
