"""The package is layered (data -> modeling -> training / predict -> cli): no module imports, at any
level (a function-local import and one under ``if TYPE_CHECKING:`` count too), a module that
imports it back."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "entangle"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules that ``path`` imports anywhere in it."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            for alias in node.names:  # `from . import x` may import a module x
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in modules else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return {module for module in found if module in modules and module != name}


def test_no_import_circles():
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {name: imports(path, set(paths)) for name, path in paths.items()}
    circles = []

    def walk(node: str, trail: list[str]) -> None:
        for target in sorted(graph[node]):
            if target in trail:
                circles.append(" -> ".join(trail[trail.index(target):] + [target]))
            elif target not in seen:
                seen.add(target)
                walk(target, trail + [target])

    for start in sorted(graph):
        seen = {start}
        walk(start, [start])
    assert not circles, "import circles:\n" + "\n".join(sorted(set(circles)))
