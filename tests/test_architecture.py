"""The packages import one way (docs/architecture.md), and the rules' API is pinned.

    mammamia     the standard library only
    server       never client_sdk or bots (but the Rules service's codec reads a
                 seat's knowledge with the SDK's reader: SERVER_READS_WITH_THE_SDK)
    client_sdk   never server (nor bots)
    bots         client_sdk, mammamia and the standard library only

Imports are read with ``ast`` (inside functions too), so nothing is executed. A
package that does not exist yet has nothing to check.

No module imports itself through others: the graph of the project's modules, every
import an edge (inside functions and under ``TYPE_CHECKING`` too), has no cycle.

Each package converts its own messages, and arrows run one way: only a side's codec
modules build or parse protobuf (``WIRE_MODULES``); the ladder's messages are built
in the ladder, on the core's codec, and no module of the core imports the ladder;
the commands' requests are built on the commands' side, which imports nothing of
the server's machinery.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

import mammamia

ROOT = Path(__file__).resolve().parents[1]
PROJECT = {"mammamia", "mammamia_pb", "server", "client_sdk", "bots"}
GRAPHED = ("mammamia", "server", "client_sdk", "bots", "bench")


def python_files(package: str) -> list[Path]:
    """Returns the package's Python files, sorted (none from installed Node.js
    packages, as under bots/node)."""
    return [
        path
        for path in sorted((ROOT / package).rglob("*.py"))
        if "node_modules" not in path.relative_to(ROOT).parts
    ]


def imports_of(package: str) -> dict[str, set[str]]:
    """Returns the top-level modules each file of ``package`` imports (relative
    imports count as the package itself)."""
    found: dict[str, set[str]] = {}
    for path in python_files(package):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    names.add(package)
                elif node.module:
                    names.add(node.module.split(".")[0])
        found[str(path.relative_to(ROOT))] = names - {"__future__"}
    return found


def is_stdlib(name: str) -> bool:
    return name in sys.stdlib_module_names


def offences(package: str, allowed: set[str], stdlib: bool) -> list[str]:
    """Returns 'file: module' for each import of ``package`` outside what it may use."""
    return [
        f"{path}: {name}"
        for path, names in imports_of(package).items()
        for name in sorted(names)
        if name not in allowed | {package} and not (stdlib and is_stdlib(name))
    ]


def test_mammamia_imports_only_the_standard_library() -> None:
    assert imports_of("mammamia"), "the rules package has no modules"
    assert offences("mammamia", set(), stdlib=True) == []


# The Rules service takes a seat's knowledge as a seat's streams carry it (a View and
# its public events) and reads it with the SDK's reader of those messages, so views
# and public events have one decoder. That reader (client_sdk.wire) imports only the
# rules and the generated messages, and the SDK never imports the server, so the
# edge runs one way; it is the only one, from the Rules service's codec alone.
SERVER_READS_WITH_THE_SDK = {"server/rules_service/wire.py": {"client_sdk"}}

# Every command logs alike, with the one structlog configuration: client_sdk.logs,
# which imports nothing of the project (the rules package may not import structlog,
# the SDK may not import the server). The server's modules may import it, and only it.
SDK_LOGS = "client_sdk.logs"


def test_server_never_imports_the_sdk_or_the_bots() -> None:
    graph = import_graph()
    logging_only = {
        str(module_files()[module].relative_to(ROOT))
        for module, edges in graph.items()
        if module.startswith("server")
        and {m for m in edges if m.startswith("client_sdk")} == {SDK_LOGS}
    }
    bad = [
        f"{path}: {name}"
        for path, names in imports_of("server").items()
        for name in sorted(names & {"client_sdk", "bots"})
        if name not in SERVER_READS_WITH_THE_SDK.get(path, set())
        and not (name == "client_sdk" and path in logging_only)
    ]
    assert bad == []


def test_the_logging_configuration_imports_nothing_of_the_project() -> None:
    found = imports_of_file(module_files()[SDK_LOGS])
    assert {n for n in found if not is_stdlib(n)} == {"structlog"}


def test_the_sdk_module_the_server_reads_with_is_its_reader_alone() -> None:
    graph = import_graph()
    for path in SERVER_READS_WITH_THE_SDK:
        module = path.removesuffix(".py").replace("/", ".")
        assert {m for m in graph[module] if m.startswith("client_sdk")} == {"client_sdk.wire"}
    # ... which needs nothing but the rules and the generated messages.
    reader = imports_of_file(module_files()["client_sdk.wire"])
    assert {n for n in reader if not is_stdlib(n)} <= {"mammamia", "mammamia_pb", "grpc"}


def test_client_sdk_never_imports_the_server() -> None:
    bad = [
        f"{path}: {name}"
        for path, names in imports_of("client_sdk").items()
        for name in sorted(names & {"server", "bots"})
    ]
    assert bad == []


def test_bots_import_only_the_sdk_the_rules_and_the_standard_library() -> None:
    assert offences("bots", {"client_sdk", "mammamia"}, stdlib=True) == []


def test_the_checks_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The same reader on a package that breaks every edge.
    bad = tmp_path / "bots"
    bad.mkdir()
    (bad / "leaky.py").write_text(
        "import json\nfrom . import x\n"
        "def f():\n    from server.match import Match\n"
        "    import grpc\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert offences("bots", {"client_sdk", "mammamia"}, stdlib=True) == [
        "bots/leaky.py: grpc",
        "bots/leaky.py: server",
    ]


def module_files(packages: tuple[str, ...] = GRAPHED) -> dict[str, Path]:
    """Returns each module of ``packages`` by its dotted name (a package by the name
    of its ``__init__``)."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in python_files(package):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def import_graph(packages: tuple[str, ...] = GRAPHED) -> dict[str, set[str]]:
    """Returns the modules of ``packages`` that each of them imports.

    ``import a.b.c`` and ``from a.b import c`` name the deepest module of the project
    they reach (``a.b.c`` when it is a module, else the package ``a.b``); relative
    imports are resolved from the importing module's package. Modules outside
    ``packages`` are left out.
    """
    modules = module_files(packages)

    def known(dotted: str) -> str | None:
        parts = dotted.split(".")
        while parts:
            name = ".".join(parts)
            if name in modules:
                return name
            parts.pop()
        return None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base_parts = package.split(".")
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    base = ".".join([*base_parts, *([node.module] if node.module else [])])
                else:
                    base = node.module or ""
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            edges.update(t for t in map(known, targets) if t is not None)
        graph[name] = edges
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Returns the strongly connected components of ``graph`` (Tarjan's algorithm,
    iterative), each sorted, in the order they are completed."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = []
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work.append((root, sorted(graph.get(root, ()))))
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop(0)
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def cycles(graph: dict[str, set[str]]) -> list[str]:
    """Returns one import cycle per component that has one, as ``a -> b -> a``: the
    shortest way back to the component's first module (a module importing itself
    is a cycle too)."""
    found: list[str] = []
    for component in strongly_connected(graph):
        start = component[0]
        if len(component) == 1 and start not in graph.get(start, set()):
            continue
        members = set(component)
        came_from: dict[str, str] = {}
        frontier = [start]
        while frontier and start not in came_from:
            following: list[str] = []
            for node in frontier:
                for nxt in sorted(graph[node] & members):
                    if nxt not in came_from:
                        came_from[nxt] = node
                        following.append(nxt)
            frontier = following
        path = [start]
        node = came_from[start]
        while node != start:
            path.append(node)
            node = came_from[node]
        path.append(start)
        found.append(" -> ".join(reversed(path)))
    return sorted(found)


def test_no_import_cycles() -> None:
    graph = import_graph()
    assert {"mammamia", "server", "client_sdk", "bots", "bench"} <= graph.keys()
    assert cycles(graph) == []


def test_the_cycle_check_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Cycles through a function's import, a TYPE_CHECKING import, a relative import
    # of a package's module, and a module that imports itself; one clean module.
    pkg = tmp_path / "bench"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "a.py").write_text("from .sub import b\n", encoding="utf-8")
    (pkg / "sub" / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import bench.sub.c\n",
        encoding="utf-8",
    )
    (pkg / "sub" / "c.py").write_text("def f():\n    from .. import a\n", encoding="utf-8")
    (pkg / "self.py").write_text("import bench.self\n", encoding="utf-8")
    (pkg / "clean.py").write_text(
        "import json\nfrom . import a\nfrom bench.sub import b\n", encoding="utf-8"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    graph = import_graph(("bench",))
    assert graph["bench.clean"] == {"bench.a", "bench.sub.b"}
    assert cycles(graph) == [
        "bench.a -> bench.sub.b -> bench.sub.c -> bench.a",
        "bench.self -> bench.self",
    ]


def test_mammamia_public_names_are_pinned() -> None:
    # Sorted as ruff (RUF022) sorts it: constants, then classes, then functions.
    assert mammamia.__all__ == sorted(mammamia.__all__, key=lambda n: (not n.isupper(), n))
    assert mammamia.__all__ == [
        "COLOURS",
        "INGREDIENTS",
        "MAMMA_MIA",
        "ORDERS",
        "OVER",
        "RESOLVE",
        "SUPPLY",
        "TURN",
        "WAITER",
        "Action",
        "Event",
        "IllegalActionError",
        "MammaMiaError",
        "Order",
        "Record",
        "RecordError",
        "Resolve",
        "SeatInfo",
        "State",
        "Turn",
        "View",
        "action_from_json",
        "action_to_json",
        "load",
        "loads",
        "new_game",
        "parse",
        "public_events",
        "record_of",
        "view_of",
    ]
    assert all(hasattr(mammamia, name) for name in mammamia.__all__)


# -- protobuf: each package converts its own messages; arrows run one way ---------------

WIRE_MODULES = {
    "server": {
        # The core: streams, Seat, Spectate and Organiser (the fast encoder is wire's own).
        "server/wire.py",
        "server/_encoding.py",
        # The ladder's messages, built on the core's codec.
        "server/ladder/wire.py",
        # The Competition service's messages.
        "server/competition/wire.py",
        # The Admin service's messages.
        "server/admin/wire.py",
        # The Rules service's messages, built on the core's codec.
        "server/rules_service/wire.py",
        # The client side of `mammamia match`, `ladder`, `competition` and `admin`.
        "server/cli_wire.py",
        "server/ladder/cli_wire.py",
        "server/competition/cli_wire.py",
        "server/admin/cli_wire.py",
    },
    "client_sdk": {"client_sdk/wire.py"},
    "bots": set(),
}
COMMAND_CODECS = (
    "server.cli_wire",
    "server.ladder.cli_wire",
    "server.competition.cli_wire",
    "server.admin.cli_wire",
)
_GENERATED = ("pb", "rpb", "apb")  # the names the generated modules are imported as
_CODEC_NAMES = {
    "FromString",
    "SerializeToString",
    "ParseFromString",
    "MergeFromString",
    "MessageToDict",
    "MessageToJson",
    "ParseDict",
    "Parse",
}


def type_positions(tree: ast.AST) -> set[int]:
    """Returns the ids of the nodes of ``tree`` that name types only: annotations,
    type aliases (``TypeAlias``, or a CapWords name assigned at module level) and
    what is imported or defined under ``if TYPE_CHECKING:``."""
    spots: list[ast.AST | None] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            spots += [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs) if x]
            spots += [x.annotation for x in (a.vararg, a.kwarg) if x is not None]
            spots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            spots.append(node.annotation)
            if ast.unparse(node.annotation) in ("TypeAlias", "typing.TypeAlias"):
                spots.append(node.value)
        elif isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            spots += node.body
    if isinstance(tree, ast.Module):
        spots += [
            node.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id[:1].isupper()
            and not node.targets[0].id.isupper()
        ]
    return {id(sub) for spot in spots if spot is not None for sub in ast.walk(spot)}


def protobuf_uses(path: Path) -> list[str]:
    """Returns 'line: what' for each place a file converts protobuf messages, in line
    order: a generated message, enum or value named other than as a type
    (``pb.View(...)``, ``pb.PHASE_TURN``, ``isinstance(m, pb.View)``), or a codec
    named (``.FromString``, ``MessageToDict``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    as_types = type_positions(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in _GENERATED
            and id(node) not in as_types
        ):
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
        elif isinstance(node, ast.Attribute) and node.attr in _CODEC_NAMES:
            found.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.Name) and node.id in _CODEC_NAMES:
            found.append((node.lineno, node.id))
    return [f"{line}: {what}" for line, what in sorted(found)]


def protobuf_offences(package: str) -> list[str]:
    """Returns 'file line: what' for protobuf built or parsed outside the side's wire module."""
    return [
        f"{path.relative_to(ROOT)} {use}"
        for path in python_files(package)
        if str(path.relative_to(ROOT)) not in WIRE_MODULES[package]
        for use in protobuf_uses(path)
    ]


@pytest.mark.parametrize("package", sorted(WIRE_MODULES))
def test_outside_its_codecs_a_side_names_messages_only_as_types(package: str) -> None:
    assert protobuf_offences(package) == []


def test_the_protobuf_check_can_fail(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import TYPE_CHECKING, TypeAlias\n"
        "if TYPE_CHECKING:\n"
        "    Call = object[pb.PlayRequest]\n"
        "Take = Callable[[pb.SitRequest], int]\n"
        "Read: TypeAlias = Callable[[rpb.SeatKnowledge], int]\n"
        "def f(m: pb.View, *ms: pb.View) -> rpb.StateReply:\n"
        "    x: pb.JoinRequest = pb.JoinRequest(name='a')\n"
        "    y = pb.View.FromString(b'')\n"
        "    return isinstance(m, rpb.StateReply) or pb.PHASE_TURN\n"
    )
    assert protobuf_uses(sample) == [
        "7: pb.JoinRequest",
        "8: .FromString",
        "8: pb.View",
        "9: pb.PHASE_TURN",
        "9: rpb.StateReply",
    ]


def ladder_imports_outside_the_ladder(graph: dict[str, set[str]]) -> list[str]:
    """Returns 'module -> ladder module' for each import of ``server.ladder`` by a
    module of ``server`` outside it; the web page (``server.web``) is left out: a
    plugin above the core and the ladder alike, it shows both; so are the ladder's
    tables (``server.db.ladder``), the ladder's own storage, kept with the rest of the
    storage layer (they apply the ladder's ratings), and the competition
    (``server.competition``, ``server.db.competition``), which sits on the ladder as the
    ladder sits on the core (its finals are rated and seated as ladder matches are),
    and the operators' service (``server.admin``), whose switches hold the ladder; and
    the conformance kit (``server.conformance``), which runs a ladder of its own to
    judge a client on it."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module.startswith("server.")
        and not module.startswith(
            (
                "server.ladder",
                "server.web",
                "server.db.ladder",
                "server.competition",
                "server.db.competition",
                "server.admin",
                "server.conformance",
            )
        )
        for target in targets
        if target == "server.ladder" or target.startswith("server.ladder.")
    )


def test_the_core_imports_nothing_of_the_ladder() -> None:
    # The ladder builds on the core (its matches are the core's, its messages build
    # on the core's codec), never the other way round.
    assert ladder_imports_outside_the_ladder(import_graph()) == []


def test_the_commands_codecs_import_only_the_generated_messages() -> None:
    # A command sends requests and prints replies: it needs none of the server's
    # machinery (and starts without loading it), and the server's codecs need
    # nothing of the commands.
    graph = import_graph()
    modules = module_files()
    for codec in COMMAND_CODECS:
        assert graph[codec] <= set(COMMAND_CODECS), codec
        outside = imports_of_file(modules[codec]) - {"google", "mammamia_pb", "server"}
        assert {name for name in outside if not is_stdlib(name)} == set(), codec
    server_codecs = [path.removesuffix(".py").replace("/", ".") for path in WIRE_MODULES["server"]]
    for codec in set(server_codecs) - set(COMMAND_CODECS):
        assert graph[codec] & set(COMMAND_CODECS) == set(), codec


def imports_of_file(path: Path) -> set[str]:
    """Returns the top-level modules a file imports (relative imports as nothing)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names - {"__future__"}


def test_the_ladder_check_can_fail() -> None:
    graph = {
        "server.runners": {"server.match"},
        "server.wire": {"server.ladder.store"},
        "server.ladder.wire": {"server.wire"},
        "server.web.api": {"server.ladder.store"},
        "server.runner": {"server.ladder"},
    }
    assert ladder_imports_outside_the_ladder(graph) == [
        "server.runner -> server.ladder",
        "server.wire -> server.ladder.store",
    ]


# -- one storage layer -----------------------------------------------------------------

#: The package that alone speaks to the database (docs/storage.md).
STORAGE_LAYER = "server/db"

#: A statement's first word, as the project writes SQL (upper case).
_SQL = re.compile(
    r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|BEGIN|COMMIT|ROLLBACK|PRAGMA)\s"
)
#: The database drivers and the schema tools.
_DRIVERS = {"sqlite3", "psycopg", "sqlalchemy", "alembic"}


def sql_uses(path: Path) -> list[str]:
    """Returns 'line: what' for each SQL statement (a string that begins like one), call
    of ``execute``/``executemany`` and import of a database driver in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        # (an f-string's literal parts are constants too)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _SQL.match(node.value):
                found.append(f"{node.lineno}: {node.value.split()[0]} ...")
        elif isinstance(node, ast.Attribute) and node.attr in ("execute", "executemany"):
            found.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Import):
            found += [
                f"{node.lineno}: import {a.name}"
                for a in node.names
                if a.name.split(".")[0] in _DRIVERS
            ]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in _DRIVERS:
            found.append(f"{node.lineno}: from {node.module} import")
    return sorted(found)


def test_no_sql_outside_the_storage_layer() -> None:
    # Every statement the server sends its database is in server/db, where both
    # databases' dialects are handled: a reader elsewhere would work on one only.
    offences = [
        f"{path.relative_to(ROOT)} {use}"
        for path in python_files("server")
        if not str(path.relative_to(ROOT)).startswith(STORAGE_LAYER + "/")
        for use in sql_uses(path)
    ]
    assert offences == []


def test_the_sql_check_can_fail(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import sqlite3\n"
        "rows = db.execute('SELECT id FROM matches WHERE id = ?', (1,))\n"
        "sql = f'UPDATE matches SET status = {s}'\n"
        "text = 'Select the best bot'\n"
    )
    assert sql_uses(sample) == [
        "1: import sqlite3",
        "2: .execute",
        "2: SELECT ...",
        "3: UPDATE ...",
    ]
