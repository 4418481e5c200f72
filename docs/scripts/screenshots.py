"""Screenshots of the built docs site in a real browser (headless Chromium): the home page and a guide.

Builds the site strictly into a temporary folder, serves it on 127.0.0.1 (a free port), and has Chromium
take a 1280x900 screenshot of each page; then checks that each PNG is a page and not a blank or an error
screen (its size, and the number of colours in it). Run from the repository root:

    python docs/scripts/screenshots.py                    # writes docs/assets/screenshots/*.png
    python docs/scripts/screenshots.py --out DIR          # elsewhere

Needs the `docs` extra (mkdocs) and Chromium (Debian: apt-get install chromium). Exit code 0 when every
screenshot was taken and looks like a page, 1 otherwise, 2 when Chromium or mkdocs is missing.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
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
    args.out.mkdir(parents=True, exist_ok=True)
    problems = []
    with tempfile.TemporaryDirectory(prefix="drag-knee-docs-") as tmp:
        site, profile = Path(tmp) / "site", Path(tmp) / "chromium-profile"
        build_site(site)
        server, base = serve(site)
        try:
            for name, path in PAGES:
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
