"""One name, version and description everywhere a host or an installer reads them."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

import memsift

REPO = Path(__file__).resolve().parents[1]
EXPECTED = {"name": memsift.NAME, "version": memsift.__version__,
            "description": memsift.DESCRIPTION}


def _json(path: str) -> dict:
    return json.loads((REPO / path).read_text())


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _skill_front_matter() -> dict:
    text = (REPO / "SKILL.md").read_text()
    block = re.match(r"---\n(.*?)\n---\n", text, re.DOTALL).group(1)
    return dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)


MANIFESTS = {
    "pyproject.toml": lambda: _pyproject(),
    "plugin.json": lambda: _json("plugin.json"),
    ".claude-plugin/plugin.json": lambda: _json(".claude-plugin/plugin.json"),
    ".codex-plugin/plugin.json": lambda: _json(".codex-plugin/plugin.json"),
    ".claude-plugin/marketplace.json entry":
        lambda: _json(".claude-plugin/marketplace.json")["plugins"][0],
}


@pytest.mark.parametrize("source", sorted(MANIFESTS))
def test_manifest_agrees_with_the_package(source):
    manifest = MANIFESTS[source]()
    assert {key: manifest.get(key) for key in EXPECTED} == EXPECTED


def test_marketplaces_list_the_plugin():
    claude = _json(".claude-plugin/marketplace.json")
    codex = _json(".agents/plugins/marketplace.json")
    assert claude["name"] == codex["name"] == memsift.NAME
    assert [p["name"] for p in claude["plugins"]] == [memsift.NAME]
    assert claude["plugins"][0]["source"] == "./plugin"  # not the clone, with its .venv
    assert [(p["name"], p["source"]) for p in codex["plugins"]] == [
        (memsift.NAME, {"source": "local", "path": "./"})]
    assert claude["metadata"]["version"] == memsift.__version__


def test_skill_front_matter_names_the_package():
    front = _skill_front_matter()
    assert front["name"] == memsift.NAME and front["description"]


def test_codex_manifest_points_at_the_codex_hooks():
    hooks = _json(".codex-plugin/plugin.json")["hooks"]
    assert (REPO / hooks).is_file() and "codex" in hooks


def test_the_licence_every_manifest_names_is_the_one_shipped():
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the whole text, not a stub
    named = {_pyproject()["license"], _json("plugin.json")["license"],
             _json(".claude-plugin/plugin.json")["license"],
             _json(".codex-plugin/plugin.json")["license"]}
    assert named == {"Apache-2.0"}


# What Claude Code's copy of the plugin needs: its manifest, the hooks, and what pip builds.
PLUGIN_LINKS = {".claude-plugin/plugin.json": "../../.claude-plugin/plugin.json",
                "hooks": "../hooks", "memsift": "../memsift", "pyproject.toml": "../pyproject.toml",
                "README.md": "../README.md", "LICENSE": "../LICENSE", "plugin.json": "../plugin.json"}


def test_the_plugin_folder_links_to_only_what_the_plugin_needs():
    folder = REPO / "plugin"
    found = {str(p.relative_to(folder)) for p in folder.rglob("*")
             if p.is_symlink() and not any(q.is_symlink() for q in p.parents if q != folder
                                           and folder in q.parents)}
    assert found == set(PLUGIN_LINKS)
    for name, target in PLUGIN_LINKS.items():
        assert (folder / name).readlink().as_posix() == target
        assert (folder / name).exists()  # the link resolves in the clone
