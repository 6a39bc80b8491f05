"""Scanned PDFs and screenshots in Word files: what each reader gets back from pictures of text.

The pages are drawn here from the paragraphs of the bundled Spanish docs (`data/docs/es`, our own text): A4 at 150
dpi, DejaVu Sans at 11 points (Pillow), each page an image in a PDF (fpdf2), as a scanner writes one. Per reader:
the words of the page's text that come back in order (difflib over words), characters, and seconds a page.
ragnb reads them with `ragnb[ocr]` installed (RapidOCR); LlamaIndex's `PDFReader` and LangChain's `PyPDFLoader` read
the text layer, which a scan does not have. The runbook is a DOCX of screenshots (900 pixels wide, DejaVu Sans at
22 pixels, python-docx) of the first paragraphs, each after a line of its own; LlamaIndex's `DocxReader` and
LangChain's `Docx2txtLoader` read its text, not its pictures.

    pip install -e '.[ocr,bench]'
    python bench/bench_ocr.py [--pages 5] [--screenshots 8]
"""
import argparse, difflib, pathlib, re, tempfile, time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def paragraphs() -> list[str]:
    "The prose paragraphs of the bundled Spanish docs, markup dropped."
    out = []
    for f in sorted((ROOT / 'data' / 'docs' / 'es').glob('*.md')):
        for para in f.read_text().split('\n\n'):
            para = ' '.join(para.split())
            if len(para) > 120 and not para.startswith(('#', '|', '```', '-', '*', '>')):
                out.append(re.sub(r'[`*_]', '', para))
    return out


def scanned_pdf(n_pages: int) -> tuple[bytes, str]:
    "A PDF of `n_pages` scanned pages, and the text drawn on them."
    from fpdf import FPDF
    from PIL import Image, ImageDraw, ImageFont
    font = ImageFont.truetype('DejaVuSans.ttf', 23)

    def wrap(text):
        lines, cur = [], ''
        for w in text.split():
            if cur and font.getlength(f'{cur} {w}') > 1000: lines, cur = lines + [cur], w
            else: cur = f'{cur} {w}'.strip()
        return lines + [cur]
    pages, drawn, page, y = [], [], None, 0
    for text in paragraphs():
        lines = wrap(text)
        if page is None or y + 34 * len(lines) > 1600:
            if len(pages) == n_pages: break
            page, y = Image.new('L', (1240, 1754), 255), 120
            pages.append(page)
        draw = ImageDraw.Draw(page)
        for ln in lines:
            draw.text((120, y), ln, fill=0, font=font)
            y += 34
        y += 24
        drawn.append(text)
    pdf = FPDF()
    for p in pages:
        pdf.add_page()
        pdf.image(p, x=0, y=0, w=210, h=297)
    return bytes(pdf.output()), ' '.join(drawn)


def screenshot_docx(paras: list[str]) -> bytes:
    "A DOCX of one screenshot per paragraph of `paras` (the text drawn in it), each after a line that names it."
    import io
    import docx
    from docx.shared import Inches
    from PIL import Image, ImageDraw, ImageFont
    font = ImageFont.truetype('DejaVuSans.ttf', 22)
    d = docx.Document()
    for i, text in enumerate(paras, 1):
        lines, cur = [], ''
        for w in text.split():
            if cur and font.getlength(f'{cur} {w}') > 850: lines, cur = lines + [cur], w
            else: cur = f'{cur} {w}'.strip()
        lines.append(cur)
        im = Image.new('RGB', (900, 70 + 32 * len(lines)), 'white')
        draw = ImageDraw.Draw(im)
        draw.rectangle((0, 0, 900, 36), fill=(220, 220, 220))
        for k, ln in enumerate(lines): draw.text((24, 52 + 32 * k), ln, fill='black', font=font)
        buf = io.BytesIO()
        im.save(buf, 'PNG')
        d.add_paragraph(f'Captura {i}.')
        d.add_picture(io.BytesIO(buf.getvalue()), width=Inches(6))
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def ragnb_read(reader: str, data: bytes, name: str) -> str:
    "The text ragnb's `reader` (`pdf_document`, `docx_document`) gives, with `ragnb[ocr]` installed."
    from ragnb import readers
    if readers.ocr_engine() is None: return 'not installed (pip install -e .[ocr])'
    return getattr(readers, reader)(data, name).text


def llamaindex_read(reader: str, path: pathlib.Path) -> str:
    "The text LlamaIndex's file reader `reader` (`PDFReader`, `DocxReader`) gives."
    from llama_index.readers import file
    return '\n'.join(d.text for d in getattr(file, reader)().load_data(path))


def langchain_read(loader: str, path: pathlib.Path) -> str:
    "The text LangChain's document loader `loader` (`PyPDFLoader`, `Docx2txtLoader`) gives."
    from langchain_community import document_loaders
    return '\n'.join(d.page_content for d in getattr(document_loaders, loader)(str(path)).load())


def words_right(got: str, want: str) -> int:
    "How many of `want`'s words come back in order in `got`."
    sm = difflib.SequenceMatcher(None, got.split(), want.split(), autojunk=False)
    return sum(b.size for b in sm.get_matching_blocks())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--pages', type=int, default=5)
    ap.add_argument('--screenshots', type=int, default=8)
    a = ap.parse_args()
    data, want = scanned_pdf(a.pages)
    shots = paragraphs()[:a.screenshots]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        pdf, docx = pathlib.Path(tmp) / 'escaneo.pdf', pathlib.Path(tmp) / 'capturas.docx'
        pdf.write_bytes(data)
        docx.write_bytes(screenshot_docx(shots))
        pdf_in = f'{a.pages} scanned A4 pages (150 dpi)'
        docx_in = f'DOCX of {a.screenshots} screenshots'
        for inp, n, drawn, name, read in [
                (pdf_in, a.pages, want, 'ragnb (ragnb[ocr]: RapidOCR)',
                 lambda: ragnb_read('pdf_document', data, 'escaneo.pdf')),
                (pdf_in, a.pages, want, 'LlamaIndex PDFReader', lambda: llamaindex_read('PDFReader', pdf)),
                (pdf_in, a.pages, want, 'LangChain PyPDFLoader', lambda: langchain_read('PyPDFLoader', pdf)),
                (docx_in, a.screenshots, ' '.join(shots), 'ragnb (ragnb[ocr]: RapidOCR)',
                 lambda: ragnb_read('docx_document', docx.read_bytes(), 'capturas.docx')),
                (docx_in, a.screenshots, ' '.join(shots), 'LlamaIndex DocxReader',
                 lambda: llamaindex_read('DocxReader', docx)),
                (docx_in, a.screenshots, ' '.join(shots), 'LangChain Docx2txtLoader',
                 lambda: langchain_read('Docx2txtLoader', docx))]:
            t = time.perf_counter()
            try: got = read()
            except ImportError as e: got = f'not installed ({e.name})'
            dt = time.perf_counter() - t
            text = re.sub(r'\\(?=\d)|^> ', '', got, flags=re.M)     # markdown's escape of `1.`, a quote's mark
            rows.append((inp, name, words_right(text, drawn), len(drawn.split()), len(got.strip()), dt / n))
    print('Words drawn in pictures that each reader gives back in order (difflib over words)\n')
    print('| input | reader | words right | characters read | s a page or picture |')
    print('|---|---|---|---|---|')
    for inp, name, right, n, chars, secs in rows:
        print(f'| {inp} | {name} | {right:,} of {n:,} ({right / n:.1%}) | {chars:,} | {secs:.2f} |')


if __name__ == '__main__': main()
