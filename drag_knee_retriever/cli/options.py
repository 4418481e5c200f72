"""The command's vocabulary: exit codes, choices (enums), the typer apps and the shared options."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated, Any, Dict, Optional

import typer

APP_NAME = "drag-knee-retriever"
INDEX_ENV = "DRAG_KNEE_INDEX"
DEBUG_ENV = "DRAG_KNEE_DEBUG"
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

#: Process-wide flags set by the root callback (-v, --debug) and read by the commands.
state: Dict[str, Any] = {"verbose": 0, "debug": False}


class Method(str, enum.Enum):
    knee = "knee"
    sensitive_knee = "sensitive_knee"
    fixed = "fixed"
    branch = "branch"


class Language(str, enum.Enum):
    english = "english"
    russian = "russian"


class Engine(str, enum.Enum):
    auto = "auto"
    edge = "edge"
    local = "local"
    server = "server"


class Ocr(str, enum.Enum):
    auto = "auto"
    always = "always"
    never = "never"


class Order(str, enum.Enum):
    score = "score"
    document = "document"


app = typer.Typer(
    name="drag-knee",
    help="Hierarchical, adaptive hybrid retrieval (DRAG with KNEE) over Qdrant: ingest documents, "
    "search them, and see why each result was chosen.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
docs_app = typer.Typer(help="List or delete indexed documents.", no_args_is_help=True)
app.add_typer(docs_app, name="docs")


IndexOption = Annotated[
    Optional[Path],
    typer.Option(
        "--index",
        help="Index folder (embedded Qdrant). Default: the per-user data folder; env DRAG_KNEE_INDEX.",
        show_default=False,
    ),
]
UrlOption = Annotated[
    Optional[str],
    typer.Option("--url", envvar="DRAG_KNEE_URL", help="Qdrant server or cluster URL instead of a folder.", show_default=False),
]
ApiKeyOption = Annotated[
    Optional[str],
    typer.Option("--api-key", envvar="QDRANT_API_KEY", help="API key for --url (env QDRANT_API_KEY).", show_default=False),
]
CollectionOption = Annotated[
    str, typer.Option("--collection", envvar="DRAG_KNEE_COLLECTION", help="Collection name.")
]
ModelOption = Annotated[
    Optional[str],
    typer.Option("--model", envvar="DRAG_KNEE_MODEL", help="fastembed dense model name (default all-MiniLM-L6-v2).", show_default=False),
]
ModelPathOption = Annotated[
    Optional[Path],
    typer.Option("--model-path", help="A local fastembed-ready model folder (or env DRAG_KNEE_MODEL_PATH).", show_default=False),
]
EngineOption = Annotated[
    Engine,
    typer.Option("--engine", envvar="DRAG_KNEE_ENGINE", case_sensitive=False,
                 help="Store engine: auto (Qdrant Edge for a folder, the server for --url), edge, local (qdrant-client local mode) or server."),
]
LanguageOption = Annotated[
    Optional[Language],
    typer.Option("--language", case_sensitive=False, show_default=False,
                 help="BM25 stemmer and stop words (default: the collection's; english for a new one)."),
]

OcrOption = Annotated[
    Ocr,
    typer.Option(
        "--ocr",
        help="OCR of PDF pages: auto (pages whose text layer has < 20 characters), always (every page), "
        "never. Needs the ocr extra and the Tesseract program (docs: PDFs and OCR).",
    ),
]
OcrLanguagesOption = Annotated[
    Optional[str],
    typer.Option("--ocr-languages", help="Languages on the pages, names joined by '+', e.g. english+russian (default english; Tesseract codes such as eng+rus still read).", show_default=False),
]
