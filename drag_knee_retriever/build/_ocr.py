"""OCR for PDF pages without a usable text layer: render (pypdfium2), read (Tesseract), cache.

(About 550 lines: one job, a page image to cached text, whose limits (timeout, pixel cap,
parallelism, cache) belong together; the next split would put the cache in its own module.)

The ``ocr`` extra brings the page renderer (``pypdfium2``); the engine is the ``tesseract``
program from the operating system's package manager (see :func:`install_hint`). Tesseract is run
as a subprocess per page, fed an uncompressed greyscale image on standard input: no temporary
files, a hard per-page timeout, and true parallelism from a small thread pool (each thread waits
on its own process; ``OMP_THREAD_LIMIT=1`` keeps each process on one core so ``workers``
processes share the machine instead of oversubscribing it).

Cost control:

- only the pages that need it (``mode="auto"``: fewer than ``min_chars`` non-blank characters in
  the text layer) or every page (``mode="always"``);
- the text is cached by the hash of the rendered page image and the engine settings, so
  re-ingesting a document never OCRs a page twice (:class:`OcrCache`);
- a pixel cap: a page whose rendering would exceed ``max_pixels`` is rendered smaller, so a
  hostile MediaBox cannot allocate gigabytes; a blank rendering skips the engine;
- a per-page timeout: a page the engine cannot finish in ``timeout`` seconds is left empty
  (and reported), the rest of the document goes on;
- progress through a callback and an INFO log line with the ETA.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Deque, Dict, List, Literal, Optional, Sequence, Tuple

from drag_knee_retriever.errors import ConfigError, OcrUnavailableError
from drag_knee_retriever.model._languages import OCR_LANGUAGES, tesseract_code
from drag_knee_retriever.model._settings import Settings, setting, settings_class, warn_deprecated

log = logging.getLogger(__name__)
_TESSERACT_NAMES = {code: name for name, code in OCR_LANGUAGES.items()}

OcrMode = Literal["auto", "always", "never"]
OCR_MODES: Tuple[str, ...] = ("auto", "always", "never")
# The pages OCR'd are recorded in a document's metadata under point_schema.OCR_PAGES_KEY; the
# builder turns that into each leaf's point_schema.TEXT_SOURCE_KEY.
ENV_TESSERACT = "DRAG_KNEE_TESSERACT"

# Measured on MMLongBench-Doc (benchmarks/RESULTS.md, "OCR"): 733 of the 737 pages of the 20
# image-only decks have fewer than 20 non-blank characters in their text layer, and only 22 of
# the 2,263 pages of the 63 text documents do (covers, full-page figures), so 20 OCRs what needs
# it and almost nothing else.
DEFAULT_MIN_CHARS = 20
# Scale 4/3 (96 dpi) renders the decks at the resolution of their embedded slide images (1024 px
# wide); scale 2 only upsamples them and costs 2.25x the pixels (benchmarks/RESULTS.md).
DEFAULT_SCALE = 4 / 3
# 40 Mpx is an A0 poster at 96 dpi, 8x an A4 page at 200 dpi: plenty for real pages, and a
# bounded allocation (40 MB greyscale) for hostile ones.
DEFAULT_MAX_PIXELS = 40_000_000

ProgressCallback = Callable[[str, int, int], None]

# PDFium is not thread-safe, not even across documents: every call into it holds this lock
# (the engine processes run outside it, so OCR stays parallel).
_PDFIUM_LOCK = threading.RLock()


def install_hint(languages: str = "eng") -> str:
    """How to install the Tesseract engine (and the language packs) on this operating system."""
    extra = [lang for lang in languages.split("+") if lang and lang not in ("eng", "osd")]
    if sys.platform == "darwin":
        return "brew install tesseract" + (" tesseract-lang" if extra else "")
    if sys.platform.startswith("win"):
        return (
            "winget install UB-Mannheim.TesseractOCR (or choco install tesseract), then add its folder to PATH"
            + (" and pick the extra languages in the installer" if extra else "")
        )
    packages = ["tesseract-ocr"] + [f"tesseract-ocr-{lang.lower().replace('_', '-')}" for lang in extra]
    return "sudo apt-get install " + " ".join(packages)


def _ocr_languages(name: str, value: Any) -> Tuple[str, ...]:
    """Language names (the package's one vocabulary: ``("english", "russian")``, or ``"english+russian"``).

    Tesseract's own codes (``"eng+rus"``, the spelling before issue 23) are read for one release with a
    DeprecationWarning naming the names.
    """
    parts = [p for p in re.split(r"[+,]", value) if p] if isinstance(value, str) else value
    if not isinstance(parts, (tuple, list)) or not parts or not all(isinstance(p, str) and p.strip() for p in parts):
        raise ConfigError(f"{name} must be language names, e.g. ('english', 'russian'), got {value!r}.")
    names, codes = [], []
    for part in (p.strip().lower() for p in parts):
        if part not in OCR_LANGUAGES and part in _TESSERACT_NAMES:
            codes.append(part)
            part = _TESSERACT_NAMES[part]
        tesseract_code(part)  # refuses an unknown name, listing the known ones
        names.append(part)
    if codes:
        warn_deprecated(f"OcrConfig(languages={'+'.join(codes)!r}) (Tesseract codes)",
                        f"language names, OcrConfig(languages={tuple(names)!r})", stacklevel=6)
    return tuple(dict.fromkeys(names))


@settings_class
class OcrConfig(Settings):
    """How PDF pages are OCR'd. Validated when built."""

    mode: OcrMode = setting(
        "auto", kind="choice", choices=OCR_MODES,
        doc="'auto' OCRs pages whose text layer has fewer than min_chars non-blank characters, 'always' every page "
            "(the OCR text replaces the text layer), 'never' none.")
    languages: Tuple[str, ...] = setting(
        ("english",), kind="any", check=_ocr_languages,
        doc="The languages on the pages, as names ('english', 'russian', 'german', ...; Tesseract needs each one's "
            "language data installed).")
    min_chars: int = setting(DEFAULT_MIN_CHARS, kind=int, low=0,
                             doc="With mode='auto': a page with fewer non-blank characters in its text layer is OCR'd.")
    scale: float = setting(DEFAULT_SCALE, kind=float, low=0.25, high=8.0, hint="1.0 = 72 dpi",
                           doc="Render scale (1.0 = 72 dpi; 4/3 renders slides at their embedded images' resolution).")
    grayscale: bool = setting(True, kind=bool, doc="Render in greyscale (what Tesseract reads best).")
    binarize: bool = setting(False, kind=bool, doc="Threshold the rendering to black and white before reading it.")
    psm: int = setting(3, kind=int, low=0, high=13, hint="a Tesseract page segmentation mode",
                       doc="Tesseract's page segmentation mode (3: fully automatic).")
    oem: int = setting(1, kind=int, low=0, high=3, hint="a Tesseract engine mode",
                       doc="Tesseract's engine mode (1: the LSTM engine).")
    workers: int = setting(default_factory=lambda: max(1, min(2, os.cpu_count() or 1)), kind=int, low=1, high=64,
                           doc="Engine processes at once (default: up to 2, one per core).")
    timeout: float = setting(60.0, kind=float, low=0.0, low_open=True,
                             doc="Seconds per page; a page not read in time is left empty (and reported).")
    max_pixels: int = setting(DEFAULT_MAX_PIXELS, kind=int, low=10_000,
                              doc="Cap on a rendered page: a larger one is rendered smaller (a hostile MediaBox "
                                  "cannot allocate gigabytes).")
    cache_dir: Optional[str] = setting(None, kind="any", optional=True, check=lambda n, v: None if v is None else str(v),
                                       doc="Where OCR text is cached (None: the user cache folder).")
    tesseract: Optional[str] = setting(None, kind="any", optional=True,
                                       doc="The engine program (default: $DRAG_KNEE_TESSERACT or tesseract on PATH).")

    @property
    def tesseract_languages(self) -> str:
        """The languages as Tesseract's ``-l`` argument: ``"eng+rus"``."""
        return "+".join(tesseract_code(name) for name in self.languages)

    def engine_key(self) -> str:
        """Everything besides the image that changes the engine's output (part of the cache key)."""
        return (f"tesseract {engine_version(self)}|{self.tesseract_languages}|psm{self.psm}|oem{self.oem}"
                f"|bin{int(self.binarize)}")


def needs_ocr(text: str, config: OcrConfig) -> bool:
    """Whether a page with this text layer is OCR'd under ``config``."""
    if config.mode == "never":
        return False
    if config.mode == "always":
        return True
    return sum(1 for c in text if not c.isspace()) < config.min_chars


# ---------------------------------------------------------------------------------------------
# engine discovery
# ---------------------------------------------------------------------------------------------

_VERSIONS: Dict[str, str] = {}
_LANGS: Dict[str, Tuple[str, ...]] = {}


def tesseract_command(config: OcrConfig) -> str:
    """The engine's path, or :class:`OcrUnavailableError` naming the install command."""
    name = config.tesseract or os.environ.get(ENV_TESSERACT) or "tesseract"
    found = shutil.which(name)
    if found is None:
        raise OcrUnavailableError(
            f"OCR needs the Tesseract engine, and {name!r} was not found on PATH. Install it: "
            f"{install_hint(config.tesseract_languages)} (or set {ENV_TESSERACT} to the program's path); "
            "or pass ocr='never' (--ocr never) to skip pages without a text layer."
        )
    return found


def engine_version(config: OcrConfig) -> str:
    """The engine's version string (``5.3.0``), asked once per program."""
    cmd = tesseract_command(config)
    if cmd not in _VERSIONS:
        out = _run_info([cmd, "--version"])
        first = out.strip().splitlines()[0] if out.strip() else "unknown"
        _VERSIONS[cmd] = first.split()[-1] if first.lower().startswith("tesseract") else first
    return _VERSIONS[cmd]


def check_engine(config: OcrConfig) -> str:
    """Check that the renderer, the engine and every language are installed; return the engine path.

    Raises :class:`OcrUnavailableError` saying what to install.
    """
    _import_pdfium()
    cmd = tesseract_command(config)
    if cmd not in _LANGS:
        out = _run_info([cmd, "--list-langs"])
        # The first line is "List of available languages in ...:"; the codes follow.
        _LANGS[cmd] = tuple(line.strip() for line in out.splitlines()[1:] if line.strip())
    missing = [lang for lang in config.tesseract_languages.split("+") if lang not in _LANGS[cmd]]
    if missing:
        raise OcrUnavailableError(
            f"Tesseract at {cmd} has no language data for {', '.join(missing)} "
            f"(installed: {', '.join(_LANGS[cmd]) or 'none'}). Install it: {install_hint(config.tesseract_languages)}."
        )
    return cmd


def _run_info(args: List[str]) -> str:
    try:
        proc = subprocess.run(args, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OcrUnavailableError(
            f"The OCR engine {args[0]} could not be run ({exc}); reinstall it: {install_hint()}."
        ) from None
    # Old versions print --version on stderr.
    return (proc.stdout or b"").decode("utf-8", "replace") + (proc.stderr or b"").decode("utf-8", "replace")


def _import_pdfium() -> Any:
    try:
        import pypdfium2
    except ImportError:
        raise OcrUnavailableError(
            "OCR renders PDF pages with pypdfium2: pip install 'drag-knee-retriever[ocr]' "
            f"(and the engine: {install_hint()})."
        ) from None
    return pypdfium2


# ---------------------------------------------------------------------------------------------
# cache
# ---------------------------------------------------------------------------------------------


def default_cache_dir() -> Path:
    """The user cache folder for OCR text when no index folder is given."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("drag-knee-retriever")) / "ocr"


class OcrCache:
    """OCR text on disk, one small file per (page image, engine settings) key.

    Files are written to a temporary name and renamed, so a crash never leaves half a text, and
    two processes ingesting the same page at once both end with the same file.
    """

    def __init__(self, folder: Optional[os.PathLike] = None) -> None:
        self.folder = Path(folder) if folder is not None else default_cache_dir()
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.txt"

    def get(self, key: str) -> Optional[str]:
        """The cached text for ``key``, or None."""
        try:
            text = self._path(key).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            self.misses += 1
            return None
        self.hits += 1
        return text

    def put(self, key: str, text: str) -> None:
        """Store ``text`` under ``key`` (a write failure is logged, never fatal: OCR text is kept in memory)."""
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.{id(text)}.tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("OCR cache %s not writable (%s); the text is used but not cached", self.folder, exc)


# ---------------------------------------------------------------------------------------------
# rendering and recognition
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PageImage:
    """A rendered page as an uncompressed PNM image (what the engine reads on stdin)."""

    index: int
    pnm: bytes
    width: int
    height: int
    blank: bool
    downscaled: bool

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.pnm).hexdigest()


@dataclass
class PageOcr:
    """The outcome of one page: its text, whether it came from the cache, and any failure."""

    index: int
    text: str
    cached: bool = False
    error: Optional[str] = None
    seconds: float = 0.0


def render_scale(width_pt: float, height_pt: float, config: OcrConfig) -> Tuple[float, bool]:
    """The scale to render a page at, lowered to fit ``max_pixels``; and whether it was lowered."""
    width_pt, height_pt = max(width_pt, 1.0), max(height_pt, 1.0)
    scale = float(config.scale)
    if width_pt * height_pt * scale * scale > config.max_pixels:
        return math.sqrt(config.max_pixels / (width_pt * height_pt)) * 0.999, True
    return scale, False


def render_page(pdf: Any, index: int, config: OcrConfig) -> PageImage:
    """Render page ``index`` (0-based) of an open pypdfium2 document for the engine."""
    import numpy as np

    page = pdf[index]
    try:
        width_pt, height_pt = page.get_size()
        scale, downscaled = render_scale(width_pt, height_pt, config)
        if downscaled:
            log.warning(
                "page %d is %.0f x %.0f pt: rendered at scale %.3f to stay under %d pixels",
                index + 1, width_pt, height_pt, scale, config.max_pixels,
            )
        bitmap = page.render(scale=scale, grayscale=config.grayscale, rev_byteorder=True)
        try:
            array = np.array(bitmap.to_numpy(), copy=True)
        finally:
            bitmap.close()
    finally:
        page.close()
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    if array.ndim == 3:
        array = array[:, :, :3]
    if config.binarize:
        gray = array if array.ndim == 2 else array.mean(axis=2).astype(np.uint8)
        array = np.where(gray >= _otsu(gray), 255, 0).astype(np.uint8)
    height, width = array.shape[:2]
    blank = bool(array.size == 0 or array.min() == array.max())
    magic = b"P5" if array.ndim == 2 else b"P6"
    pnm = b"%s\n%d %d\n255\n" % (magic, width, height) + np.ascontiguousarray(array).tobytes()
    return PageImage(index=index, pnm=pnm, width=width, height=height, blank=blank, downscaled=downscaled)


def _otsu(gray: Any) -> int:
    import numpy as np

    hist = np.bincount(gray.ravel(), minlength=256).astype(float)
    total = hist.sum()
    if total == 0:
        return 128
    weights = np.cumsum(hist)
    means = np.cumsum(hist * np.arange(256))
    between = (means[-1] * weights - means * total) ** 2 / np.maximum(weights * (total - weights), 1e-9)
    return int(np.argmax(between))


def recognize(image: PageImage, config: OcrConfig, cmd: Optional[str] = None) -> PageOcr:
    """Run the engine on one rendered page (no cache); a timeout or a crash gives an empty text and an error."""
    if image.blank:
        return PageOcr(image.index, "")
    cmd = cmd or tesseract_command(config)
    args = [cmd, "stdin", "stdout", "-l", config.tesseract_languages, "--psm", str(config.psm), "--oem", str(config.oem)]
    env = dict(os.environ, OMP_THREAD_LIMIT="1")
    started = time.perf_counter()
    try:
        proc = subprocess.run(args, input=image.pnm, capture_output=True, timeout=config.timeout, env=env)
    except subprocess.TimeoutExpired:
        return PageOcr(image.index, "", error=f"OCR timed out after {config.timeout:g} s",
                       seconds=time.perf_counter() - started)
    except OSError as exc:
        raise OcrUnavailableError(
            f"The OCR engine {cmd} could not be started ({exc}); reinstall it: {install_hint(config.tesseract_languages)}."
        ) from None
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        message = (proc.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        return PageOcr(image.index, "", error=f"OCR engine failed ({message[-1] if message else proc.returncode})",
                       seconds=seconds)
    return PageOcr(image.index, clean_ocr_text(proc.stdout.decode("utf-8", "replace")), seconds=seconds)


def clean_ocr_text(text: str) -> str:
    """Engine output as page text: trailing spaces, form feeds and runs of blank lines removed."""
    lines = [line.rstrip() for line in text.replace("\x0c", "\n").replace("\x00", "").splitlines()]
    out: List[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


@dataclass
class OcrRun:
    """What an OCR pass over one document did (for logs, reports and tests)."""

    texts: Dict[int, str] = field(default_factory=dict)
    errors: Dict[int, str] = field(default_factory=dict)
    cached: int = 0
    recognized: int = 0
    seconds: float = 0.0


def ocr_pdf_pages(
    data: bytes,
    indices: Sequence[int],
    config: OcrConfig,
    *,
    cache: Optional[OcrCache] = None,
    progress: Optional[ProgressCallback] = None,
    name: str = "PDF",
) -> OcrRun:
    """OCR the pages ``indices`` (0-based) of the PDF in ``data``; texts keyed by page index.

    Pages are rendered one at a time in this thread (pdfium is not thread-safe) and read by up
    to ``config.workers`` engine processes at once; at most twice that many rendered pages wait
    in memory. Cached pages skip the engine. ``progress("ocr", done, total)`` follows each page.

    Raises :class:`OcrUnavailableError` when the renderer, the engine or a language is missing.
    """
    run = OcrRun()
    if not indices:
        return run
    pdfium = _import_pdfium()
    cmd = check_engine(config)
    key_base = config.engine_key()
    cache = cache if cache is not None else OcrCache(config.cache_dir)
    started = time.perf_counter()
    total = len(indices)
    done = 0
    last_log = started

    def finish(result: PageOcr, key: Optional[str]) -> None:
        nonlocal done, last_log
        run.texts[result.index] = result.text
        if result.error:
            run.errors[result.index] = result.error
            log.warning("%s page %d: %s; the page is kept without text", name, result.index + 1, result.error)
        elif key is not None and not result.cached:
            cache.put(key, result.text)
        done += 1
        if progress is not None:
            progress("ocr", done, total)
        now = time.perf_counter()
        if now - last_log >= 5 or done == total:
            last_log = now
            rate = (now - started) / done
            log.info("OCR %s: %d/%d pages, %.1f s a page, ETA %.0f s", name, done, total, rate, rate * (total - done))

    with _PDFIUM_LOCK:
        pdf = pdfium.PdfDocument(data)
    try:
        with ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="drag-knee-ocr") as pool:
            pending: Deque[Tuple[Future, Optional[str]]] = deque()
            for index in indices:
                with _PDFIUM_LOCK:
                    image = render_page(pdf, index, config)
                if image.blank:  # nothing to read, nothing worth a cache file
                    finish(PageOcr(index, ""), None)
                    continue
                key = hashlib.sha256(f"{key_base}|{image.digest}".encode()).hexdigest()
                text = cache.get(key)
                if text is not None:
                    run.cached += 1
                    finish(PageOcr(index, text, cached=True), key)
                    continue
                run.recognized += 1
                pending.append((pool.submit(recognize, image, config, cmd), key))
                while len(pending) >= 2 * config.workers:
                    future, pkey = pending.popleft()
                    finish(future.result(), pkey)
            while pending:
                future, pkey = pending.popleft()
                finish(future.result(), pkey)
    finally:
        with _PDFIUM_LOCK:
            pdf.close()
    run.seconds = time.perf_counter() - started
    return run


def fill_pages(
    data: bytes,
    pages: Sequence[str],
    config: OcrConfig,
    *,
    name: str = "PDF",
    cache: Optional[OcrCache] = None,
    progress: Optional[ProgressCallback] = None,
) -> Tuple[List[str], List[int], Optional[str]]:
    """Page texts with OCR text where ``config`` asks for it (``pages[i]`` is page i of ``data``).

    Returns the pages, the 1-based numbers of the pages whose text now comes from OCR, and why
    OCR could not run (None if it ran or was not needed). Under ``"auto"`` a missing engine or a
    PDF the renderer refuses keeps the text layer (the reason is returned, so a caller can say
    it when nothing else is left); under ``"always"`` a missing engine raises
    :class:`OcrUnavailableError`. A page keeps its thin text layer when OCR reads less.
    """
    wanted = [i for i, text in enumerate(pages) if needs_ocr(text, config)]
    if not wanted:
        return list(pages), [], None
    try:
        run = ocr_pdf_pages(data, wanted, config, cache=cache, progress=progress, name=name)
    except OcrUnavailableError as exc:
        if config.mode == "always":
            raise
        log.info("%s: %d pages without a text layer not OCR'd: %s", name, len(wanted), exc)
        return list(pages), [], str(exc)
    except Exception as exc:  # pdfium refusing a file pypdf opened, a page index past its end
        log.warning("%s: OCR could not render this PDF (%s: %s); its text layer is used", name, type(exc).__name__, exc)
        return list(pages), [], (
            f"OCR could not render it ({type(exc).__name__}: {exc}); re-export or repair it, e.g. qpdf in.pdf out.pdf."
        )
    out = list(pages)
    ocr_pages = []
    for index, text in sorted(run.texts.items()):
        if config.mode == "always" or len(text.strip()) > len(pages[index].strip()):
            out[index] = text
            ocr_pages.append(index + 1)
    log.info("%s: %d pages OCR'd (%d from the cache, %d failed) in %.1f s",
             name, len(wanted), run.cached, len(run.errors), run.seconds)
    return out, ocr_pages, None


__all__ = [
    "OCR_MODES",
    "OcrCache",
    "OcrConfig",
    "OcrMode",
    "OcrRun",
    "OcrUnavailableError",
    "check_engine",
    "fill_pages",
    "install_hint",
    "needs_ocr",
    "ocr_pdf_pages",
    "recognize",
    "render_page",
]
