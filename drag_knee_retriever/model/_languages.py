"""The package's one language vocabulary: lower-case English names (``"english"``, ``"russian"``).

Four settings name a language: the BM25 stemmer (``EmbeddingConfig.language``), the OCR engine
(``OcrConfig.languages``), the LLM summariser's prompt (``SummarizerSettings.language``) and the
evaluation datasets. Before issue 23 they spoke three vocabularies (``"english"``, Tesseract's
``"eng+rus"``, ``"Russian"``); now every one takes the names below, and each consumer translates
to what its engine reads (Tesseract codes here, the capitalised name in a prompt).
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from drag_knee_retriever.errors import ConfigError

__all__ = ["BM25_LANGUAGES", "OCR_LANGUAGES", "check_bm25_language", "check_name", "display_name", "tesseract_code"]

#: The languages the BM25 side stems and has stop words for (``drag_knee_retriever/data/stopwords``).
BM25_LANGUAGES: Tuple[str, ...] = ("english", "russian")

#: Language name -> Tesseract's language code (its ``.traineddata`` file and ``-l`` argument).
OCR_LANGUAGES: Dict[str, str] = {
    "afrikaans": "afr", "albanian": "sqi", "amharic": "amh", "arabic": "ara", "armenian": "hye", "azerbaijani": "aze",
    "basque": "eus", "belarusian": "bel", "bengali": "ben", "bosnian": "bos", "bulgarian": "bul", "catalan": "cat",
    "chinese_simplified": "chi_sim", "chinese_traditional": "chi_tra", "croatian": "hrv", "czech": "ces",
    "danish": "dan", "dutch": "nld", "english": "eng", "esperanto": "epo", "estonian": "est", "finnish": "fin",
    "french": "fra", "galician": "glg", "georgian": "kat", "german": "deu", "greek": "ell", "gujarati": "guj",
    "hebrew": "heb", "hindi": "hin", "hungarian": "hun", "icelandic": "isl", "indonesian": "ind", "irish": "gle",
    "italian": "ita", "japanese": "jpn", "kannada": "kan", "kazakh": "kaz", "korean": "kor", "latin": "lat",
    "latvian": "lav", "lithuanian": "lit", "macedonian": "mkd", "malay": "msa", "malayalam": "mal",
    "maltese": "mlt", "marathi": "mar", "mongolian": "mon", "nepali": "nep", "norwegian": "nor", "persian": "fas",
    "polish": "pol", "portuguese": "por", "punjabi": "pan", "romanian": "ron", "russian": "rus",
    "serbian": "srp", "serbian_latin": "srp_latn", "slovak": "slk", "slovenian": "slv", "spanish": "spa",
    "swahili": "swa", "swedish": "swe", "tagalog": "tgl", "tamil": "tam", "telugu": "tel", "thai": "tha",
    "turkish": "tur", "ukrainian": "ukr", "urdu": "urd", "uzbek": "uzb", "vietnamese": "vie", "welsh": "cym",
    "yiddish": "yid",
    # Tesseract's orientation and script detection data (not a language; a name for completeness).
    "osd": "osd",
}
_CODES = {code: name for name, code in OCR_LANGUAGES.items()}


def check_name(value: Any, what: str) -> str:
    """``value`` as a lower-case language name (any case accepted), or ConfigError."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{what} must be a language name such as 'english' or 'russian', got {value!r}.")
    return value.strip().lower()


def check_bm25_language(name: str, value: Any) -> str:
    """A BM25 language: one of :data:`BM25_LANGUAGES`."""
    language = check_name(value, name)
    if language not in BM25_LANGUAGES:
        raise ConfigError(f"{name} must be {' or '.join(map(repr, BM25_LANGUAGES))} (BM25 stemmer and stop words), "
                          f"got {value!r}.")
    return language


def tesseract_code(name: str) -> str:
    """The Tesseract code of a language name (ConfigError listing the names if unknown)."""
    code = OCR_LANGUAGES.get(name)
    if code is None:
        hint = f" (Tesseract's code {name!r} is the language {_CODES[name]!r})" if name in _CODES else ""
        raise ConfigError(f"OCR language {name!r} is not known{hint}; use names such as 'english', 'russian', "
                          f"'german' (all: {', '.join(sorted(OCR_LANGUAGES))}).")
    return code


def display_name(name: str) -> str:
    """How a prompt names a language: ``"russian"`` -> ``"Russian"``."""
    return name[:1].upper() + name[1:]
