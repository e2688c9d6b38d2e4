"""The package layering of docs/architecture.md, checked against every import in the source; and the size of
the functions of the command line and the Python API.

The layer table is parsed from the doc itself, so the doc and this test cannot drift: a new package needs a
row there, and an import against the rows fails here with the importing module named. Function-level
(lazy) imports count — they are still dependencies; imports under ``if TYPE_CHECKING:`` do not, since they
never run. A ``from halluscope.pkg import name`` counts as an import of ``halluscope.pkg.name`` when that is
a module, else of ``halluscope.pkg``. A registry string (``"halluscope.pkg.module:Factory"``) counts as an
import of its module: the registry imports it when the name is asked for, so a cycle written as a string is
still a cycle.

Importers read other tools' files for any benchmark: they know none by name, and reach a benchmark only
through the hooks of :class:`halluscope.stages.BenchmarkInterface`. Outside benchmarks/, no module decides anything by
a benchmark's name, but for the listed places (:data:`NAMED_IN_LOGIC`), each with its reason.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from tests.paths import REPO_ROOT

SRC = REPO_ROOT / "src"
PACKAGE = SRC / "halluscope"
DOC = REPO_ROOT / "docs" / "architecture.md"

#: Imports against the layering that remain today, by (importing module, imported module). Each needs a
#: move larger than this change could make without colliding with work on the same files; remove an entry
#: when its import goes (the test fails on an entry that no longer occurs). Never add one.
ALLOWED: dict[tuple[str, str], str] = {
    # The synthetic known-truth set is generated and read by build/synthetic.py; the two benchmarks that
    # read such a folder import its reader, and SyntheticBenchmark also generates a missing folder. Fix:
    # move the folder's layout and reader (SyntheticScene, SyntheticQuestion, load_scenes, load_questions)
    # below benchmarks/, and either move the generator with them or let only `build synthetic` make the
    # folder (a user-visible change: the benchmark would then ask for the folder instead of building it).
    ("halluscope.benchmarks.synthetic", "halluscope.builders.synthetic"): "reads and builds a synthetic folder",
    ("halluscope.benchmarks.prove", "halluscope.builders.synthetic"): "reads a synthetic folder as PROVE items",
    # Seen since registry strings count as imports: the model spec (models/spec.py) wraps a model in the
    # mitigations a spec names, through a table of dotted paths into mitigation/, whose wrappers import the
    # models. Fix: mitigations are models wrapping models; move mitigation/ under models/ (or move the
    # wrapping out of create_model into a layer above both).
    ("halluscope.models.mitigations", "halluscope.mitigation.eyes_closed"): "a model spec names its mitigations",
    ("halluscope.models.mitigations", "halluscope.mitigation.dtc"): "a model spec names its mitigations",
}


def layer_rows() -> dict[str, int]:
    """Package or top-level module name → its row in the doc's layer table (1 = top)."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, int] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].isdigit():
            continue
        for name in re.findall(r"`([a-z_]+)`", cells[1]):
            assert name not in rows, f"docs/architecture.md lists {name!r} in two rows"
            rows[name] = int(cells[0])
    assert rows, "docs/architecture.md has no layer table under '## Layers'"
    return rows


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def unit(module: str) -> str:
    """The layer unit of a module: its package under halluscope, or the top-level module itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def known_module(dotted: str) -> str | None:
    """The longest prefix of ``dotted`` that is a module of the package."""
    while dotted not in MODULES:
        if "." not in dotted:
            return None
        dotted = dotted.rsplit(".", 1)[0]
    return dotted


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped.update(id(n) for n in ast.walk(child))
    return skipped


#: A registry string naming a module and, after a colon, what in it to call (``halluscope.models.hf:HFModel``).
REGISTRY_STRING = re.compile(r"^halluscope(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_][\w.]*)?$")


def import_targets(node: ast.AST, package: str, *, registries: bool = True) -> list[str]:
    """The dotted names one node imports: an import statement's, or (``registries``) a registry string's
    module."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        return [f"{source}.{alias.name}" for alias in node.names]
    if registries and isinstance(node, ast.Constant) and isinstance(node.value, str) and REGISTRY_STRING.match(
        node.value
    ):
        return [node.value.split(":", 1)[0]]
    return []


def imports_of(module: str, *, local_registries: bool = True) -> set[str]:
    """The halluscope modules one module imports, lazy ones and registry strings included, TYPE_CHECKING
    ones not; without ``local_registries``, registry strings naming a module of the module's own package are
    left out."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skipped = _type_checking_nodes(tree)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        from_registry = isinstance(node, ast.Constant)
        for target in import_targets(node, package):
            if target.split(".")[0] != "halluscope":
                continue
            resolved = known_module(target)
            if resolved is None or resolved == module:
                continue
            if from_registry and not local_registries and unit(resolved) == unit(module):
                continue
            found.add(resolved)
    return found


GRAPH: dict[str, set[str]] = {m: imports_of(m) for m in MODULES}
#: The graph without registry strings into a module's own package. A registry names its package's
#: factories, and some of those make their inner component by name through the same registry (a baseline
#: wraps a model made from a spec): that recursion is what the registry is for, and runs no import at import
#: time. Between packages, a registry string is a dependency like any other (in :data:`GRAPH`).
MODULE_GRAPH: dict[str, set[str]] = {m: imports_of(m, local_registries=False) for m in MODULES}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Groups of nodes that reach each other (Tarjan), largest first; singletons left out."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups, key=len, reverse=True)


def test_every_package_has_a_row_in_the_doc() -> None:
    rows = layer_rows()
    missing = sorted({unit(m) for m in MODULES} - set(rows))
    assert not missing, f"docs/architecture.md's layer table has no row for: {', '.join(missing)}"


def test_no_import_goes_against_the_layers() -> None:
    rows = layer_rows()
    wrong = []
    for module, targets in sorted(GRAPH.items()):
        for target in sorted(targets):
            if unit(module) == unit(target) or (module, target) in ALLOWED:
                continue
            if rows[unit(target)] <= rows[unit(module)]:
                wrong.append(
                    f"{module} (row {rows[unit(module)]}) imports {target} (row {rows[unit(target)]})"
                )
    assert not wrong, "imports against docs/architecture.md's layers:\n" + "\n".join(wrong)


def test_the_allowed_exceptions_still_exist() -> None:
    """An exception whose import is gone must leave the list, so that it only shrinks."""
    stale = [f"{a} -> {b}" for a, b in ALLOWED if b not in GRAPH.get(a, set())]
    assert not stale, "remove from ALLOWED (the import is gone): " + ", ".join(stale)


def test_no_import_cycle_between_modules() -> None:
    cycles = strongly_connected(MODULE_GRAPH)
    assert not cycles, "modules importing each other (directly or around a circle): " + "; ".join(
        " ↔ ".join(group) for group in cycles
    )


def test_no_import_cycle_between_packages() -> None:
    packages: dict[str, set[str]] = defaultdict(set)
    for module, targets in GRAPH.items():
        for target in targets:
            if unit(module) != unit(target) and (module, target) not in ALLOWED:
                packages[unit(module)].add(unit(target))
    cycles = strongly_connected(dict(packages))
    assert not cycles, "packages importing each other: " + "; ".join(" ↔ ".join(g) for g in cycles)


def test_the_walker_sees_lazy_imports_and_skips_type_only_ones() -> None:
    """The checks above are only as good as the import walk: a lazy import counts, a typing one does not."""
    # scene.graph imports direction inside a method (its reading order); direction names SceneGraph only
    # under TYPE_CHECKING.
    assert "halluscope.scene.direction" in GRAPH["halluscope.scene.graph"]
    assert "halluscope.scene.graph" not in GRAPH["halluscope.scene.direction"]
    # `from halluscope.benchmarks import BENCHMARKS` is an import of the package's __init__.
    assert "halluscope.benchmarks" in GRAPH["halluscope.report.samples"]
    # A registry names its entries' modules as strings; each is an import of the module named.
    assert "halluscope.models.hf" in GRAPH["halluscope.models"]
    assert "halluscope.mitigation.dtc" in GRAPH["halluscope.models.mitigations"]


def benchmark_names_in(source: str) -> list[str]:
    """``line: literal`` for each string literal that is exactly a benchmark's name (any case), and for each
    ``getattr``/``hasattr`` with a literal attribute name (a reach past the hooks into one benchmark's own
    attributes)."""
    from halluscope.benchmarks import BENCHMARKS

    names = {name.lower() for name in BENCHMARKS.names()}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip().lower() in names:
            found.append(f"{node.lineno}: {node.value!r}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
        ):
            found.append(f"{node.lineno}: {node.func.id}(..., {node.args[1].value!r})")
    return sorted(found, key=lambda entry: int(entry.split(":", 1)[0]))


def test_importers_know_no_benchmark_by_name() -> None:
    """An importer that branches on a benchmark's name holds that benchmark's layout where the benchmark
    cannot see it; each layout belongs to its benchmark, reached through the hooks."""
    importers = [p for name, p in MODULES.items() if name.startswith("halluscope.importers")]
    assert importers
    found = [
        f"{path.relative_to(SRC)}:{entry}"
        for path in importers
        for entry in benchmark_names_in(path.read_text(encoding="utf-8"))
    ]
    assert not found, "importers naming a benchmark (move the layout into the benchmark's hooks):\n" + "\n".join(
        found
    )


#: Modules outside benchmarks/ that still decide something by a benchmark's registered name, each with why it
#: stays for now; the test below fails on any other, and on an entry that no longer does so (never add one
#: without a reason; move the knowledge into the benchmark module, a declared attribute or hook, instead).
NAMED_IN_LOGIC: dict[str, str] = {
    "halluscope.builders.parallel": "parallel forms are written per benchmark (its layout, its id scheme): "
    "each form's writer belongs in its benchmark module, a move larger than this change",
    "halluscope.builders.parallel_yesno": "AMBER's generative items keep their annotation: a per-item check "
    "that belongs with AMBER's layout",
    "halluscope.models.replay": "reads HQH's and PROVE's official answer layouts a second time: the issue's "
    "'one read_responses per benchmark' removes it",
    "halluscope.cli.validate": "validate-judge builds known-truth sets for the two benchmarks with claims "
    "over scene graphs (synthetic, tri-he); the refusal names them for the user",
    "halluscope.suite.answers": "recognises a LLaVA answer file by 'pope' in its file or folder names: a "
    "file name another tool chose, not the registered name",
}


def benchmark_names_compared(source: str) -> list[str]:
    """``line: literal`` for each benchmark name (any case) a decision is made on: an operand of ``==``,
    ``!=``, ``in`` or ``not in`` (alone or inside a tuple, list or set operand), or a ``case`` pattern."""
    from halluscope.benchmarks import BENCHMARKS

    names = {name.lower() for name in BENCHMARKS.names()}

    def named(node: ast.AST) -> list[ast.Constant]:
        candidates = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        return [
            c for c in candidates
            if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value.strip().lower() in names
        ]  # fmt: skip

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                found += [f"{c.lineno}: {c.value!r}" for c in named(operand)]
        elif isinstance(node, ast.MatchValue):
            found += [f"{c.lineno}: {c.value!r}" for c in named(node.value)]
    return sorted(found, key=lambda entry: int(entry.split(":", 1)[0]))


def test_no_module_outside_benchmarks_decides_by_a_benchmark_name() -> None:
    """A branch on a benchmark's name outside benchmarks/ holds that benchmark's knowledge where adding or
    renaming a benchmark cannot see it. Names in help texts, messages, examples and tables of defaults are
    not decisions and are not looked for; the known decisions are :data:`NAMED_IN_LOGIC`."""
    found: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        if name == "halluscope.benchmarks" or name.startswith("halluscope.benchmarks."):
            continue
        entries = benchmark_names_compared(path.read_text(encoding="utf-8"))
        if entries:
            found[name] = entries
    new = [f"{name}: {', '.join(found[name])}" for name in sorted(set(found) - set(NAMED_IN_LOGIC))]
    assert not new, "deciding by a benchmark's name outside benchmarks/ (declare it in the benchmark):\n" + "\n".join(
        new
    )
    stale = sorted(set(NAMED_IN_LOGIC) - set(found))
    assert not stale, f"remove from NAMED_IN_LOGIC (no longer decides by a name): {', '.join(stale)}"


def test_the_decision_check_sees_comparisons_and_cases_not_mentions() -> None:
    source = (
        'if b == "pope" or name in ("x", "HQH"):\n    pass\n'
        'match b:\n    case "amber":\n        pass\n'
        'print("pope")\nhelp = {"tri-he": 1}\n'
    )
    assert benchmark_names_compared(source) == ["1: 'pope'", "1: 'HQH'", "4: 'amber'"]


def test_the_name_check_sees_names_and_reaches() -> None:
    source = 'if name == "pope":\n    x = getattr(b, "files")\ny = "POPE sets"\nz = "HallusionBench"\n'
    assert benchmark_names_in(source) == ["1: 'pope'", "2: getattr(..., 'files')", "4: 'HallusionBench'"]


#: The longest function (lines, from ``def`` to its last line, docstring included) and the most parameters
#: one may have in the command line (``halluscope/cli/``), the Python API (``halluscope/api.py``) and the
#: orchestrator (``halluscope/runs/``), where every run passes. A
#: command written as one function of all its options grows into one long body in which parsing, checks,
#: work and printing mix; under these limits a command declares its options as a dataclass
#: (:func:`halluscope.cli.flags.flags_command`) and its body calls small named steps.
MAX_FUNCTION_LINES = 80
MAX_FUNCTION_PARAMETERS = 10
SURFACE = [*sorted((PACKAGE / "cli").glob("*.py")), PACKAGE / "api.py", *sorted((PACKAGE / "runs").glob("*.py"))]


def parameter_count(args: ast.arguments) -> int:
    """Positional-only, positional (``self`` included), ``*args`` and keyword-only parameters. ``**kwargs`` is
    left out: it passes options on rather than naming them."""
    return len(args.posonlyargs) + len(args.args) + (args.vararg is not None) + len(args.kwonlyargs)


def oversized_functions(source: str, filename: str) -> list[str]:
    """``file:line qualified.name`` and what is over, for each function (nested ones and methods included)
    over :data:`MAX_FUNCTION_LINES` lines or :data:`MAX_FUNCTION_PARAMETERS` parameters."""
    found: list[str] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (child.end_lineno or child.lineno) - child.lineno + 1
                parameters = parameter_count(child.args)
                over = [
                    *([f"{lines} lines"] if lines > MAX_FUNCTION_LINES else []),
                    *([f"{parameters} parameters"] if parameters > MAX_FUNCTION_PARAMETERS else []),
                ]
                if over:
                    found.append(f"{filename}:{child.lineno} {prefix}{child.name}: {', '.join(over)}")
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source, filename=filename), "")
    return found


def test_cli_api_and_orchestrator_functions_are_short() -> None:
    """Every function of the command line, the Python API and the orchestrator stays within the limits: a
    command with many options takes them as one flags dataclass, and its body is split into named steps."""
    assert len(SURFACE) > 10 and all(path.is_file() for path in SURFACE)
    oversized = [
        entry
        for path in SURFACE
        for entry in oversized_functions(path.read_text(encoding="utf-8"), str(path.relative_to(SRC)))
    ]
    assert not oversized, (
        f"functions over {MAX_FUNCTION_LINES} lines or {MAX_FUNCTION_PARAMETERS} parameters (declare a "
        "command's options as a dataclass, see halluscope.cli.flags; split the body):\n"
        + "\n".join(oversized)
    )


def test_the_size_check_counts_lines_and_parameters() -> None:
    """The check above is only as good as its counting: nested functions and methods are seen, the limits
    themselves are allowed, and every kind of parameter counts except ``**kwargs``."""
    body = "\n".join(f"            x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = (
        "def at_the_limit(a, /, b, c, *args, d, e, f, g, h, i, **kwargs):\n    pass\n"
        "def too_many(a, /, b, c, *args, d, e, f, g, h, i, j, **kwargs):\n    pass\n"
        "class Command:\n"
        "    def outer(self):\n"
        f"        def inner():\n{body}\n"
    )
    assert oversized_functions(source, "m.py") == [
        "m.py:3 too_many: 11 parameters",
        f"m.py:6 Command.outer: {MAX_FUNCTION_LINES + 2} lines",
        f"m.py:7 Command.outer.inner: {MAX_FUNCTION_LINES + 1} lines",
    ]
