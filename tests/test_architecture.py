"""The code base's shape, checked from its source with ``ast``: no import cycles, no private names used across
packages, no oversized modules, no decisions on the text of an exception or a peer message.

Each check lists every offence it finds (file, line, what) so a failure says what to fix.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("p2pd", "signaling")
MAX_LINES = 450

# Known offences in other helpers' areas while the architecture issue (#11) is worked on in parallel branches:
# each entry names the file and who is fixing it. Emptied after the branches merge; nothing in p2pd/cli/ or
# p2pd/daemon/hook.py may appear here.
ALLOWED_CYCLE_MEMBERS: dict[str, str] = {}
ALLOWED_LONG_FILES: dict[str, str] = {
}
ALLOWED_TEXT_DECISIONS: dict[str, str] = {
}
ALLOWED_PRIVATE_IMPORTS: dict[str, str] = {
}


# ---------------------------------------------------------------- reading the source
@dataclass
class Module:
    name: str  # dotted, e.g. p2pd.cli.main (a package is its __init__: p2pd.cli)
    path: Path
    is_package: bool
    tree: ast.Module = field(repr=False)

    @property
    def rel(self) -> str:
        return self.path.relative_to(ROOT).as_posix()

    @property
    def package(self) -> str:
        """The package this module belongs to (itself for a package's ``__init__``)."""
        return self.name if self.is_package else self.name.rpartition(".")[0]


def load_modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for top in packages:
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            name = ".".join(parts)
            modules[name] = Module(name, path, is_package, ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return modules


@dataclass(frozen=True)
class Import:
    target: str  # the module imported from (resolved, absolute)
    names: tuple[str, ...]  # the names taken from it (empty for ``import x.y``)
    line: int


def imports_of(module: Module) -> Iterator[Import]:
    """Every import statement in ``module`` — at module level, in functions, under ``if TYPE_CHECKING`` —
    with relative imports resolved."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(alias.name, (), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield Import(target, tuple(a.name for a in node.names), node.lineno)


def import_graph(modules: dict[str, Module]) -> dict[str, dict[str, int]]:
    """module → {imported module: first line}. ``from pkg import sub`` counts as importing ``pkg.sub`` when it
    is a module; ``import a.b.c`` as importing the deepest of a.b.c, a.b that is one of ours."""
    graph: dict[str, dict[str, int]] = {name: {} for name in modules}
    for name, module in modules.items():
        for imp in imports_of(module):
            targets = [f"{imp.target}.{n}" for n in imp.names if f"{imp.target}.{n}" in modules]
            if len(targets) < len(imp.names) or not imp.names:
                target = imp.target
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target:
                    targets.append(target)
            for target in targets:
                if target != name:
                    graph[name].setdefault(target, imp.line)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One concrete cycle (a → … → a) per strongly connected component of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    counter = 0

    def connect(v: str) -> None:  # Tarjan; the graphs here are a few hundred nodes, recursion is fine
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: set[str] = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return [_cycle_in(graph, comp) for comp in components]


def _cycle_in(graph: dict[str, dict[str, int]], component: set[str]) -> list[str]:
    """A shortest path from the component's first module back to itself, inside the component."""
    start = min(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt: list[str] = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w not in component:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if w not in parents:
                    parents[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle through {start} in {sorted(component)}")  # pragma: no cover


def _inside(importer: Module, owner: str) -> bool:
    return importer.name == owner or importer.name.startswith(owner + ".")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(modules: dict[str, Module]) -> list[tuple[Module, int, str]]:
    """``from p2pd.x.y import _name`` (or ``import p2pd.x._y``, or ``y._name`` on an imported module of ours)
    where the importer is outside the package that owns the name (``p2pd.x``)."""
    found: list[tuple[Module, int, str]] = []
    for module in modules.values():
        aliases: dict[str, str] = {}  # local name → one of our modules
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in modules and alias.name.split(".")[0] in PACKAGES:
                        aliases[alias.asname] = alias.name
        for imp in imports_of(module):
            parts = imp.target.split(".")
            if parts[0] not in PACKAGES:
                continue
            for i, part in enumerate(parts):  # a private module on the path: p2pd.x._y
                if _private(part) and not _inside(module, ".".join(parts[:i])):
                    found.append((module, imp.line, imp.target))
            for name in imp.names:
                sub = f"{imp.target}.{name}"
                if sub in modules:
                    aliases.setdefault(name, sub)
                    owner = imp.target  # a private module of the package imp.target
                elif imp.target in modules:
                    owner = modules[imp.target].package
                else:
                    continue
                if _private(name) and not _inside(module, owner):
                    found.append((module, imp.line, f"{imp.target}.{name}"))
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _private(node.attr) \
                    and node.value.id in aliases:
                target = modules[aliases[node.value.id]]
                if not _inside(module, target.package):
                    found.append((module, node.lineno, f"{target.name}.{node.attr}"))
    return found


# ---------------------------------------------------------------- decisions on text
_EXC_NAMES = {"exc", "error", "err", "e", "ex", "exception", "failure"}
_TEXT_METHODS = {"lower", "upper", "casefold", "strip", "lstrip", "rstrip", "split", "splitlines", "partition"}
_SEARCH_METHODS = {"startswith", "endswith", "find", "rfind", "index", "rindex", "count", "__contains__"}
_REGEX = {"search", "match", "fullmatch", "findall", "finditer"}


def text_decisions(module: Module) -> list[tuple[int, str]]:
    """Comparisons and searches on an exception's text (``"…" in str(exc)``, ``str(exc) == …``,
    ``str(exc).startswith(…)``, ``exc.args[0] == …``, ``re.search(…, str(exc))``), on ``peer_text``, and any
    ``"literal" in str(x)``, and a phrase (two or more words) searched for in or compared with any string
    (``"were rebuilt as" not in warning``). Exception variables are the names bound by ``except … as NAME``
    plus the usual names (exc, err, error, e …); a name assigned from such text counts as text too."""
    tree = module.tree
    exc_names = set(_EXC_NAMES)
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and node.name:
            exc_names.add(node.name)
    text_names: set[str] = set()

    def is_exc(node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in exc_names

    def is_text(node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in text_names
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in ("str", "repr", "format") and node.args and is_exc(node.args[0]):
                return True
            return isinstance(f, ast.Attribute) and f.attr in _TEXT_METHODS and is_text(f.value)
        if isinstance(node, ast.Attribute):
            return node.attr == "peer_text" or (node.attr in ("args", "message") and is_exc(node.value))
        if isinstance(node, ast.Subscript):
            return is_text(node.value)
        if isinstance(node, ast.JoinedStr):
            return any(isinstance(v, ast.FormattedValue) and is_exc(v.value) for v in node.values)
        return False

    for _ in range(2):  # names assigned from exception text (twice: one level of text → name → name)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and is_text(node.value):
                text_names.update(t.id for t in node.targets if isinstance(t, ast.Name))

    def is_phrase(node: ast.expr) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value.split()) >= 2

    def is_str_call(node: ast.expr) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str"

    def compares_text(node: ast.Compare) -> bool:
        operands = [node.left, *node.comparators]
        if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            return False
        if any(map(is_text, operands)) or any(map(is_phrase, operands)):
            return True
        searches = any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)
        literal = isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)
        return searches and literal and any(map(is_str_call, node.comparators))

    def searches_text(node: ast.Call) -> bool:
        f = node.func
        if not isinstance(f, ast.Attribute):
            return False
        if f.attr in _SEARCH_METHODS:
            return is_text(f.value) or any(map(is_phrase, node.args))
        is_re = isinstance(f.value, ast.Name) and f.value.id == "re"
        return f.attr in _REGEX and is_re and any(map(is_text, node.args))

    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Compare) and compares_text(node)) or \
                (isinstance(node, ast.Call) and searches_text(node)):
            found.append((node.lineno, ast.unparse(node)))
    return found


# ---------------------------------------------------------------- the checks
MODULES = load_modules()
OUR_AREA = ("p2pd.cli", "p2pd.daemon.hook")  # the branch that wrote this test: never allow-listed


def _ours(name: str) -> bool:
    return any(name == a or name.startswith(a + ".") for a in OUR_AREA)


def _rel(name: str) -> str:
    return MODULES[name].rel


def test_allow_lists_name_real_files_outside_the_cli() -> None:
    by_path = {m.rel: m for m in MODULES.values()}
    for allowed in (ALLOWED_CYCLE_MEMBERS, ALLOWED_LONG_FILES, ALLOWED_TEXT_DECISIONS, ALLOWED_PRIVATE_IMPORTS):
        for path, who in allowed.items():
            assert path in by_path, f"allow-list entry {path} is not a module in p2pd/ or signaling/"
            assert not _ours(by_path[path].name), f"{path} is in the CLI's own area: fix it, do not allow it"
            assert who.strip(), f"{path}: say which helper area fixes it"


def test_no_import_cycles() -> None:
    graph = import_graph(MODULES)
    allowed = {name for name in MODULES if _rel(name) in ALLOWED_CYCLE_MEMBERS}
    pruned = {v: {w: ln for w, ln in ws.items() if w not in allowed} for v, ws in graph.items() if v not in allowed}
    found = cycles(pruned)
    assert not found, "import cycles (module → imported module …):\n" + "\n".join(
        " → ".join(f"{v}:{pruned[v][w]}" for v, w in itertools.pairwise(c)) + f" → {c[-1]}" for c in found)
    stale = [_rel(n) for n in sorted(allowed) if not any(n in c for c in cycles(graph))]
    assert not stale, f"allow-listed as in a cycle but in none any more (remove them): {stale}"


def _in_cli(name: str) -> bool:
    return name == "p2pd.cli" or name.startswith("p2pd.cli.")


def test_the_cli_imports_the_rest_and_nothing_imports_the_cli() -> None:
    """``p2pd.cli`` is the top: the daemon and everything else work without it (``python -m p2pd`` is its door)."""
    graph = import_graph(MODULES)
    found = [f"{MODULES[v].rel}:{line} imports {w}" for v, ws in graph.items() for w, line in ws.items()
             if _in_cli(w) and not _in_cli(v) and v != "p2pd.__main__"]
    assert not found, "\n".join(found)


def test_no_private_names_across_packages() -> None:
    """Importers are p2pd/, signaling/ and the tests (a test uses a package's public names, like any caller)."""
    with_tests = {**MODULES, **load_modules(ROOT, ("tests",))}
    found = [(m, line, what) for m, line, what in private_uses(with_tests) if m.rel not in ALLOWED_PRIVATE_IMPORTS]
    assert not found, "private names used outside their package:\n" + "\n".join(
        f"{m.rel}:{line}: {what}" for m, line, what in found)


def test_no_module_over_the_line_limit() -> None:
    sizes = {m.rel: len(m.path.read_text(encoding="utf-8").splitlines()) for m in MODULES.values()}
    long = {rel: n for rel, n in sizes.items() if n > MAX_LINES and rel not in ALLOWED_LONG_FILES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"
    stale = [rel for rel in ALLOWED_LONG_FILES if sizes.get(rel, 0) <= MAX_LINES]
    assert not stale, f"allow-listed as too long but no longer are (remove them): {stale}"


def test_no_decision_on_exception_or_peer_text() -> None:
    found = {m.rel: hits for m in MODULES.values() if (hits := text_decisions(m)) and m.rel not in
             ALLOWED_TEXT_DECISIONS}
    assert not found, "decisions on the text of an exception or peer message (decide on cause/party/class):\n" + \
        "\n".join(f"{rel}:{line}: {code}" for rel, hits in found.items() for line, code in hits)
    stale = [rel for rel in ALLOWED_TEXT_DECISIONS
             if not any(m.rel == rel and text_decisions(m) for m in MODULES.values())]
    assert not stale, f"allow-listed for text decisions but have none any more (remove them): {stale}"


# ---------------------------------------------------------------- the checkers themselves catch what they must
def fake_modules(sources: dict[str, str]) -> dict[str, Module]:
    """Modules from in-memory sources keyed by path (``p2pd/a/x.py``)."""
    modules: dict[str, Module] = {}
    for rel, text in sources.items():
        parts = rel.removesuffix(".py").split("/")
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        modules[name] = Module(name, ROOT / rel, is_package, ast.parse(text))
    return modules


def test_cycles_through_function_level_and_relative_imports_are_found() -> None:
    mods = fake_modules({"p2pd/__init__.py": "", "p2pd/a/__init__.py": "",
                         "p2pd/a/x.py": "from .y import f\n",
                         "p2pd/a/y.py": "def f():\n    from p2pd.a import x\n    return x\n",
                         "p2pd/b.py": "import p2pd.a.x\n"})
    assert cycles(import_graph(mods)) == [["p2pd.a.x", "p2pd.a.y", "p2pd.a.x"]]
    mods["p2pd.a.y"].tree = ast.parse("def f():\n    return 1\n")
    assert cycles(import_graph(mods)) == []
    mods["p2pd.a.y"].tree = ast.parse("if TYPE_CHECKING:\n    from p2pd.b import z\n")
    assert cycles(import_graph(mods)) == [["p2pd.a.x", "p2pd.a.y", "p2pd.b", "p2pd.a.x"]]


def test_private_names_from_outside_the_package_are_found() -> None:
    mods = fake_modules({"p2pd/__init__.py": "", "p2pd/a/__init__.py": "", "p2pd/a/_impl.py": "",
                         "p2pd/a/x.py": "def _helper(): ...\n",
                         "p2pd/a/inside.py": "from p2pd.a.x import _helper\nfrom p2pd.a import _impl\n",
                         "p2pd/b/__init__.py": "",
                         "p2pd/b/outside.py": "from p2pd.a.x import _helper, public\nfrom p2pd import __version__\n"
                                              "from p2pd.a import _impl\nimport p2pd.a.x as ax\nax._helper()\n"
                                              "from ..a import x\nx._helper()\n"})
    found = sorted((m.name, line, what) for m, line, what in private_uses(mods))
    assert found == [("p2pd.b.outside", 1, "p2pd.a.x._helper"), ("p2pd.b.outside", 3, "p2pd.a._impl"),
                     ("p2pd.b.outside", 5, "p2pd.a.x._helper"), ("p2pd.b.outside", 7, "p2pd.a.x._helper")]


@pytest.mark.parametrize("code", [
    "try:\n    f()\nexcept OSError as boom:\n    if 'denied' in str(boom):\n        pass",
    "if str(exc) == 'gone':\n    pass",
    "ok = str(err).lower().startswith('no peer')",
    "if exc.args[0] != 'x':\n    pass",
    "text = str(error)\nif 'busy' in text:\n    pass",
    "if re.search('went', f'{exc}'):\n    pass",
    "if frame.peer_text == 'busy':\n    pass",
    "if 'x' in str(reason):\n    pass",
    "if 'were rebuilt as' not in warning:\n    pass",
])
def test_text_decisions_are_found(code: str) -> None:
    module = Module("p2pd.fake", ROOT / "p2pd/fake.py", False, ast.parse(code))
    assert len(text_decisions(module)) == 1, code


@pytest.mark.parametrize("code", [
    "try:\n    f()\nexcept OSError as exc:\n    log(str(exc))\n    if exc.errno == 2:\n        pass",
    "if isinstance(exc, PeerGoneError) or exc.cause is Cause.BUSY:\n    pass",
    "show(visible(exc.peer_text))",
    "if exc.peer_text is not None:\n    pass",
    "if MARKER in command:\n    pass",
    "if 'x' in names:\n    pass",
])
def test_decisions_on_types_and_fields_pass(code: str) -> None:
    module = Module("p2pd.fake", ROOT / "p2pd/fake.py", False, ast.parse(code))
    assert text_decisions(module) == [], code
