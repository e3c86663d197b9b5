"""The docs site's generated API pages and its checker (docs_tools/, issue 30).

Fast: no site is built here (``make docs`` builds it with --strict; ``make docs-check``
runs the checker on it).  These tests pin what the generator emits for the real package
tree and that the checker catches each fault it is there for.
"""

from __future__ import annotations

import os
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "docs_tools"))

import api_pages  # noqa: E402
import check_site  # noqa: E402


@pytest.fixture(scope="module")
def tree():
    return api_pages.discover(os.path.join(ROOT, "rlpyt"))


def test_every_documented_module_gets_one_page(tree):
    mods = list(api_pages.walk(tree))
    names = {m.name for m in mods}
    paths = [m.doc_path for m in mods]
    assert len(paths) == len(set(paths))
    for dirpath, _, files in os.walk(os.path.join(ROOT, "rlpyt")):
        for f in files:
            if not f.endswith(".py") or f == "__main__.py":
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), ROOT)[:-3]
            name = rel.replace(os.sep, ".").removesuffix(".__init__")
            mod = api_pages._read(os.path.join(dirpath, f), name, f == "__init__.py")
            if f == "__init__.py" or mod.has_docstring or mod.own_names:
                assert name in names, f"{name} has no API page"
    assert "rlpyt.algos.pg.ppo" in names
    ppo = next(m for m in mods if m.name == "rlpyt.algos.pg.ppo")
    assert ppo.doc_path == "api/algos/pg/ppo.md"


def test_module_page_has_one_title(tree):
    ppo = next(m for m in api_pages.walk(tree) if m.name == "rlpyt.algos.pg.ppo")
    md = api_pages.page_markdown(ppo)
    assert md.startswith("# `rlpyt.algos.pg.ppo`\n")
    assert "::: rlpyt.algos.pg.ppo" in md
    assert "show_root_heading: false" in md  # Else mkdocstrings repeats the title.
    assert md.count("\n# ") == 0


def test_package_page_links_reexports_instead_of_rendering_them(tree):
    spaces = next(m for m in api_pages.walk(tree) if m.name == "rlpyt.spaces")
    md = api_pages.page_markdown(spaces)
    assert "members: false" in md  # It defines nothing itself.
    assert "[`FloatBox`][rlpyt.spaces.float_box.FloatBox]" in md
    assert "[`rlpyt.spaces.float_box`](float_box.md)" in md


def test_nav_labels_never_repeat_their_section(tree):
    def check(entry, parent):
        (label, value), = entry.items()
        assert label != parent
        if isinstance(value, list):
            assert value[0].endswith("index.md")  # The section's own page comes first.
            for child in value[1:]:
                check(child, label)

    for child in tree.children:
        check(api_pages.nav_entry(child), "API reference")
    dqn = next(m for m in api_pages.walk(tree) if m.name == "rlpyt.algos.dqn")
    labels = [next(iter(e)) for e in api_pages.nav_entry(dqn)["dqn"][1:]]
    assert "dqn.dqn" in labels


PAGE = """<html><head><link rel="stylesheet" href="../stylesheets/extra.css"></head><body>
<nav class="md-nav md-nav--primary"><ul class="md-nav__list">
<li class="md-nav__item md-nav__item--nested"><label class="md-nav__link">{section}</label>
<ul><li class="md-nav__item"><a class="md-nav__link" href="x">{child}</a></li></ul></li>
</ul></nav>
<h1>{h1}<a class="headerlink" href="#t">¶</a></h1><h2>{h2}</h2>{body}</body></html>"""


def page(section="API reference", child="Overview", h1="Title", h2="Usage", body=""):
    return PAGE.format(section=section, child=child, h1=h1, h2=h2, body=body)


def test_check_page_passes_a_clean_page():
    assert check_site.check_page("api/x/index.html", page()) == []


@pytest.mark.parametrize("kwargs, rel, fault", [
    ({"child": "API reference"}, "index.html", "has a child labelled"),
    ({"h2": "Title"}, "index.html", "again as an h2"),
    ({"body": "<h1>Other</h1>"}, "index.html", "2 h1 headings"),
    ({"body": "x" * check_site.API_PAGE_LIMIT}, "api/algos/index.html", "over the API page"),
])
def test_check_page_finds_each_fault(kwargs, rel, fault):
    problems = check_site.check_page(rel, page(**kwargs))
    assert len(problems) == 1 and fault in problems[0], problems


def test_check_page_wants_the_layout_stylesheet():
    html = page().replace("extra.css", "other.css")
    assert "does not link stylesheets/extra.css" in check_site.check_page("a", html)[0]


def test_check_css_on_the_real_stylesheet(tmp_path):
    os.makedirs(tmp_path / "stylesheets")
    css = os.path.join(ROOT, "docs", "stylesheets", "extra.css")
    shutil.copy(css, tmp_path / "stylesheets" / "extra.css")
    assert check_site.check_css(str(tmp_path)) == []
    with open(css) as f:
        broken = f.read().replace("display: none", "display: block")
    (tmp_path / "stylesheets" / "extra.css").write_text(broken)
    assert ["nav title" in p for p in check_site.check_css(str(tmp_path))] == [True]
