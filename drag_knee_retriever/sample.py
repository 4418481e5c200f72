"""A small built-in sample corpus (written for this project) and two example queries.

Five short documents on distinct topics, so that the example queries have clear answers:

- ``beekeeping.md`` and ``tidal-power.md``: Markdown with headings (leaves are sections);
- ``sourdough.txt``: plain text (leaves are paragraphs);
- ``lighthouse-manual.pdf`` and ``bicycle-repair.pdf``: paged documents (one leaf per page).

:func:`sample_documents` returns them as :class:`~drag_knee_retriever.model._nodes.Document` objects (no
file I/O); :func:`write_sample_files` writes them to a folder as real ``.md``, ``.txt`` and
``.pdf`` files (the PDFs made by :func:`text_pdf_bytes`, a tiny dependency-free PDF writer), to try
the loaders and ``drag-knee ingest`` on. The first example query asks for one specific page; the
second asks a broad question, so the two traces show both ways the walk can stop (at a page, or
at a whole document whose root beats its sections) and what the focus step then keeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Sequence, Tuple, Union

from drag_knee_retriever.model._nodes import Document

EXAMPLE_QUERIES: Tuple[str, str] = (
    "What should a keeper do when fog rolls in?",
    "What does a beekeeper do through the year?",
)
"""Two example queries: a narrow one (one page of the lighthouse manual answers it: the walk
descends to that page) and a broad one (the walk keeps the whole beekeeping document: its root
beats its sections; the focus step then keeps the overview paragraph, ¶0). Both say "keeper",
which BM25 alone cannot tell apart."""

_BEEKEEPING = """# A Beekeeper's Year

A colony of honey bees is a single organism spread over tens of thousands of bodies. The keeper's
work follows the seasons: the colony grows in spring, may try to divide in early summer, stores
honey through the flow, and shrinks to a tight cluster for winter.

## Spring inspections

The first full inspection waits for a calm day warmer than about fifteen degrees, so the brood
does not chill while the frames are out. The keeper looks for eggs standing upright in the cells,
which prove the queen was laying within the last three days, and checks that the colony has at
least two frames of stored food left.

A colony that comes out of winter small but healthy can be helped by giving it a frame of sealed
brood from a stronger hive. Dead colonies should be closed up at once, because robbing bees carry
disease from the old combs to every hive nearby.

## Swarming

Swarming is how a colony reproduces: the old queen leaves with about half the workers, and the
bees left behind raise a new queen. The first warning is a row of queen cells along the bottom
edge of the frames, usually in late spring when the hive is crowded.

To keep the bees, the keeper can make an artificial swarm: move the old queen with a few frames
to a new box on the old site, so the flying bees join her, and leave the queen cells in the
original box a short distance away. Both halves then believe they have already swarmed.

## Harvesting honey

Honey is ready when the bees have capped most of the cells with wax, which they do once the water
content falls below about eighteen percent. Uncapped honey ferments in the jar. A clearer board
under the honey supers lets the bees walk down but not back up, so the boxes are empty of bees the
next day.

The cappings are sliced off with a warm knife, the frames spun in an extractor, and the honey
strained through a fine mesh and left to settle for a day so the air bubbles rise before bottling.

## Preparing for winter

After the last harvest the colony needs around eighteen kilograms of stores to survive until
spring. A light hive is fed thick sugar syrup in early autumn, while the bees can still evaporate
it. A mouse guard goes on the entrance, and the hive is tilted slightly forward so rain runs out.
"""

_TIDAL_POWER = """# Electricity from the Tides

The tides rise and fall twice a day because the Moon's gravity, and to a lesser degree the Sun's,
pulls the oceans into two bulges that the Earth rotates through. Unlike wind or sunshine, the
timing and height of every tide can be predicted years ahead, which makes tidal power the most
predictable of the renewable sources.

## Tidal barrages

A barrage is a low dam across an estuary with sluice gates and turbines. The gates let the rising
tide fill the basin; at high water they close, and once the sea outside has fallen a few metres
the water is released through low-head turbines that turn generators. Some barrages also generate
on the incoming tide, or pump extra water in at high tide when electricity is cheap.

The oldest large plant of this kind, on a French estuary, has produced power since the nineteen
sixties. Barrages work best where the tidal range is large, ideally more than five metres.

## Tidal stream turbines

A tidal stream turbine works like an underwater wind turbine. Because sea water is about eight
hundred times denser than air, a current of two or three metres per second carries as much energy
through a rotor as a gale does through a wind turbine, so the rotors can be much smaller.

The machines stand on the seabed or hang from floating platforms in narrow channels where the
current is fastest, and they turn their blades or the whole nacelle to face the flow in each
direction.

## Environmental trade-offs

A barrage changes the estuary behind it: mud flats that fed wading birds stay under water longer,
sediment settles in the basin, and fish must pass the turbines. Stream turbines leave the tidal
range alone, but their effect on marine mammals and on the seabed is still being studied. Both
need expensive marine construction, which is why tidal power remains a small share of supply.
"""

_SOURDOUGH = """Baking Sourdough Bread at Home

Sourdough bread rises without packaged yeast. The leavening comes from a starter: a paste of flour
and water in which wild yeasts and lactic acid bacteria live together. The yeasts make the gas
that lifts the dough, and the bacteria make the acids that give the bread its sour taste and help
it keep for days.

A new starter is made by mixing equal weights of wholemeal flour and water and leaving it covered
at room temperature. Each day half is thrown away and the rest is fed with fresh flour and water.
After about a week it should double in size within six hours of a feed and smell pleasantly sour
rather than like nail varnish.

For a loaf, the starter is fed the night before so that it is at its most active in the morning.
A common dough uses five hundred grams of bread flour, three hundred and fifty grams of water, one
hundred grams of active starter and ten grams of salt. The ratio of water to flour, called the
hydration, here seventy percent, decides how open and chewy the crumb will be.

The bulk fermentation lasts four to six hours at room temperature. Instead of kneading, the baker
stretches and folds the dough every half hour during the first two hours, which builds the gluten
network gently. The dough is ready to shape when it has grown by about half and shows bubbles on
its sides.

After shaping, the loaf rests in a floured basket, often overnight in the refrigerator, which
slows the yeast and deepens the flavour. It is baked in a very hot covered pot for the first
twenty minutes, so the steam keeps the crust soft while the loaf springs up, and uncovered for
another twenty to twenty-five minutes to brown.

A dense, gummy loaf usually means the dough was under-fermented: the starter was not active
enough or the bulk rise was cut short. A flat loaf that spreads means the opposite, an
over-fermented dough whose gluten has weakened, and the next bake should be shaped earlier.
"""

_LIGHTHOUSE_PAGES = (
    """Lighthouse Keeping Manual - Page 1: Lens and lamp care

The light must be burning from sunset to sunrise without a break. Each morning after the lamp is
extinguished, the keeper draws the curtains around the lantern so that the sun cannot focus
through the lens and scorch the lamp or start a fire.

The great glass lens is cleaned every day with a soft linen cloth and, once a week, polished with
spirit. Fingerprints and salt spray scatter the beam, and a dirty lens can cut the range of the
light by several miles. The brass fittings are polished, the lamp wicks trimmed square, and the
fuel tanks topped up before noon.""",
    """Lighthouse Keeping Manual - Page 2: Fog signal operation

When fog or falling snow hides the next landmark, roughly two nautical miles away, the keeper
starts the fog signal at once and keeps it sounding until visibility returns. The signal has its
own character, a fixed pattern of blasts and silences, so that ships can tell one station from
another by sound alone.

The compressors are started in advance and their air receivers checked for pressure. The keeper
notes the time the fog signal started and stopped in the log, and listens for ships answering with
their own horns, since a vessel close inshore in fog is the station's greatest worry.""",
    """Lighthouse Keeping Manual - Page 3: The keeper's log

Every watch is recorded in the station log: the times the light was lit and put out, the weather
every four hours, the barometer reading, the wind force and direction, and the state of the sea.
Passing ships are noted with their direction of travel.

Stores received and used, such as fuel, wicks and cleaning spirit, are entered in a separate book
and checked against the quarterly returns. The log is a legal record: entries are made in ink, and
mistakes are struck through with a single line, never erased.""",
    """Lighthouse Keeping Manual - Page 4: Storm and emergency procedure

Before a forecast gale, the keeper secures the boats, closes the storm shutters on the seaward
windows, and checks that the standby lamp and spare mantles are at hand. If the main light fails,
the standby is lit within minutes and the failure reported by radio.

If a vessel is seen in distress, the keeper fires the signal rockets, alerts the coastguard with
the ship's bearing and estimated distance, and keeps the vessel in sight until the lifeboat
arrives. No keeper leaves the station to attempt a rescue alone.""",
)

_BICYCLE_PAGES = (
    """Bicycle Repair Basics - Page 1: Cleaning and lubricating the chain

A clean, lightly oiled chain shifts smoothly and lasts thousands of kilometres longer. Wipe the
chain with a rag while turning the pedals backwards, then scrub the links with a brush and
degreaser if the grime is thick. Let it dry completely before oiling.

Put one drop of chain lubricant on each roller, turn the pedals for a minute so the oil works into
the links, and wipe off the excess from the outside: oil on the outer plates only collects dirt.
A chain that has stretched by more than half a percent should be replaced before it wears out the
sprockets.""",
    """Bicycle Repair Basics - Page 2: Adjusting rim brakes

Brake pads should meet the rim squarely, about a millimetre below its top edge, so they never
touch the tyre. Loosen the pad bolt, press the brake lever to hold the pad against the rim, and
tighten the bolt again. A slight toe-in, with the front of the pad touching first, stops squeal.

As pads wear, the lever travels further before the brakes bite. Turn the barrel adjuster where the
cable enters the brake to take up the slack, and replace the pads once the grooves in the rubber
have worn away.""",
    """Bicycle Repair Basics - Page 3: Fixing a puncture

Remove the wheel, let out any remaining air, and lever one side of the tyre off the rim with two
tyre levers. Pull out the inner tube, pump a little air into it and listen or feel for the escaping
air; holding the tube under water shows the hole as a stream of bubbles.

Roughen the area around the hole with sandpaper, spread a thin layer of rubber solution, wait until
it turns dull, then press the patch on firmly. Before refitting the tube, run your fingers around
the inside of the tyre to find the thorn or glass that caused the puncture, or the new tube will
go flat too.""",
    """Bicycle Repair Basics - Page 4: Tyre pressure and wheel checks

The right tyre pressure is printed on the tyre wall as a range. Road tyres run harder than
mountain bike tyres; heavier riders and smooth roads call for the upper end of the range, wet or
rough ground for the lower end. Check the pressure every week, because tubes lose air slowly.

Spin each wheel and watch the gap between the rim and a brake pad. A wheel that wobbles from side
to side needs truing: tightening the spokes on the opposite side of the wobble pulls the rim back
into line, a quarter turn at a time.""",
)


def _sample_specs() -> List[Tuple[str, str, Union[str, Sequence[str]], Dict[str, object]]]:
    return [
        ("beekeeping.md", "markdown", _BEEKEEPING, {"title": "A Beekeeper's Year", "topic": "nature"}),
        ("tidal-power.md", "markdown", _TIDAL_POWER, {"title": "Electricity from the Tides", "topic": "energy"}),
        ("sourdough.txt", "text", _SOURDOUGH, {"title": "Baking Sourdough Bread at Home", "topic": "food"}),
        ("lighthouse-manual.pdf", "pdf", _LIGHTHOUSE_PAGES, {"title": "Lighthouse Keeping Manual", "topic": "maritime"}),
        ("bicycle-repair.pdf", "pdf", _BICYCLE_PAGES, {"title": "Bicycle Repair Basics", "topic": "repair"}),
    ]


def sample_documents() -> List[Document]:
    """The sample corpus as documents (ids are file names; metadata has kind, title and topic)."""
    documents = []
    for name, kind, content, extra in _sample_specs():
        metadata = {"source": f"drag-knee sample: {name}", "path": name, "kind": kind, **extra}
        if isinstance(content, str):
            documents.append(Document(id=name, text=content, metadata=metadata))
        else:
            metadata["pages"] = len(content)
            documents.append(Document(id=name, pages=list(content), metadata=metadata))
    return documents


def write_sample_files(folder: Union[str, Path]) -> List[Path]:
    """Write the sample corpus to ``folder`` as ``.md``, ``.txt`` and ``.pdf`` files; return the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, kind, content, extra in _sample_specs():
        path = folder / name
        if kind == "pdf":
            path.write_bytes(text_pdf_bytes(list(content), title=str(extra.get("title") or "")))
        else:
            path.write_text(str(content), encoding="utf-8")
        written.append(path)
    return written


def text_pdf_bytes(pages: Sequence[str], *, title: str = "", line_chars: int = 95) -> bytes:
    """A minimal, valid PDF with one page per string (Helvetica, Latin-1 text, lines wrapped).

    Enough for the sample and for tests of the PDF loader; not a typesetting engine. An empty
    string gives a page without any text (like a scanned page).
    """
    objects: List[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in once the page tree's number is known
    pages_obj = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    kids = []
    for text in pages:
        lines: List[str] = []
        for paragraph in text.split("\n"):
            words = paragraph.split()
            current = ""
            for word in words:
                if current and len(current) + 1 + len(word) > line_chars:
                    lines.append(current)
                    current = word
                else:
                    current = f"{current} {word}" if current else word
            lines.append(current)
        ops = [b"BT /F1 10 Tf 12 TL 50 800 Td"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(b"(" + escaped.encode("latin-1", "replace") + b") Tj T*")
        ops.append(b"ET")
        stream = b"\n".join(ops) if text.strip() else b""
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 %d 0 R >> >> "
                b"/Contents %d 0 R >>" % (pages_obj, font, content)
            )
        )
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_obj
    objects[pages_obj - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    info = None
    if title:
        escaped_title = title.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        info = add(b"<< /Title (" + escaped_title.encode("latin-1", "replace") + b") >>")
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    trailer = b"<< /Size %d /Root %d 0 R" % (len(objects) + 1, catalog)
    if info is not None:
        trailer += b" /Info %d 0 R" % info
    out += b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


__all__ = ["EXAMPLE_QUERIES", "sample_documents", "text_pdf_bytes", "write_sample_files"]
