"""MkDocs hook: one API reference page per module of rlpyt, generated at build time.

Listed under ``hooks:`` in mkdocs.yml.  The package tree is read from the source files
(``ast``, nothing is imported), so a new module gets its page and its nav entry without a
line in mkdocs.yml.  Each module page renders that module alone through mkdocstrings; a
package's page (``api/<package>/index.md``, the section's own page in the nav) shows the
package docstring, what it defines or re-exports, and a table of its modules with their
docstrings' first paragraphs.  The hand-written ``docs/api/index.md`` gets the table of the
top-level packages appended.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field

from mkdocs.structure.files import File, Files

PACKAGE = "rlpyt"
API_DIR = "api"  # Under docs_dir; docs/api/index.md is the hand-written overview.
SECTION = "API reference"  # The nav section (mkdocs.yml) that the pages are appended to.
SKIP_MODULES = {"__main__"}  # `python -m rlpyt`: the CLI entry point, documented in cli.


@dataclass
class Module:
    """One module or package of the tree, as read from its source file."""

    name: str  # Dotted, e.g. "rlpyt.algos.pg.ppo".
    path: str
    is_package: bool
    summary: str  # The docstring's first paragraph, on one line ("" when none).
    has_docstring: bool
    own_names: list[str]  # Public classes, functions and assignments defined here.
    exports: list[tuple[str, str]]  # (name, defining path) for names re-exported in __all__.
    children: list[Module] = field(default_factory=list)

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    @property
    def doc_path(self) -> str:
        """The generated page's path under docs_dir, with forward slashes."""
        parts = self.name.split(".")[1:]
        if self.is_package:
            return "/".join([API_DIR, *parts, "index.md"])
        return "/".join([API_DIR, *parts]) + ".md"


def _read(path: str, name: str, is_package: bool) -> Module:
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    doc = ast.get_docstring(tree) or ""
    own: list[str] = []
    imported: dict[str, str] = {}
    all_names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            own.append(node.name)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id == "__all__":
                    all_names = [e.value for e in getattr(node.value, "elts", [])
                                 if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                elif isinstance(t, ast.Name):
                    own.append(t.id)
    public = [n for n in own if not n.startswith("_")]
    exports = [(n, imported[n]) for n in all_names if n in imported]
    return Module(name=name, path=path, is_package=is_package,
                  summary=" ".join(doc.strip().split("\n\n", 1)[0].split()),
                  has_docstring=bool(doc), own_names=public, exports=exports)


def discover(root: str, name: str = PACKAGE) -> Module:
    """The package at ``root`` (a directory with __init__.py) and its documented modules.

    Modules come before subpackages, each alphabetically; a module with neither a
    docstring nor a public name has nothing to show and gets no page.
    """
    pkg = _read(os.path.join(root, "__init__.py"), name, is_package=True)
    modules, packages = [], []
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        if os.path.isdir(path) and os.path.isfile(os.path.join(path, "__init__.py")):
            packages.append(discover(path, f"{name}.{entry}"))
        elif entry.endswith(".py") and entry != "__init__.py":
            stem = entry[:-3]
            if stem in SKIP_MODULES or stem.startswith("_"):
                continue
            mod = _read(path, f"{name}.{stem}", is_package=False)
            if mod.has_docstring or mod.own_names:
                modules.append(mod)
    pkg.children = modules + packages
    return pkg


def _relative(from_page: str, to_page: str) -> str:
    return os.path.relpath(to_page, os.path.dirname(from_page)).replace(os.sep, "/")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def module_table(pkg: Module, from_page: str) -> str:
    """A Markdown table linking each child of ``pkg`` with its summary line."""
    rows = ["| Module | What it holds |", "| --- | --- |"]
    for child in pkg.children:
        kind = " (package)" if child.is_package else ""
        link = _relative(from_page, child.doc_path)
        summary = child.summary
        if not summary and child.is_package:  # No docstring: say what it holds.
            summary = "Modules: " + ", ".join(f"`{c.short}`" for c in child.children)
        rows.append(f"| [`{child.name}`]({link}){kind} | {_cell(summary)} |")
    return "\n".join(rows) + "\n"


def page_markdown(mod: Module) -> str:
    """The Markdown source of one generated page."""
    lines = [f"# `{mod.name}`", ""]
    if not mod.is_package:
        # show_root_heading off: the page's h1 above is the module's one heading.
        lines += [f"::: {mod.name}", "    options:", "      show_root_heading: false",
                  "      show_root_toc_entry: false", "      show_submodules: false", ""]
        return "\n".join(lines)
    if mod.has_docstring or mod.own_names:
        # Only what the package itself defines: re-exported names are listed below with
        # a link to their own module's page, not rendered a second time.
        members = "[" + ", ".join(mod.own_names) + "]" if mod.own_names else "false"
        lines += [f"::: {mod.name}", "    options:", "      show_root_heading: false",
                  "      show_root_toc_entry: false", "      show_submodules: false",
                  f"      members: {members}", ""]
    if mod.exports:
        lines += ["## Exports", ""]
        lines += [f"- [`{n}`][{target}] (`{target}`)" for n, target in mod.exports]
        lines.append("")
    if mod.children:
        lines += ["## Modules", "", module_table(mod, mod.doc_path)]
    return "\n".join(lines)


def walk(mod: Module):
    yield mod
    for child in mod.children:
        yield from walk(child)


def nav_entry(mod: Module, parent: str = ""):
    """A nav item: a page, or a section whose first child is its own index page.

    Top-level entries carry the dotted name (``rlpyt.algos``), deeper ones the last part
    (``ppo`` under ``rlpyt.algos`` > ``pg``), or the last two where the last alone would
    repeat its section's label (``dqn.dqn`` under ``dqn``); the page's own title is the
    dotted name.
    """
    label = mod.name if mod.name.count(".") == 1 else mod.short
    if label == parent:
        label = ".".join(mod.name.split(".")[-2:])
    if not mod.is_package:
        return {label: mod.doc_path}
    return {label: [mod.doc_path] + [nav_entry(c, label) for c in mod.children]}


def _tree(config) -> Module:
    root = os.path.join(os.path.dirname(config["config_file_path"]), PACKAGE)
    return discover(root)


# --- MkDocs hook events ------------------------------------------------------------------

def on_config(config):
    tree = _tree(config)
    for item in config["nav"] or []:
        if isinstance(item, dict) and SECTION in item:
            item[SECTION] = list(item[SECTION]) + [nav_entry(c) for c in tree.children]
            break
    else:
        raise ValueError(f"mkdocs.yml: no nav section {SECTION!r} to put the API pages in")
    return config


def on_files(files: Files, config) -> Files:
    for mod in walk(_tree(config)):
        if mod.name == PACKAGE:
            continue  # The hand-written docs/api/index.md is the root's page.
        files.append(File.generated(config, mod.doc_path, content=page_markdown(mod)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.src_uri == f"{API_DIR}/index.md":
        tree = _tree(config)
        return markdown.rstrip() + "\n\n" + module_table(tree, page.file.src_uri)
    return markdown
