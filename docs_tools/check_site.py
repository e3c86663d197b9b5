"""Check the built documentation site (``make docs-check``; issue 30).

Three parts:

1. Without a browser, from the HTML and CSS of the built site (always runs): every
   internal link and image points at a file of the site (and a link's ``#anchor`` at an
   id on that page), every API page under a size limit, one h1 per page and no h2
   repeating it, no nav section whose child carries the section's own label, and the
   layout rules of ``docs/stylesheets/extra.css`` (nav title, code wrapping, table
   overflow) present and linked from every page.
2. From the sources: every hand-written page of ``docs/`` (``docs/api/`` aside) at most
   ``PAGE_LINE_LIMIT`` lines, not counting generated tables between
   ``<!-- results:<name>:begin -->`` and ``<!-- results:<name>:end -->`` markers; and,
   where ``docs_tools/results.py`` exists, ``results.py --check`` (the results page's
   tables are what the script makes from the committed runs).
3. With a headless Chromium (``chromium``, ``chromium-headless-shell`` or
   ``google-chrome`` on the PATH, or ``$CHROME``), on every hand-written page and a few
   API pages: the page is laid out at 1400x900 and a script measures it (a code block or
   table reaching past the content column, a code line cut off, i.e. neither wrapped nor
   in a block with a visible scroll bar, an image that did not load, the first or
   current nav item covered by another element), errors on the browser's console are
   collected (except the search index's, which a browser will not fetch from
   ``file://``), and a screenshot of each page's first screen goes to ``site-shots/``
   (git-ignored) for a person to look at.  Without a browser this part is skipped and
   says so.

Usage: ``python docs_tools/check_site.py [SITE_DIR] [--docs DIR] [--shots DIR]
[--no-browser]``; exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from html.parser import HTMLParser

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

API_PAGE_LIMIT = 150_000  # Bytes of HTML, nav included; the largest module page is ~75 kB.
PAGE_LINE_LIMIT = 400  # Lines of a hand-written page's markdown, generated tables aside.
# A generated block of a page (docs_tools/results.py writes the results page's tables).
GENERATED_BLOCK = re.compile(r"^<!-- results:([\w.-]+):begin -->$(.*?)^<!-- results:\1:end -->$",
                             re.S | re.M)
CSS_RULES = {  # extra.css must hold these (selector, declaration): what each fixes.
    "nav title": (".md-nav--primary > .md-nav__title", "display: none"),
    "code wrap": (".md-typeset .highlight:not(.language-python)", "white-space: pre-wrap"),
    "code scroll": (".md-typeset pre > code", "overflow-x: auto"),
    "table overflow": (".md-typeset table:not([class])", "overflow-x: auto"),
}
# Besides every hand-written page (at its top), the browser part lays out and
# photographs these: (path in the site, element id to scroll to).  One API package page,
# one API module page, and the long tables at the foot of the speed page.
EXTRA_SHOT_PAGES = [
    ("api/index.html", ""),
    ("api/algos/index.html", ""),
    ("api/algos/pg/ppo/index.html", ""),
    ("speed/index.html", "what-a-run-costs-here"),
]
# Console messages that are not faults of a page: opened from file://, Material's search
# looks for its index as a script (search/search_index.js) that mkdocs does not write (it
# writes search_index.json, which a browser will not fetch from file://).  Search works
# when the site is served.
IGNORED_CONSOLE = re.compile(r"search/search_index\.js")


class _PageParser(HTMLParser):
    """Collects headings, stylesheet links and the primary nav's section labels."""

    def __init__(self):
        super().__init__()
        self.headings: list[tuple[str, str]] = []  # (tag, text)
        self.stylesheets: list[str] = []
        self.links: list[str] = []  # href of every <a>
        self.images: list[str] = []  # src of every <img>
        self.ids: set[str] = set()  # every id (and <a name>): the anchors a link may name
        self._heading: str | None = None
        self._text: list[str] = []
        # Nav sections: a stack of [section label, child labels] for nested nav items.
        self.nav_sections: list[tuple[str, list[str]]] = []
        self._li_stack: list[dict] = []
        self._in_label = False
        self._in_link = False
        self._in_headerlink = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = a.get("class") or ""
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        if tag == "a" and a.get("href") is not None:
            self.links.append(a["href"])
        if tag == "img" and a.get("src") is not None:
            self.images.append(a["src"])
        if tag == "link" and a.get("rel") == "stylesheet":
            self.stylesheets.append(a.get("href", ""))
        if tag in ("h1", "h2") and self._heading is None:
            self._heading, self._text = tag, []
        if tag == "a" and "headerlink" in cls:
            self._in_headerlink = True
        if tag == "li" and "md-nav__item" in cls:
            self._li_stack.append({"nested": "md-nav__item--nested" in cls, "label": "",
                                   "children": []})
        if self._li_stack and "md-nav__link" in cls and tag in ("a", "label", "div"):
            self._in_link, self._text = True, []

    def handle_endtag(self, tag):
        if tag == "a" and self._in_headerlink:
            self._in_headerlink = False
            return
        if self._heading == tag:
            self.headings.append((tag, " ".join("".join(self._text).split())))
            self._heading = None
        if self._in_link and tag in ("a", "label", "div"):
            self._in_link = False
            item = self._li_stack[-1]
            if not item["label"]:
                item["label"] = " ".join("".join(self._text).split())
        if tag == "li" and self._li_stack:
            item = self._li_stack.pop()
            if item["nested"]:
                self.nav_sections.append((item["label"], item["children"]))
            if self._li_stack:
                self._li_stack[-1]["children"].append(item["label"])

    def handle_data(self, data):
        if (self._heading or self._in_link) and not self._in_headerlink:
            self._text.append(data)


def html_pages(site: str) -> list[str]:
    pages = []
    for dirpath, _, names in os.walk(site):
        pages += [os.path.join(dirpath, n) for n in names if n == "index.html"]
    return sorted(pages)


def parse_page(html: str) -> _PageParser:
    p = _PageParser()
    p.feed(html)
    return p


def check_page(rel: str, html: str, parsed: _PageParser | None = None) -> list[str]:
    """Problems of one built page, from its HTML alone."""
    problems = []
    if rel.startswith("api/") and len(html.encode()) > API_PAGE_LIMIT:
        problems.append(f"{rel}: {len(html.encode())} bytes, over the API page limit "
                        f"{API_PAGE_LIMIT}: split the module")
    p = parsed or parse_page(html)
    h1 = [t for tag, t in p.headings if tag == "h1"]
    if len(h1) != 1:
        problems.append(f"{rel}: {len(h1)} h1 headings ({h1}), expected one")
    h2 = [t for tag, t in p.headings if tag == "h2"]
    for text in h1:
        if text in h2:
            problems.append(f"{rel}: the title {text!r} again as an h2")
    for label, children in p.nav_sections:
        if label and label in children:
            problems.append(f"{rel}: nav section {label!r} has a child labelled "
                            f"{label!r}")
    if not any(s.endswith("stylesheets/extra.css") for s in p.stylesheets):
        problems.append(f"{rel}: does not link stylesheets/extra.css")
    return problems


def check_css(site: str) -> list[str]:
    path = os.path.join(site, "stylesheets", "extra.css")
    if not os.path.isfile(path):
        return [f"{path} missing: extra_css in mkdocs.yml?"]
    css = re.sub(r"/\*.*?\*/", "", open(path, encoding="utf-8").read(), flags=re.S)
    css = " ".join(css.split())
    problems = []
    for what, (selector, decl) in CSS_RULES.items():
        blocks = re.findall(r"([^{}]*)\{([^{}]*)\}", css)
        if not any(selector in sel and decl.replace(" ", "") in body.replace(" ", "")
                   for sel, body in blocks):
            problems.append(f"extra.css: no {decl!r} for {selector!r} (the {what} fix)")
    return problems


_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _target(site: str, rel: str, url: str) -> tuple[str | None, str]:
    """(file in the site that ``url`` on page ``rel`` names, or None for an external or
    empty URL; its fragment)."""
    if not url or _SCHEME.match(url) or url.startswith("//"):
        return None, ""
    path, _, fragment = url.partition("#")
    path = urllib.parse.unquote(path.split("?", 1)[0])
    if not path:
        return os.path.join(site, rel), urllib.parse.unquote(fragment)
    if path.startswith("/"):
        target = os.path.join(site, path.lstrip("/"))
    else:
        target = os.path.join(site, os.path.dirname(rel), path)
    target = os.path.normpath(target)
    if os.path.isdir(target):
        target = os.path.join(target, "index.html")
    return target, urllib.parse.unquote(fragment)


def check_links(site: str, parsed: dict[str, _PageParser]) -> list[str]:
    """Internal links and images of every page that point at nothing: a missing file,
    or (for a link into a page of the site) an anchor that no element of it carries."""
    problems = []
    ids = {os.path.normpath(os.path.join(site, rel)): p.ids for rel, p in parsed.items()}
    for rel, p in parsed.items():
        for kind, urls in (("broken link", p.links), ("missing image", p.images)):
            for url in dict.fromkeys(urls):  # Each URL once per page.
                target, fragment = _target(site, rel, url)
                if target is None:
                    continue
                if not os.path.isfile(target):
                    problems.append(f"{rel}: {kind} {url!r} (no {os.path.relpath(target, site)})")
                elif fragment and kind == "broken link" and target in ids \
                        and fragment not in ids[target]:
                    problems.append(f"{rel}: broken link {url!r} (no id {fragment!r} on "
                                    f"{os.path.relpath(target, site)})")
    return problems


def markdown_pages(docs: str) -> list[str]:
    """The hand-written pages of the docs: every ``*.md`` under ``docs``, ``api/`` aside."""
    pages = []
    for dirpath, dirnames, names in os.walk(docs):
        if os.path.relpath(dirpath, docs) == ".":
            dirnames[:] = [d for d in dirnames if d != "api"]
        pages += [os.path.join(dirpath, n) for n in names if n.endswith(".md")]
    return sorted(pages)


def hand_written_lines(text: str) -> int:
    """Lines of a page's markdown, less those of its generated blocks (the markers count)."""
    generated = sum(m.group(2).count("\n") - 1 for m in GENERATED_BLOCK.finditer(text))
    return len(text.splitlines()) - max(generated, 0)


def check_page_lengths(docs: str, limit: int = PAGE_LINE_LIMIT) -> list[str]:
    problems = []
    for path in markdown_pages(docs):
        with open(path, encoding="utf-8") as f:
            n = hand_written_lines(f.read())
        if n > limit:
            rel = os.path.relpath(path, os.path.dirname(os.path.abspath(docs)))
            problems.append(f"{rel}: {n} hand-written lines, over the limit of {limit}: "
                            "split the page (a topic to a page of docs/notes/)")
    return problems


def check_results(script: str) -> list[str] | None:
    """``results.py --check``'s complaint, [] when the results page is up to date, None
    when there is no such script."""
    if not os.path.isfile(script):
        return None
    r = subprocess.run([sys.executable, script, "--check"], capture_output=True, text=True,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(script))))
    if r.returncode == 0:
        return []
    out = (r.stdout + r.stderr).strip().splitlines()
    return [f"{os.path.basename(script)} --check exited {r.returncode}: the results tables "
            f"differ from what the script makes (python {script} --write): "
            + " / ".join(out[-5:])]


def static_checks(site: str) -> tuple[list[str], int]:
    problems = check_css(site)
    parsed = {}
    for path in html_pages(site):
        rel = os.path.relpath(path, site).replace(os.sep, "/")
        with open(path, encoding="utf-8") as f:
            html = f.read()
        parsed[rel] = parse_page(html)
        problems += check_page(rel, html, parsed[rel])
    problems += check_links(site, parsed)
    return problems, len(parsed)


# --- The browser part ----------------------------------------------------------------------

# Measured in the laid-out page; returns a list of problem strings.
LAYOUT_PROBE = r"""
(() => {
  const out = [];
  const col = document.querySelector('.md-content__inner');
  if (!col) return ['no .md-content__inner'];
  const edge = col.getBoundingClientRect().right + 1;
  for (const el of col.querySelectorAll('pre, img, .md-typeset__scrollwrap table')) {
    const box = el.getBoundingClientRect();
    const wrap = el.closest('.md-typeset__scrollwrap');
    const right = wrap ? Math.min(box.right, wrap.getBoundingClientRect().right) : box.right;
    if (box.width > 0 && right > edge + 16)  // Material's table frame: 0.8rem outside.
      out.push(`${el.tagName.toLowerCase()} reaches ${Math.round(right - edge)}px past the column`);
  }
  for (const img of col.querySelectorAll('img'))
    if (!img.complete || img.naturalWidth === 0)
      out.push(`image not shown: ${img.getAttribute('src')}`);
  for (const el of col.querySelectorAll('.md-typeset__scrollwrap'))
    if (el.scrollWidth > el.clientWidth + 1)
      out.push(`table wider than the column by ${el.scrollWidth - el.clientWidth}px (scrolls): ` +
               (el.querySelector('th') || {textContent: ''}).textContent.trim().slice(0, 40));
  // A code line longer than the column must wrap or scroll with a visible scroll bar.
  for (const el of col.querySelectorAll('pre > code')) {
    if (el.scrollWidth <= el.clientWidth + 1) continue;
    const s = getComputedStyle(el);
    const scrolls = ['auto', 'scroll'].includes(s.overflowX) && s.scrollbarWidth === 'auto' &&
                    !/transparent|rgba\(0, 0, 0, 0\)/.test(s.scrollbarColor.split(' ')[0]);
    if (!scrolls)
      out.push(`code line cut off: ${el.textContent.split('\n').find(l => l.length > 60) || ''}`.slice(0, 120));
  }
  // A sticky nav title paints its box-shadow (blur + spread) over what lies below it,
  // which hit-testing does not see: count the shadow (half its blur) as part of its box.
  const paintedOver = (el, b) => {
    const s = getComputedStyle(el);
    if (s.display === 'none' || s.visibility === 'hidden') return false;
    const r = el.getBoundingClientRect();
    const n = (s.boxShadow.match(/-?[\d.]+px/g) || []).map(parseFloat);
    const ext = n.length >= 3 ? Math.abs(n[1]) + (n[2] || 0) / 2 + (n[3] || 0) : 0;
    return r.height > 0 && r.bottom + ext > b.top + 1 && r.top - ext < b.bottom - 1 &&
           r.right > b.left && r.left < b.right;
  };
  const titles = [...document.querySelectorAll('.md-nav--primary .md-nav__title')];
  const active = document.querySelector('.md-nav--primary .md-nav__link--active');
  const first = document.querySelector('.md-nav--primary .md-nav__list .md-nav__link');
  for (const link of new Set([first, active])) {
    if (!link) continue;
    const b = link.getBoundingClientRect();
    if (b.height === 0 || b.bottom < 0 || b.top > innerHeight) continue;
    const title = titles.find(t => !t.contains(link) && paintedOver(t, b));
    if (title) {
      out.push(`nav item '${link.textContent.trim()}' covered by the nav title '${title.textContent.trim()}'`);
      continue;
    }
    for (const y of [b.top + 2, b.top + b.height / 2]) {  // Covered even in part.
      const hit = document.elementFromPoint(b.left + 4, y);
      if (hit && !link.contains(hit) && !hit.contains(link)) {
        out.push(`nav item '${link.textContent.trim()}' covered by ${hit.className || hit.tagName}`);
        break;
      }
    }
  }
  return out;
})()
"""


def find_browser() -> str | None:
    for name in (os.environ.get("CHROME"), "chromium", "chromium-headless-shell",
                 "google-chrome", "chromium-browser"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def shot_pages(site: str) -> list[tuple[str, str]]:
    """(path in the site, anchor) of each page the browser part visits: every
    hand-written page at its top, then ``EXTRA_SHOT_PAGES``."""
    pages = [(os.path.relpath(p, site).replace(os.sep, "/"), "") for p in html_pages(site)]
    return [(rel, "") for rel, _ in pages if not rel.startswith("api/")] + EXTRA_SHOT_PAGES


def shot_name(rel: str, anchor: str) -> str:
    name = rel.removesuffix("index.html").strip("/").replace("/", "_") or "home"
    return f"{name}__{anchor}" if anchor else name


def console_problem(event: dict) -> str | None:
    """The text of a console error or uncaught exception in a CDP event, or None."""
    method, params = event.get("method"), event.get("params", {})
    if method == "Runtime.exceptionThrown":
        d = params.get("exceptionDetails", {})
        text = (d.get("exception") or {}).get("description") or d.get("text", "")
        where = d.get("url", "")
    elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
        text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
        where = ""
    elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
        text, where = params["entry"].get("text", ""), params["entry"].get("url", "")
    else:
        return None
    if IGNORED_CONSOLE.search(f"{text} {where}"):
        return None
    return f"console error: {' '.join(text.split())[:200]}" + (f" ({where})" if where else "")


async def _cdp_pages(browser: str, site: str, shots: str) -> list[str]:
    import websockets  # Only here: the static part needs nothing outside the stdlib.

    profile = tempfile.mkdtemp(prefix="rlpyt-docs-check-")
    proc = subprocess.Popen([browser, "--headless", "--no-sandbox", "--disable-gpu",
                             "--remote-debugging-port=0",
                             f"--user-data-dir={profile}", "--window-size=1400,900",
                             "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            # Its own process group: a distribution's `chromium` is often a
                            # shell script whose child is the browser, and the browser has
                            # children of its own; all of them end with the group.
                            start_new_session=True)
    problems: list[str] = []
    try:
        port = None
        deadline = time.monotonic() + 30
        while port is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if m:
                port = int(m.group(1))
            elif not line and proc.poll() is not None:
                raise RuntimeError(f"{browser} exited with {proc.returncode}")
        if port is None:
            raise RuntimeError(f"{browser} did not open its DevTools port within 30 s")
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        async with websockets.connect(ws_url, max_size=2**27) as ws:
            ids = iter(range(1, 10**6))
            events: list[dict] = []  # What the page reported meanwhile (console, errors).

            async def call(method, **params):
                msg_id = next(ids)
                await ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
                while True:
                    msg = json.loads(await asyncio.wait_for(ws.recv(), 60))
                    if msg.get("id") == msg_id:
                        if "error" in msg:
                            raise RuntimeError(f"{method}: {msg['error']}")
                        return msg.get("result", {})
                    if "method" in msg:
                        events.append(msg)

            for domain in ("Page", "Runtime", "Log"):
                await call(f"{domain}.enable")
            for rel, anchor in shot_pages(site):
                path = os.path.join(site, rel)
                if not os.path.isfile(path):
                    problems.append(f"{rel}: not in the built site")
                    continue
                events.clear()
                await call("Page.navigate", url="file://" + os.path.abspath(path))
                await _wait_ready(call)
                if anchor:
                    await call("Runtime.evaluate", expression=(
                        f"document.getElementById({anchor!r}).scrollIntoView()"))
                    await asyncio.sleep(0.3)
                found = await call("Runtime.evaluate", expression=LAYOUT_PROBE,
                                   returnByValue=True)
                problems += [f"{rel}: {p}" for p in found["result"].get("value") or []]
                shot = await call("Page.captureScreenshot", format="png")
                with open(os.path.join(shots, f"{shot_name(rel, anchor)}.png"), "wb") as f:
                    f.write(base64.b64decode(shot["data"]))
                found = [console_problem(e) for e in events]
                problems += [f"{rel}: {p}" for p in dict.fromkeys(found) if p]
    finally:
        _end_group(proc)
        shutil.rmtree(profile, ignore_errors=True)
    return problems


def _end_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the browser's whole process group, SIGKILL to what is left after 10 s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)  # Anyone left in the group?
            except ProcessLookupError:
                proc.wait()
                return
            proc.poll()  # Reap the direct child, so that it does not linger as a zombie.
            time.sleep(0.1)


async def _wait_ready(call, timeout: float = 20.0) -> None:
    """Until the page has loaded and Material's script has laid out the sidebar."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = await call("Runtime.evaluate", returnByValue=True, expression=(
            "document.readyState === 'complete' && "
            "!!document.querySelector('.md-sidebar[style], .md-content__inner')"))
        if r["result"].get("value"):
            await asyncio.sleep(0.5)  # Material scrolls the nav to the current page.
            return
        await asyncio.sleep(0.2)
    raise RuntimeError("page did not finish loading within 20 s")


def browser_checks(site: str, shots: str) -> list[str] | None:
    """Layout problems found in the browser, or None when there is no browser."""
    browser = find_browser()
    if browser is None:
        return None
    try:
        import websockets  # noqa: F401  (the docs extra installs it)
    except ImportError:
        return [f"a browser ({browser}) but no websockets package to drive it: "
                "pip install 'rlpyt[docs]'"]
    os.makedirs(shots, exist_ok=True)
    print(f"docs-check: laying out {len(shot_pages(site))} pages in {browser}")
    try:
        return asyncio.run(_cdp_pages(browser, site, shots))
    except (RuntimeError, OSError, asyncio.TimeoutError) as e:
        return [f"the browser part failed ({browser}): {type(e).__name__}: {e}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("site", nargs="?", default="site", help="the built site (default: site)")
    ap.add_argument("--docs", default=os.path.join(ROOT, "docs"),
                    help="the markdown sources (default: the repository's docs/)")
    ap.add_argument("--results-script", default=os.path.join(ROOT, "docs_tools", "results.py"),
                    help="the results page's generator, run with --check where it exists")
    ap.add_argument("--shots", default="site-shots",
                    help="where the screenshots go (default: site-shots)")
    ap.add_argument("--no-browser", action="store_true", help="the static checks only")
    args = ap.parse_args(argv)
    if not os.path.isfile(os.path.join(args.site, "index.html")):
        print(f"docs-check: {args.site}/index.html missing: build the site first "
              "(make docs)", file=sys.stderr)
        return 2
    problems, n = static_checks(args.site)
    print(f"docs-check: {n} pages read, {len(problems)} problems in the HTML, links and CSS")
    found = check_page_lengths(args.docs)
    print(f"docs-check: {len(markdown_pages(args.docs))} hand-written pages, {len(found)} over "
          f"{PAGE_LINE_LIMIT} lines")
    problems += found
    found = check_results(args.results_script)
    if found is None:
        print(f"docs-check: no {os.path.relpath(args.results_script)} yet: the results "
              "tables are not checked")
    else:
        print(f"docs-check: results tables {'up to date' if not found else 'out of date'} "
              f"({os.path.basename(args.results_script)} --check)")
        problems += found
    if not args.no_browser:
        found = browser_checks(args.site, args.shots)
        if found is None:
            print("docs-check: no headless Chromium on the PATH (chromium, "
                  "chromium-headless-shell, google-chrome or $CHROME): layout measurements "
                  "and screenshots skipped")
        else:
            problems += found
            print(f"docs-check: {len(found)} layout problems; screenshots in "
                  f"{args.shots}/: look at them")
    for p in problems:
        print(f"  {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
