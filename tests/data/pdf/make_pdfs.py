#!/usr/bin/env python3
"""Makes the PDF fixtures of tests/data/pdf/ (committed; rerun only to change them).

    python3 tests/data/pdf/make_pdfs.py [OUT_DIR]   (default: this script's folder)

* invoice.pdf: three pages drawn by cairo's PDF surface (libcairo2, through ctypes), with text
  in embedded subset fonts, filled and stroked vector shapes, a translucent fill and a scaled
  bitmap: A4 portrait, US Letter, A5 landscape.
* handmade.pdf: written byte by byte below: page 1 /Rotate 90, page 2 a CropBox inside its
  MediaBox with drawing that crosses the crop edges, page 3 /Rotate 270 with a CropBox whose
  sides are no whole number of pixels, filled past every edge; text in
  the standard Helvetica and Times fonts (not embedded, so poppler substitutes them through
  fontconfig, as pdftoppm does).
* encrypted.pdf: handmade.pdf's pages under the standard security handler (RC4, 40-bit,
  revision 2) with user password "secret": poppler cannot open it without the password.
* owner_only.pdf: the same encryption with an empty user password (only an owner password), which
  every reader opens and renders without asking.
* truncated.pdf: the first half of invoice.pdf (the page tree and catalog, written last, are lost).
* damaged_xref.pdf: invoice.pdf with its cross-reference table overwritten by spaces (every
  object is intact; poppler rebuilds the table).
* damaged_page.pdf: handmade.pdf with page 2's compressed content stream cut in half.
* bleed.pdf: two pages of 595.3 x 841.9 pt, one filled past its edges, one filled exactly to
  them.
* no_pages.pdf: a well-formed PDF whose page tree is empty.

Everything is deterministic (fixed dates, fixed file identifiers).
"""
import ctypes
import hashlib
import pathlib
import sys
import zlib

OUT = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent

# --- cairo, through ctypes --------------------------------------------------------------------

def cairo_lib():
    lib = ctypes.CDLL("libcairo.so.2")
    lib.cairo_pdf_surface_create.restype = ctypes.c_void_p
    lib.cairo_pdf_surface_create.argtypes = [ctypes.c_char_p, ctypes.c_double, ctypes.c_double]
    lib.cairo_image_surface_create.restype = ctypes.c_void_p
    lib.cairo_image_surface_create.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.cairo_image_surface_get_data.restype = ctypes.POINTER(ctypes.c_uint8)
    lib.cairo_image_surface_get_data.argtypes = [ctypes.c_void_p]
    lib.cairo_image_surface_get_stride.argtypes = [ctypes.c_void_p]
    lib.cairo_create.restype = ctypes.c_void_p
    lib.cairo_create.argtypes = [ctypes.c_void_p]
    for name, args in {
        "cairo_pdf_surface_set_size": [ctypes.c_void_p, ctypes.c_double, ctypes.c_double],
        "cairo_pdf_surface_set_metadata": [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p],
        "cairo_set_source_rgb": [ctypes.c_void_p] + [ctypes.c_double] * 3,
        "cairo_set_source_rgba": [ctypes.c_void_p] + [ctypes.c_double] * 4,
        "cairo_rectangle": [ctypes.c_void_p] + [ctypes.c_double] * 4,
        "cairo_arc": [ctypes.c_void_p] + [ctypes.c_double] * 5,
        "cairo_move_to": [ctypes.c_void_p] + [ctypes.c_double] * 2,
        "cairo_line_to": [ctypes.c_void_p] + [ctypes.c_double] * 2,
        "cairo_set_line_width": [ctypes.c_void_p, ctypes.c_double],
        "cairo_select_font_face": [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int],
        "cairo_set_font_size": [ctypes.c_void_p, ctypes.c_double],
        "cairo_show_text": [ctypes.c_void_p, ctypes.c_char_p],
        "cairo_scale": [ctypes.c_void_p] + [ctypes.c_double] * 2,
        "cairo_set_source_surface": [ctypes.c_void_p, ctypes.c_void_p] + [ctypes.c_double] * 2,
        "cairo_surface_mark_dirty": [ctypes.c_void_p],
    }.items():
        getattr(lib, name).argtypes = args
    for name in ("cairo_fill", "cairo_stroke", "cairo_paint", "cairo_show_page", "cairo_save",
                 "cairo_restore", "cairo_destroy"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
    for name in ("cairo_surface_finish", "cairo_surface_destroy"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
    return lib


CAIRO_PDF_METADATA_CREATE_DATE = 5
CAIRO_PDF_METADATA_MOD_DATE = 6
CAIRO_FORMAT_RGB24 = 1

LINES = [
    ("Liberation Sans", 1, 20, "INVOICE  No. 2026-0417"),
    ("Liberation Serif", 0, 11, "Acme Paper Supplies Ltd., 12 Mill Road, Leeds LS1 4AB"),
    ("DejaVu Sans Mono", 0, 9, "Item                 Qty     Price     Amount"),
    ("DejaVu Sans Mono", 0, 9, "A4 copier paper        4     23.50      94.00"),
    ("DejaVu Sans Mono", 0, 9, "Toner cartridge K      1     61.99      61.99"),
    ("Liberation Sans", 0, 7, "Small print: payable within 30 days; late payments accrue 1.5%/month."),
    ("Liberation Sans", 1, 14, "TOTAL  EUR 155.99"),
]


def draw_page(lib, cr, width, height, seed):
    lib.cairo_set_source_rgb(cr, 0.93, 0.95, 1.0)
    lib.cairo_rectangle(cr, 30, 30, width - 60, 70)
    lib.cairo_fill(cr)
    y = 60.0
    for family, bold, size, text in LINES:
        lib.cairo_select_font_face(cr, family.encode(), 0, bold)
        lib.cairo_set_font_size(cr, size + seed)
        lib.cairo_set_source_rgb(cr, 0.1, 0.1, 0.1 + 0.2 * seed)
        lib.cairo_move_to(cr, 40, y)
        lib.cairo_show_text(cr, text.encode())
        y += 2.2 * size
    lib.cairo_set_source_rgb(cr, 0.0, 0.2, 0.6)
    lib.cairo_set_line_width(cr, 0.6)
    for k in range(6):  # thin table rules: vector antialiasing
        lib.cairo_move_to(cr, 40, y + 12 * k + 0.3 * k)
        lib.cairo_line_to(cr, width - 40, y + 12 * k + 0.7 * k)
        lib.cairo_stroke(cr)
    lib.cairo_set_source_rgba(cr, 0.9, 0.1, 0.1, 0.45)  # translucent stamp
    lib.cairo_arc(cr, width * 0.7, height * 0.6, 55.3, 0, 6.2831853)
    lib.cairo_fill(cr)
    image = lib.cairo_image_surface_create(CAIRO_FORMAT_RGB24, 16, 12)  # a scaled logo bitmap
    data = lib.cairo_image_surface_get_data(image)
    stride = lib.cairo_image_surface_get_stride(image)
    for yy in range(12):
        for xx in range(16):
            at = yy * stride + xx * 4
            data[at], data[at + 1], data[at + 2] = (xx * 16) & 255, (yy * 21) & 255, 128
    lib.cairo_surface_mark_dirty(image)
    lib.cairo_save(cr)
    lib.cairo_rectangle(cr, width - 150, 40, 96, 72)
    lib.cairo_scale(cr, 6.0, 6.0)
    lib.cairo_set_source_surface(cr, image, (width - 150) / 6.0, 40 / 6.0)
    lib.cairo_fill(cr)
    lib.cairo_restore(cr)
    lib.cairo_surface_destroy(image)


def make_invoice(path):
    lib = cairo_lib()
    pages = [(595.276, 841.89), (612.0, 792.0), (595.276, 419.528)]
    surface = lib.cairo_pdf_surface_create(str(path).encode(), *pages[0])
    for key in (CAIRO_PDF_METADATA_CREATE_DATE, CAIRO_PDF_METADATA_MOD_DATE):
        lib.cairo_pdf_surface_set_metadata(surface, key, b"2026-01-01T00:00:00Z")
    cr = lib.cairo_create(surface)
    for seed, (w, h) in enumerate(pages):
        lib.cairo_pdf_surface_set_size(surface, w, h)
        draw_page(lib, cr, w, h, seed)
        lib.cairo_show_page(cr)
    lib.cairo_destroy(cr)
    lib.cairo_surface_finish(surface)
    lib.cairo_surface_destroy(surface)


# --- A PDF written by hand --------------------------------------------------------------------

PAD = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")
FILE_ID = hashlib.md5(b"docfeed test pdf").digest()


def rc4(key, data):
    s = list(range(256))
    j = 0
    for i in range(256):
        j = (j + s[i] + key[i % len(key)]) & 255
        s[i], s[j] = s[j], s[i]
    i = j = 0
    out = bytearray()
    for byte in data:
        i = (i + 1) & 255
        j = (j + s[i]) & 255
        s[i], s[j] = s[j], s[i]
        out.append(byte ^ s[(s[i] + s[j]) & 255])
    return bytes(out)


class Rc4Security:
    """The standard security handler, revision 2, 40-bit RC4 (ISO 32000-1, 7.6.3.3-7.6.3.4,
    algorithms 2, 3 and 4)."""

    def __init__(self, user, owner, permissions=-44):
        padded_user = (user.encode() + PAD)[:32]
        owner_key = hashlib.md5((owner.encode() + PAD)[:32]).digest()[:5]
        self.o = rc4(owner_key, padded_user)
        self.p = permissions
        self.key = hashlib.md5(padded_user + self.o + permissions.to_bytes(4, "little", signed=True)
                               + FILE_ID).digest()[:5]
        self.u = rc4(self.key, PAD)

    def encrypt(self, num, data):
        object_key = hashlib.md5(self.key + num.to_bytes(3, "little") + b"\0\0").digest()[:10]
        return rc4(object_key, data)

    def dictionary(self):
        return (f"<< /Filter /Standard /V 1 /R 2 /O <{self.o.hex()}> /U <{self.u.hex()}> "
                f"/P {self.p} >>").encode()


def text(x, y, font, size, s):
    return f"BT /{font} {size} Tf {x} {y} Td ({s}) Tj ET\n"


HANDMADE_PAGES = [
    # (media box, crop box or None, rotate, content)
    ("0 0 612 792", None, 90,
     text(72, 720, "F1", 28, "Rotated 90: Helvetica") + text(72, 680, "F2", 14, "Times-Roman body")
     + "0.8 0.2 0.1 rg 72 500 300 80 re f 0 0 1 RG 3 w 72 400 m 540 120 l S\n"),
    ("0 0 600 800", "36 36 576 756", 0,
     "0.1 0.6 0.2 rg 0 0 120 120 re f 0.2 0.2 0.8 rg 500 700 100 100 re f\n"
     + text(40, 600, "F1", 18, "CropBox 540x720 inside a 600x800 MediaBox")
     + "0 0 0 RG 0.5 w 20 400 m 580 410 l S\n"),
    ("0 0 500 300", "10.5 20.25 480.75 290", 270,
     "0.95 0.85 0.6 rg 0 0 500 300 re f 0.2 0.3 0.9 rg 470 280 30 20 re f\n"
     + text(30, 150, "F2", 22, "Rotated 270, odd CropBox") + "0.5 0.5 0.5 rg 300 50 120 60 re f\n"),
]


# Sides that are no whole number of pixels at 72 or 200 dpi, drawn up to the edge and past it
# (a scan placed on the whole page, a full-bleed background): the last, partly covered pixel
# column is where a renderer that clips to the page box differs from pdftoppm.
BLEED_PAGES = [
    ("0 0 595.3 841.9", None, 0,
     "0.95 0.85 0.6 rg -10 -10 700 900 re f\n" + text(40, 400, "F1", 20, "Full bleed")),
    ("0 0 595.3 841.9", None, 0, "0.2 0.3 0.9 rg 0 0 595.3 841.9 re f\n"),
]


def handmade_objects(pages):
    """The objects of a PDF with `pages`: (number, dictionary bytes, stream bytes or None)."""
    count = len(pages)
    page_numbers = [5 + 2 * i for i in range(count)]
    kids = " ".join(f"{n} 0 R" for n in page_numbers)
    objects = [
        (1, b"<< /Type /Catalog /Pages 2 0 R >>", None),
        (2, f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode(), None),
        (3, b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>", None),
        (4, b"<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman >>", None),
    ]
    for (media, crop, rotate, content), n in zip(pages, page_numbers):
        boxes = f"/MediaBox [{media}]" + (f" /CropBox [{crop}]" if crop else "")
        objects.append((n, (f"<< /Type /Page /Parent 2 0 R {boxes} /Rotate {rotate} "
                            f"/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> "
                            f"/Contents {n + 1} 0 R >>").encode(), None))
        objects.append((n + 1, b"", content.encode()))
    return objects


def write_pdf(path, objects, security=None):
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    all_objects = list(objects)
    encrypt_ref = ""
    if security is not None:
        number = max(n for n, _, _ in objects) + 1
        all_objects.append((number, security.dictionary(), None))
        encrypt_ref = f" /Encrypt {number} 0 R"
    for num, dictionary, stream in all_objects:
        offsets[num] = len(out)
        out += f"{num} 0 obj\n".encode()
        if stream is None:
            out += dictionary
        elif dictionary:  # a stream written as given (make_damaged_page)
            out += dictionary + b"\nstream\n" + stream + b"\nendstream"
        else:
            data = zlib.compress(stream, 9)
            if security is not None:
                data = security.encrypt(num, data)
            out += f"<< /Length {len(data)} /Filter /FlateDecode >>\nstream\n".encode()
            out += data + b"\nendstream"
        out += b"\nendobj\n"
    xref = len(out)
    size = max(offsets) + 1
    out += f"xref\n0 {size}\n0000000000 65535 f \n".encode()
    for num in range(1, size):
        out += f"{offsets[num]:010d} 00000 n \n".encode()
    out += (f"trailer\n<< /Size {size} /Root 1 0 R /ID [<{FILE_ID.hex()}> <{FILE_ID.hex()}>]"
            f"{encrypt_ref} >>\nstartxref\n{xref}\n%%EOF\n").encode()
    path.write_bytes(bytes(out))


def make_truncated(invoice, path):
    data = invoice.read_bytes()
    path.write_bytes(data[:len(data) // 2])  # cairo writes the page tree and catalog last


def make_damaged_xref(invoice, path):
    data = bytearray(invoice.read_bytes())
    at = data.rindex(b"\nxref\n") + 1
    end = data.index(b"trailer", at)
    for i in range(at, end):  # lines of spaces where the table was
        if data[i] != ord("\n"):
            data[i] = ord(" ")
    path.write_bytes(bytes(data))


def make_damaged_page(path):
    """handmade.pdf's pages with page 2's deflate stream cut in half (its /Length still right)."""
    objects = handmade_objects(HANDMADE_PAGES)
    page2_content = 8  # objects: 5, 6 page 1; 7, 8 page 2
    damaged = []
    for num, dictionary, stream in objects:
        if num == page2_content:
            data = zlib.compress(stream, 9)
            damaged.append((num, b"<< /Length %d /Filter /FlateDecode >>" % (len(data) // 2),
                            data[:len(data) // 2]))
        else:
            damaged.append((num, dictionary, stream))
    write_pdf(path, damaged)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    invoice = OUT / "invoice.pdf"
    make_invoice(invoice)
    write_pdf(OUT / "handmade.pdf", handmade_objects(HANDMADE_PAGES))
    write_pdf(OUT / "encrypted.pdf", handmade_objects(HANDMADE_PAGES),
              Rc4Security(user="secret", owner="owner"))
    write_pdf(OUT / "owner_only.pdf", handmade_objects(HANDMADE_PAGES[:1]),
              Rc4Security(user="", owner="owner"))
    make_truncated(invoice, OUT / "truncated.pdf")
    make_damaged_xref(invoice, OUT / "damaged_xref.pdf")
    make_damaged_page(OUT / "damaged_page.pdf")
    write_pdf(OUT / "bleed.pdf", handmade_objects(BLEED_PAGES))
    write_pdf(OUT / "no_pages.pdf", [(1, b"<< /Type /Catalog /Pages 2 0 R >>", None),
                                     (2, b"<< /Type /Pages /Kids [] /Count 0 >>", None)])
    for p in sorted(OUT.glob("*.pdf")):
        print(f"{p.name}: {p.stat().st_size} bytes")


if __name__ == "__main__":
    main()
