"""Check the built documentation site (``make docs-check``; issue 30).

Two parts:

1. Without a browser, from the HTML and CSS of the built site (always runs): every API
   page under a size limit, one h1 per page and no h2 repeating it, no nav section whose
   child carries the section's own label, and the layout rules of
   ``docs/stylesheets/extra.css`` (nav title, code wrapping, table overflow) present and
   linked from every page.
2. With a headless Chromium (``chromium``, ``chromium-headless-shell`` or
   ``google-chrome`` on the PATH, or ``$CHROME``), on a fixed set of pages: the page is
   laid out at 1400x900 and a script measures it (a code block or table reaching past
   the content column, a code line cut off, i.e. neither wrapped nor in a block with a
   visible scroll bar, the first or current nav item covered by another element), and
   a screenshot of each page goes to ``site-shots/`` (git-ignored) for a person to look
   at.  Without a browser this part is skipped and says so.

Usage: ``python docs_tools/check_site.py [SITE_DIR] [--shots DIR] [--no-browser]``;
exit status 1 when a check fails.
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
import urllib.request
from html.parser import HTMLParser

API_PAGE_LIMIT = 150_000  # Bytes of HTML, nav included; the largest module page is ~75 kB.
CSS_RULES = {  # extra.css must hold these (selector, declaration): what each fixes.
    "nav title": (".md-nav--primary > .md-nav__title", "display: none"),
    "code wrap": (".md-typeset .highlight:not(.language-python)", "white-space: pre-wrap"),
    "code scroll": (".md-typeset pre > code", "overflow-x: auto"),
    "table overflow": (".md-typeset table:not([class])", "overflow-x: auto"),
}
# Pages the browser part lays out and photographs: (path in the site, element id to
# scroll to or "").  One of each kind: home, a guide page with wide code, a long table,
# an API package page and an API module page.
SHOT_PAGES = [
    ("index.html", ""),
    ("own_script/index.html", ""),
    ("benchmarks/index.html", "minatar"),
    ("api/index.html", ""),
    ("api/algos/index.html", ""),
    ("api/algos/pg/ppo/index.html", ""),
]


class _PageParser(HTMLParser):
    """Collects headings, stylesheet links and the primary nav's section labels."""

    def __init__(self):
        super().__init__()
        self.headings: list[tuple[str, str]] = []  # (tag, text)
        self.stylesheets: list[str] = []
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


def check_page(rel: str, html: str) -> list[str]:
    """Problems of one built page, from its HTML alone."""
    problems = []
    if rel.startswith("api/") and len(html.encode()) > API_PAGE_LIMIT:
        problems.append(f"{rel}: {len(html.encode())} bytes, over the API page limit "
                        f"{API_PAGE_LIMIT}: split the module")
    p = _PageParser()
    p.feed(html)
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


def static_checks(site: str) -> tuple[list[str], int]:
    problems = check_css(site)
    pages = html_pages(site)
    for path in pages:
        rel = os.path.relpath(path, site).replace(os.sep, "/")
        with open(path, encoding="utf-8") as f:
            problems += check_page(rel, f.read())
    return problems, len(pages)


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

            async def call(method, **params):
                msg_id = next(ids)
                await ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
                while True:
                    msg = json.loads(await asyncio.wait_for(ws.recv(), 60))
                    if msg.get("id") == msg_id:
                        if "error" in msg:
                            raise RuntimeError(f"{method}: {msg['error']}")
                        return msg.get("result", {})

            await call("Page.enable")
            for rel, anchor in SHOT_PAGES:
                path = os.path.join(site, rel)
                if not os.path.isfile(path):
                    problems.append(f"{rel}: not in the built site")
                    continue
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
                name = rel.replace("/index.html", "").replace("/", "_") or "home"
                name = "home" if name == "index.html" else name
                with open(os.path.join(shots, f"{name}.png"), "wb") as f:
                    f.write(base64.b64decode(shot["data"]))
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
    print(f"docs-check: laying out {len(SHOT_PAGES)} pages in {browser}")
    try:
        return asyncio.run(_cdp_pages(browser, site, shots))
    except (RuntimeError, OSError, asyncio.TimeoutError) as e:
        return [f"the browser part failed ({browser}): {type(e).__name__}: {e}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("site", nargs="?", default="site", help="the built site (default: site)")
    ap.add_argument("--shots", default="site-shots",
                    help="where the screenshots go (default: site-shots)")
    ap.add_argument("--no-browser", action="store_true", help="the static checks only")
    args = ap.parse_args(argv)
    if not os.path.isfile(os.path.join(args.site, "index.html")):
        print(f"docs-check: {args.site}/index.html missing: build the site first "
              "(make docs)", file=sys.stderr)
        return 2
    problems, n = static_checks(args.site)
    print(f"docs-check: {n} pages read, {len(problems)} problems in the HTML and CSS")
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
