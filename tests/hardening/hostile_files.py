"""Hostile files for the loader tests (not a test module): PDFs that break parsers, made by hand.

Each PDF is written object by object with a correct cross-reference table, so pypdf reaches the
hostile part (a deep page tree, a decompression bomb, AES-256 encryption) instead of failing on
the syntax first.
"""

from __future__ import annotations

import zlib
from typing import List


def pdf_from_objects(objects: List[bytes], *, root: int = 1, trailer_extra: bytes = b"") -> bytes:
    """A PDF whose object ``i + 1`` is ``objects[i]``, with an xref table and a trailer."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root %d 0 R %s>>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, root, trailer_extra, xref)
    return bytes(out)


def _stream(data: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d %s>>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def _text_page(parent: int, contents: int) -> bytes:
    return (b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>"
            % (parent, contents))


def deep_page_tree_pdf(depth: int = 150) -> bytes:
    """One text page under ``depth`` nested /Pages nodes (pypdf refuses trees deeper than ~100)."""
    # 1 catalog, 2..depth+1 the /Pages chain, then the page and its content stream.
    page, contents = depth + 2, depth + 3
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    for level in range(depth):
        number = 2 + level
        kid = number + 1 if level < depth - 1 else page
        parent = b"/Parent %d 0 R " % (number - 1) if level else b""
        objects.append(b"<< /Type /Pages %s/Kids [%d 0 R] /Count 1 >>" % (parent, kid))
    objects.append(_text_page(depth + 1, contents))
    objects.append(_stream(b"BT /F1 12 Tf 72 720 Td (A page about lighthouses.) Tj ET"))
    return pdf_from_objects(objects)


def bomb_pdf(inflated_mb: int = 204) -> bytes:
    """A small PDF whose one content stream inflates to ``inflated_mb`` MB (pypdf's LimitReachedError)."""
    compressor = zlib.compressobj(9)
    chunk = b" " * (1 << 20)
    data = b"".join(compressor.compress(chunk) for _ in range(inflated_mb)) + compressor.flush()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        _text_page(2, 4),
        _stream(data, b"/Filter /FlateDecode "),
    ]
    return pdf_from_objects(objects)


def aes256_pdf() -> bytes:
    """A PDF encrypted with AES-256 (V 5, R 6): opening it needs the ``cryptography`` package."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        _text_page(2, 4),
        _stream(b"\x00" * 48),
        (b"<< /Filter /Standard /V 5 /R 6 /Length 256 /P -4 /EncryptMetadata true "
         b"/CF << /StdCF << /AuthEvent /DocOpen /CFM /AESV3 /Length 32 >> >> /StmF /StdCF /StrF /StdCF "
         b"/O <" + b"11" * 48 + b"> /U <" + b"22" * 48 + b"> /OE <" + b"33" * 32 + b"> /UE <" + b"44" * 32
         + b"> /Perms <" + b"55" * 16 + b"> >>"),
    ]
    return pdf_from_objects(objects, trailer_extra=b"/Encrypt 5 0 R /ID [<00112233445566778899aabbccddeeff> <00112233445566778899aabbccddeeff>] ")


_FONT = b"/Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >>"


def operator_flood_pdf(operators: int = 900_000, operator: bytes = b"(a) Tj\n") -> bytes:
    """One page whose compressed content stream repeats a text operator: 900,000 in 9.5 KB, inside
    every pypdf limit (2,000,000 tokens per stream), ~23-88 s of pypdf's text extraction."""
    data = zlib.compress(b"BT /F1 12 Tf " + operator * operators + b" ET", 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        _text_page(2, 4),
        _stream(data, b"/Filter /FlateDecode "),
    ]
    return pdf_from_objects(objects)


def form_fanout_pdf(pages: int = 1, invocations: int = 5_000, form_operators: int = 200) -> bytes:
    """``pages`` pages sharing one content stream that invokes a form ``invocations`` times (pypdf
    stops at 5,000 per page), the form holding ``form_operators`` text operators: under 1 KB,
    millions of operators and megabytes of text for pypdf (one page: ~30 s)."""
    form = zlib.compress(b"BT /F1 12 Tf " + b"(abcd) Tj\n" * form_operators + b" ET", 9)
    content = zlib.compress(b"/X Do\n" * invocations, 9)
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
        _stream(form, b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << " + _FONT
                + b" >> /Filter /FlateDecode "),
        _stream(content, b"/Filter /FlateDecode "),
    ]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << " + _FONT
                + b" /XObject << /X 3 0 R >> >> >>"] * pages
    return pdf_from_objects(objects)


def text_pages_pdf(pages: List[str]) -> bytes:
    """A plain PDF with one line of text per page (a genuine file, for comparison)."""
    count = len(pages)
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(count))
               + b"] /Count %d >>" % count]
    for i, text in enumerate(pages):
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")
        objects.append(_text_page(2, 4 + 2 * i))
        objects.append(_stream(b"BT /F1 12 Tf 72 720 Td (" + escaped + b") Tj ET"))
    return pdf_from_objects(objects)
