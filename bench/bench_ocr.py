"""Scanned PDFs: what each reader gets back from pages that are pictures of text.

The pages are drawn here from the paragraphs of the bundled Spanish docs (`data/docs/es`, our own text): A4 at 150
dpi, DejaVu Sans at 11 points (Pillow), each page an image in a PDF (fpdf2), as a scanner writes one. Per reader:
the words of the page's text that come back in order (difflib over words), characters, and seconds a page.
ragnb reads them with `ragnb[ocr]` installed (RapidOCR); LlamaIndex's `PDFReader` and LangChain's `PyPDFLoader` read
the text layer, which a scan does not have.

    pip install -e '.[ocr,bench]'
    python bench/bench_ocr.py [--pages 5]
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


def ragnb_text(data: bytes) -> str:
    from ragnb.readers import ocr_engine, pdf_document
    if ocr_engine() is None: return 'not installed (pip install -e .[ocr])'
    return pdf_document(data, 'escaneo.pdf').text


def llamaindex_text(path: pathlib.Path) -> str:
    from llama_index.readers.file import PDFReader
    return '\n'.join(d.text for d in PDFReader().load_data(path))


def langchain_text(path: pathlib.Path) -> str:
    from langchain_community.document_loaders import PyPDFLoader
    return '\n'.join(d.page_content for d in PyPDFLoader(str(path)).load())


def words_right(got: str, want: str) -> int:
    "How many of `want`'s words come back in order in `got`."
    sm = difflib.SequenceMatcher(None, got.split(), want.split(), autojunk=False)
    return sum(b.size for b in sm.get_matching_blocks())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--pages', type=int, default=5)
    a = ap.parse_args()
    data, want = scanned_pdf(a.pages)
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / 'escaneo.pdf'
        path.write_bytes(data)
        rows = []
        for name, read in [('ragnb (ragnb[ocr]: RapidOCR)', lambda: ragnb_text(data)),
                           ('LlamaIndex PDFReader', lambda: llamaindex_text(path)),
                           ('LangChain PyPDFLoader', lambda: langchain_text(path))]:
            t = time.perf_counter()
            try: got = read()
            except ImportError as e: got = f'not installed ({e.name})'
            dt = time.perf_counter() - t
            text = re.sub(r'\\(?=\d)', '', got)                     # markdown's escape of a paragraph's `1.`
            rows.append((name, words_right(text, want), len(got.strip()), dt / a.pages))
    n = len(want.split())
    print(f'{a.pages} scanned A4 pages, 150 dpi, {n:,} words drawn ({len(want):,} characters)\n')
    print('| reader | words right | characters read | s a page |')
    print('|---|---|---|---|')
    for name, right, chars, secs in rows:
        print(f'| {name} | {right:,} of {n:,} ({right / n:.1%}) | {chars:,} | {secs:.2f} |')


if __name__ == '__main__': main()
