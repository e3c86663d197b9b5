"""``make docs-check``'s checks of links, images, page lengths and the results tables
(docs_tools/check_site.py), on tiny fixture sites and docs trees: no mkdocs build, no
browser; a second or so in all."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "docs_tools"))

import check_site  # noqa: E402

PAGE = """<html><head><link rel="stylesheet" href="{up}stylesheets/extra.css"></head><body>
<nav class="md-nav md-nav--primary"><ul class="md-nav__list"></ul></nav>
<h1 id="title">{title}</h1>{body}</body></html>"""


def write_site(root, pages: dict[str, str], files=("img/ok.png",)):
    """A built site: ``pages`` maps a page's directory ('' for home) to its body."""
    for d, body in pages.items():
        path = os.path.join(root, d, "index.html")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        up = "../" * (d.count("/") + 1) if d else ""
        with open(path, "w") as f:
            f.write(PAGE.format(up=up, title=d or "home", body=body))
    for name in files:
        os.makedirs(os.path.join(root, os.path.dirname(name)), exist_ok=True)
        open(os.path.join(root, name), "wb").close()
    return str(root)


def problems_of(site):
    problems, _ = check_site.static_checks(site)
    return [p for p in problems if "extra.css" not in p]  # The fixture has no stylesheet.


def test_good_links_and_images_pass(tmp_path):
    site = write_site(tmp_path, {
        "": '<a href="speed/">s</a><a href="speed/index.html#table">t</a>'
            '<a href="#title">top</a><a href="https://example.org/x">ext</a>'
            '<a href="mailto:a@b.c">m</a><a href="//cdn.example.org/x.js">cdn</a>'
            '<img src="img/ok.png">',
        "speed": '<h2 id="table">T</h2><a href="../">home</a><a href="../img/ok.png">png</a>'
                 '<img src="../img/ok.png"><a href="?q=1">query</a>',
    })
    assert problems_of(site) == []


@pytest.mark.parametrize("body, fault", [
    ('<a href="notes/gone/">x</a>', "broken link 'notes/gone/'"),
    ('<a href="speed/#nowhere">x</a>', "no id 'nowhere' on speed/index.html"),
    ('<a href="#nowhere">x</a>', "no id 'nowhere' on index.html"),
    ('<img src="img/missing.png">', "missing image 'img/missing.png'"),
    ('<a href="img/missing.png">x</a>', "broken link 'img/missing.png'"),
])
def test_a_broken_link_or_missing_image_is_found(tmp_path, body, fault):
    site = write_site(tmp_path, {"": body, "speed": "<p>speed</p>"})
    problems = problems_of(site)
    assert len(problems) == 1 and fault in problems[0], problems
    assert problems[0].startswith("index.html: ")


def test_each_url_is_reported_once_per_page(tmp_path):
    site = write_site(tmp_path, {"": '<a href="gone/">a</a><a href="gone/">b</a>'})
    assert len(problems_of(site)) == 1


def write_docs(root, pages: dict[str, str]):
    for rel, text in pages.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return str(root)


def lines(n):
    return "".join(f"line {i}\n" for i in range(n))


def test_an_over_long_page_is_found_and_api_pages_are_not_counted(tmp_path):
    limit = check_site.PAGE_LINE_LIMIT
    docs = write_docs(tmp_path / "docs", {
        "index.md": lines(limit),
        "notes/long.md": lines(limit + 1),
        "api/huge.md": lines(3 * limit),
    })
    problems = check_site.check_page_lengths(docs)
    assert len(problems) == 1 and f"notes/long.md: {limit + 1} hand-written lines" in problems[0]


def test_generated_tables_do_not_count_toward_the_limit(tmp_path):
    limit = check_site.PAGE_LINE_LIMIT
    page = (lines(limit - 10) + "<!-- results:classic:begin -->\n" + lines(500)
            + "<!-- results:classic:end -->\n" + lines(5))
    assert check_site.hand_written_lines(page) == limit - 10 + 2 + 5
    docs = write_docs(tmp_path / "docs", {"results.md": page})
    assert check_site.check_page_lengths(docs) == []
    # A begin marker without its end is not a generated block: every line counts.
    docs = write_docs(tmp_path / "docs2", {"results.md": page.replace("results:classic:end",
                                                                      "results:other:end")})
    assert len(check_site.check_page_lengths(docs)) == 1


def test_the_real_docs_keep_to_the_limit():
    assert check_site.check_page_lengths(os.path.join(ROOT, "docs")) == []


@pytest.mark.parametrize("code, expect", [(0, []), (1, ["--check exited 1"])])
def test_the_results_check_runs_the_script(tmp_path, code, expect):
    script = tmp_path / "docs_tools" / "results.py"
    script.parent.mkdir()
    script.write_text(textwrap.dedent(f"""
        import sys
        assert sys.argv[1:] == ["--check"], sys.argv
        print("docs/results.md: the classic table differs")
        sys.exit({code})
    """))
    found = check_site.check_results(str(script))
    assert len(found) == len(expect)
    for problem, part in zip(found, expect):
        assert part in problem and "the classic table differs" in problem


def test_the_results_check_is_skipped_without_the_script(tmp_path):
    assert check_site.check_results(str(tmp_path / "results.py")) is None


def test_main_fails_on_a_broken_link_and_a_long_page(tmp_path, capsys):
    site = write_site(tmp_path / "site", {"": '<a href="gone/">x</a>'})
    docs = write_docs(tmp_path / "docs", {"index.md": lines(check_site.PAGE_LINE_LIMIT + 1)})
    code = check_site.main([site, "--docs", docs, "--no-browser",
                            "--results-script", str(tmp_path / "none.py")])
    out = capsys.readouterr().out
    assert code == 1
    assert "broken link 'gone/'" in out
    assert "index.md: 401 hand-written lines" in out
    assert "results tables are not checked" in out


def test_console_errors_skip_the_search_index_under_file_urls():
    def log(text, url=""):
        return {"method": "Log.entryAdded",
                "params": {"entry": {"level": "error", "text": text, "url": url}}}

    index = "file:///s/search/search_index.js"
    assert check_site.console_problem(log("Failed to load resource", index)) is None
    assert check_site.console_problem({"method": "Runtime.exceptionThrown", "params": {
        "exceptionDetails": {"text": "Uncaught", "exception": {
            "description": f"ReferenceError: Invalid script: {index}"}}}}) is None
    assert "Failed to load" in check_site.console_problem(log("Failed to load resource",
                                                              "file:///s/img/x.png"))
    assert check_site.console_problem({"method": "Runtime.consoleAPICalled", "params": {
        "type": "error", "args": [{"value": "boom"}]}}) == "console error: boom"
    assert check_site.console_problem({"method": "Runtime.consoleAPICalled", "params": {
        "type": "log", "args": [{"value": "fine"}]}}) is None


def test_every_hand_written_page_is_photographed(tmp_path):
    site = write_site(tmp_path, {"": "", "speed": "", "notes/soak": "", "api/x": ""})
    pages = check_site.shot_pages(site)
    assert [r for r, _ in pages[:3]] == ["index.html", "notes/soak/index.html",
                                         "speed/index.html"]
    assert pages[3:] == check_site.EXTRA_SHOT_PAGES
    assert check_site.shot_name("index.html", "") == "home"
    assert check_site.shot_name("notes/soak/index.html", "") == "notes_soak"
    assert check_site.shot_name("speed/index.html", "what") == "speed__what"
