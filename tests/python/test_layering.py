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


# A function's body opens with "{" after a head with a parameter list; namespaces, classes and brace
# initializers are not functions (members inside a class are).
_SCOPE_HEAD = re.compile(r'\b(namespace|class|struct|union|enum)\b|extern\s+"C"')
_CODE_NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)


def _function_lengths(path):
    """(first line, lines) of every function body in a C++ file, signature to closing brace."""
    with open(path, encoding="utf-8") as f:
        text = _CODE_NOISE.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), f.read())
    lengths = []
    stack = []  # per open brace: "scope", or ("function", first line), or "inner"
    head_start = 0
    for i, char in enumerate(text):
        if char in ";}":
            head_start = i + 1
        if char == "{":
            head = text[head_start:i]
            inside_function = any(entry != "scope" for entry in stack)
            if inside_function:
                stack.append("inner")
            elif _SCOPE_HEAD.search(head) or "(" not in head or head.rstrip().endswith("="):
                stack.append("scope")
            else:
                first = text.count("\n", 0, head_start + len(head) - len(head.lstrip())) + 1
                stack.append(("function", first))
            head_start = i + 1
        elif char == "}" and stack:
            entry = stack.pop()
            if isinstance(entry, tuple):
                lengths.append((entry[1], text.count("\n", 0, i) + 2 - entry[1]))
    return lengths


def test_no_function_of_the_graph_layer_is_over_200_lines():
    """The planner is a list of passes (src/graph/planner.cpp), each short enough to read alone."""
    long_ones = []
    for directory, _, names in os.walk(os.path.join(ROOT, "src", "graph")):
        for name in names:
            if name.endswith(".cpp"):
                path = os.path.join(directory, name)
                long_ones += [(os.path.relpath(path, ROOT), line, n) for line, n in _function_lengths(path) if n > 200]
    assert long_ones == []


def test_the_function_lengths_are_measured():
    lengths = _function_lengths(os.path.join(ROOT, "src", "graph", "planner.cpp"))
    assert len(lengths) >= 4 and max(n for _, n in lengths) > 40  # CompilePlan itself is found


def _python_modules():
    """weir's modules (dotted name -> path), the package itself left out."""
    package = os.path.join(ROOT, "python", "weir")
    modules = {}
    for directory, _, names in os.walk(package):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                dotted = "weir." + os.path.relpath(path, package)[:-3].replace(os.sep, ".")
                modules[dotted.removesuffix(".__init__")] = path
    modules.pop("weir")
    return modules


def _weir_imports(node, modules):
    """The weir modules an import statement names."""
    import ast

    found = []
    if isinstance(node, ast.Import):
        found = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("weir"):
        found = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return [name for name in found if name in modules]


def test_python_modules_import_one_way():
    """No import circle among weir's modules, and no import inside a function (the way circles hide)."""
    import ast

    modules = _python_modules()
    edges, inside_functions = {}, []
    for dotted, path in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        # A package importing its own submodules names itself too: not an edge.
        edges[dotted] = {name for node in tree.body for name in _weir_imports(node, modules)} - {dotted}
        for function in ast.walk(tree):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inside_functions += [(dotted, function.name, name) for node in ast.walk(function)
                                     for name in _weir_imports(node, modules)]
    assert inside_functions == []
    state = {}  # dotted -> "visiting" | "done"

    def visit(module, trail):
        if state.get(module) == "done":
            return
        assert state.get(module) != "visiting", " -> ".join(trail + [module])
        state[module] = "visiting"
        for imported in sorted(edges[module]):
            visit(imported, trail + [module])
        state[module] = "done"

    for module in sorted(modules):
        visit(module, [])
    assert len(modules) > 20 and sum(len(e) for e in edges.values()) > 30  # the walk saw the package
