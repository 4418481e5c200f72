"""Screenshots of the built docs site in a real browser (headless Chromium): the home page and a guide;
and a walk of the README's links into the site.

Builds the site strictly into a temporary folder, serves it on 127.0.0.1 (a free port), and has Chromium
take a 1280x900 screenshot of each page; then checks that each PNG is a page and not a blank or an error
screen (its size, and the number of colours in it). Run from the repository root:

    python docs/scripts/screenshots.py                    # writes docs/assets/screenshots/*.png
    python docs/scripts/screenshots.py --out DIR          # elsewhere
    python docs/scripts/screenshots.py --walk             # follow each README link to a docs section

``--walk`` opens, for every ``docs/PAGE.md#ANCHOR`` link of README.md, that page of the built site in
Chromium and checks that the rendered page has the heading the anchor names; it prints the README line
each link is on, the URL and the heading reached.

Needs the `docs` extra (mkdocs) and Chromium (Debian: apt-get install chromium). Exit code 0 when every
screenshot was taken and looks like a page, 1 otherwise, 2 when Chromium or mkdocs is missing.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: (file name, path under the site): the home page and one guide.
PAGES = (("home.png", ""), ("guide-langchain.png", "guides/langchain/"))
WINDOW = (1280, 900)
#: A README link to a docs section: (page under the repository, anchor).
DOCS_LINK = re.compile(r"\]\((docs/[^)#\s]+\.md)#([^)\s]+)\)")


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def build_site(out: Path) -> None:
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
                   cwd=ROOT, check=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def serve(folder: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Serve ``folder`` on 127.0.0.1 at a free port, in a daemon thread; (server, base URL)."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # noqa: D401 - keep the output to the screenshots
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def screenshot(chromium: str, url: str, png: Path, profile: Path) -> None:
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
               f"--user-data-dir={profile}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
               "--virtual-time-budget=5000", f"--screenshot={png}", url]
    subprocess.run(command, check=True, capture_output=True, timeout=120)


def readme_docs_links() -> list[tuple[int, str, str]]:
    """(README line, page, anchor) of every ``docs/PAGE.md#ANCHOR`` link in README.md, in order."""
    found = []
    for number, line in enumerate((ROOT / "README.md").read_text(encoding="utf-8").splitlines(), 1):
        found += [(number, page, anchor) for page, anchor in DOCS_LINK.findall(line)]
    return found


def site_path(page: str) -> str:
    """Where MkDocs puts a docs page (``docs/guides/cli.md`` -> ``guides/cli/``; ``docs/index.md`` -> ``""``)."""
    path = page.removeprefix("docs/").removesuffix(".md")
    return "" if path == "index" else path.removesuffix("/index") + "/"


def rendered_dom(chromium: str, url: str, profile: Path) -> str:
    """The page's DOM after Chromium has run its scripts (``--dump-dom``)."""
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
               "--virtual-time-budget=5000", "--dump-dom", url]
    return subprocess.run(command, check=True, capture_output=True, text=True, timeout=120).stdout


def walk(chromium: str, base: str, profile: Path) -> list[str]:
    """Follow each README link into the site; the problems (a page or heading that is not there)."""
    problems = []
    for line, page, anchor in readme_docs_links():
        url = f"{base}{site_path(page)}#{anchor}"
        dom = rendered_dom(chromium, url, profile)
        heading = re.search(rf'<h([1-6])[^>]*\bid="{re.escape(anchor)}"[^>]*>(.*?)</h\1>', dom, re.S)
        text = re.sub(r"<[^>]+>|¶", "", heading.group(2)).strip() if heading else ""
        print(f"README.md:{line} -> {url}: {text or 'NO SUCH HEADING'}")
        if not heading:
            problems.append(f"README.md:{line}: {page}#{anchor} has no heading with that id in the rendered page")
    return problems


def looks_like_a_page(png: Path) -> str:
    """'' when ``png`` is a full-size picture with text on it; else what is wrong."""
    if not png.is_file() or png.stat().st_size < 10_000:
        return f"{png.name}: missing or too small to be a rendered page"
    try:
        from PIL import Image  # pillow comes with matplotlib (the plot extra)
    except ImportError:
        return ""
    with Image.open(png) as image:
        if image.size != WINDOW:
            return f"{png.name}: {image.size}, not {WINDOW}"
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
        if colours is not None and len(colours) < 50:
            return f"{png.name}: only {len(colours)} colours (a blank or error page?)"
    return ""


def shrink(png: Path) -> None:
    """Rewrite ``png`` with a 256-colour palette (a docs page has few colours): about a third of the size."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(png) as image:
        small = image.convert("RGB").quantize(colors=256)
    small.save(png, optimize=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "assets" / "screenshots",
                        help="folder for the PNGs (default: docs/assets/screenshots)")
    parser.add_argument("--walk", action="store_true",
                        help="instead of screenshots, follow each README link to a docs section")
    args = parser.parse_args(argv)
    chromium = find_chromium()
    if chromium is None:
        print("Chromium is not installed (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        print('mkdocs is not installed: pip install -e ".[docs]"', file=sys.stderr)
        return 2
    problems = []
    with tempfile.TemporaryDirectory(prefix="drag-knee-docs-") as tmp:
        site, profile = Path(tmp) / "site", Path(tmp) / "chromium-profile"
        build_site(site)
        server, base = serve(site)
        try:
            if args.walk:
                problems = walk(chromium, base, profile)
            else:
                args.out.mkdir(parents=True, exist_ok=True)
            for name, path in () if args.walk else PAGES:
                png = args.out / name
                screenshot(chromium, base + path, png, profile)
                problem = looks_like_a_page(png)
                if not problem:
                    shrink(png)
                problems += [problem] if problem else []
                print(f"{png}: {base + path} ({png.stat().st_size // 1024} KB){'  ' + problem if problem else ''}")
        finally:
            server.shutdown()
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
