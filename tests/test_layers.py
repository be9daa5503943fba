"""The package's folders are layers (docs/architecture.md): a module imports only from its own
layer or below, and the two stages (prompt, session end) never import each other. Lazy imports
inside functions count too: they are the same dependency, paid later."""

import ast
from pathlib import Path

import memsift

PACKAGE = Path(memsift.__file__).parent

# Lowest first. The root holds what every stage uses; hook, warm, cli and __main__ are the entry
# points a host or a shell runs and may import anything.
LAYERS = {
    "root": 0,
    "model": 1, "hosts": 1,
    "memory": 2, "longterm": 2,
    "judge": 3, "services": 3,
    "prompt": 4, "session_end": 4,
    "commands": 5, "bench": 5, "training": 5,
}
ENTRY_POINTS = {"memsift.hook", "memsift.warm", "memsift.cli", "memsift.__main__"}
STAGES = {"prompt", "session_end"}


def area(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir()):
        return parts[1]
    return "root"


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts)
        found[name.removesuffix(".__init__")] = path
    return found


def imports_of(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            known = modules()
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                names.add(full if full in known else node.module)
    return {name for name in names if name == "memsift" or name.startswith("memsift.")}


def violations() -> list[str]:
    found = []
    for name, path in sorted(modules().items()):
        if name in ENTRY_POINTS or name == "memsift":
            continue
        own = area(name)
        for target in sorted(imports_of(path)):
            if target == "memsift":
                continue
            other = area(target)
            if LAYERS[other] > LAYERS[own]:
                found.append(f"{name} ({own}) imports {target} ({other}), a higher layer")
            elif own in STAGES and other in STAGES and own != other:
                found.append(f"{name} imports {target}: the two stages stay apart")
    return found


def test_every_folder_has_a_layer():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders - {"data"} <= set(LAYERS), folders - set(LAYERS)


def test_no_module_imports_a_higher_layer():
    assert violations() == []


def test_the_check_sees_a_lazy_upward_import(tmp_path, monkeypatch):
    """The check itself can fail: a memory module importing the cascade inside a function."""
    fake = tmp_path / "memsift"
    (fake / "memory").mkdir(parents=True)
    (fake / "prompt").mkdir()
    for init in (fake / "__init__.py", fake / "memory" / "__init__.py",
                 fake / "prompt" / "__init__.py", fake / "prompt" / "cascade.py"):
        init.write_text("")
    (fake / "memory" / "notes.py").write_text(
        "def f():\n    from memsift.prompt.cascade import Cascade\n    return Cascade\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    assert violations() == [
        "memsift.memory.notes (memory) imports memsift.prompt.cascade (prompt), a higher layer"]
