"""HTML and PDF ingestion: converters compared on real pages, then retrieval from the converted documents.

1. HTML converters on the installed Debian Reference (DocBook, es + en) and Python 3 docs (Sphinx) pages: ragnb's
   reader (lxml + its own walker), markdownify over BeautifulSoup (what ../shared/tools/debian_reference_corpus.py
   uses) and trafilatura; plus the bare parse of lxml and selectolax. Speed, headings and code blocks kept, anchors
   recorded, and the share of chunks whose prose (outside code) still carries HTML tags or entities.
2. PDF text extraction on the installed Debian Reference PDFs: ragnb's reader (pypdfium2) against pypdf.
3. Retrieval: three stores of the same manual, from the markdown corpus, from the HTML pages, and from the PDFs, and
   hit@5 / MRR on our 56 labelled questions (bench/debian_questions.jsonl), hybrid search.
4. Fidelity (issue 33): what `ragnb index` would store from real folders, read and chunked as it does (no model):
   the installed Spanish Debian Handbook folder (DocBook HTML, with its images, stylesheets and Makefile), 46 pages of
   the Python library docs (Sphinx), and 7 PDFs shipped by Debian packages. Per corpus: files indexed and skipped,
   the share of the pages' visible text kept, chunks holding navigation (DocBook banner or footer links, Sphinx's
   "Previous topic"/"Show Source"/pilcrows), chunks with an identifier split at `_`, chunks from image, stylesheet
   or build files, chunks holding a PDF running head ("CHAPTER 1. ..."), and for the handbook, chunks holding two
   answers that live in its sidebars (`cron.allow`, `@reboot`); and the markdown of Node.js's docs (`nodejs`), whose
   pages hold HTML comments, tables and tags: chunks whose prose still carries HTML.

Prints one table per part. Needs debian-reference-es/-en (and python3-doc for the Sphinx pages) installed; part 4
needs debian-handbook, debian-faq, maint-guide-es, bzip2-doc, fontconfig, shared-mime-info, libtasn1-doc and
camlidl-doc (the PDFs it finds are used; the table names them).

    python bench/bench_ingest.py [--keep DIR] [--parts html,pdf,retrieval,fidelity]
"""
import argparse, json, os, pathlib, re, shutil, sys, tempfile, time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from bench_retrieve import first_answer_rank  # noqa: E402
from corpus import corpus_dir  # noqa: E402

DEBIAN = pathlib.Path('/usr/share/debian-reference')
SPHINX = pathlib.Path('/usr/share/doc/python3/html/library')
MARKUP = re.compile(r'</?(?:html|head|body|div|span|p|a|table|tr|td|th|ul|ol|li|pre|code|h[1-6]|section|nav|dl|dt|dd|'
                    r'em|strong|img|br|script|style)\b[^>]*>|&(?:amp|lt|gt|quot|nbsp|#\d+);', re.I)


def has_markup(text, comments=False):
    """HTML tags or entities (and, with `comments`, HTML comments) left in prose (code fences and code spans may show
    HTML on purpose: they are skipped)."""
    prose = re.sub(r'`[^`\n]*`', '', re.sub(r'^ *(`{3,})[^\n]*\n.*?^ *\1 *$', '', text, flags=re.M | re.S))
    return bool(MARKUP.search(prose)) or comments and '<!--' in prose


def html_pages():
    deb = sorted(p for p in DEBIAN.glob('*.html') if not p.name.startswith('index'))
    sph = sorted(SPHINX.glob('*.html'))[:120] if SPHINX.is_dir() else []
    return {'Debian Reference (DocBook)': deb, 'Python 3 library docs (Sphinx)': sph}


def ours(data):
    from ragnb.readers import html_document
    return html_document(data).text


def markdownify_bs4(data):
    from bs4 import BeautifulSoup
    from markdownify import markdownify
    soup = BeautifulSoup(data, 'html.parser')
    return markdownify(str(soup.body or soup), heading_style='ATX', strip=['a', 'img'])


def trafilatura_md(data):
    import trafilatura
    return trafilatura.extract(data.decode('utf-8', 'replace'), output_format='markdown', include_tables=True,
                               include_formatting=True) or ''


def lxml_parse(data):
    import lxml.html
    lxml.html.document_fromstring(data)
    return ''


def selectolax_parse(data):
    from selectolax.lexbor import LexborHTMLParser
    LexborHTMLParser(data)
    return ''


def source_counts(data):
    "Headings and code blocks in the page's content (the reader's main-content rules), as the converters should keep."
    import lxml.html
    from ragnb.readers import _is_chrome, _main_content
    main = _main_content(lxml.html.document_fromstring(data))
    live = lambda e: not any(_is_chrome(a) for a in [e, *e.iterancestors()])
    heads = sum(live(e) for e in main.iter('h1', 'h2', 'h3', 'h4', 'h5', 'h6'))
    return heads, sum(live(e) for e in main.iter('pre'))


def md_counts(md):
    "Headings outside code, and fenced code blocks, in converted markdown."
    fences = re.findall(r'^ *(`{3,})[^\n]*\n.*?^ *\1 *$', md, re.M | re.S)
    prose = re.sub(r'^ *(`{3,})[^\n]*\n.*?^ *\1 *$', '', md, flags=re.M | re.S)
    return len(re.findall(r'^#{1,6} ', prose, re.M)), len(fences)


def markup_share(md, name):
    from ragnb.chunking import chunk_document
    cs = chunk_document(md, source=name)
    return sum(has_markup(c.body) for c in cs), len(cs)


def part_html():
    print('## HTML converters\n')
    print('| pages | converter | files/s | MB/s | headings kept | code blocks kept | chunks with markup |')
    print('|---|---|---|---|---|---|---|')
    for label, pages in html_pages().items():
        if not pages: continue
        datas = [(p.name, p.read_bytes()) for p in pages]
        mb = sum(len(d) for _, d in datas) / 2**20
        src = [source_counts(d) for _, d in datas]
        want_h, want_c = sum(h for h, _ in src), sum(c for _, c in src)
        for name, fn in [('ragnb reader (lxml + walker)', ours), ('markdownify (bs4)', markdownify_bs4),
                         ('trafilatura', trafilatura_md), ('lxml parse only', lxml_parse),
                         ('selectolax parse only', selectolax_parse)]:
            try:
                t = time.perf_counter()
                mds = [fn(d) for _, d in datas]
                dt = time.perf_counter() - t
            except Exception as e:
                print(f'| {label} | {name} | failed: {type(e).__name__}: {e} |||||')
                continue
            if 'parse only' in name:
                print(f'| {label} ({len(datas)}, {mb:.1f} MB) | {name} | {len(datas) / dt:.0f} | {mb / dt:.1f} | | | |')
                continue
            got = [md_counts(m) for m in mds]
            mk = [markup_share(m, n) for m, (n, _) in zip(mds, datas)]
            bad, tot = sum(b for b, _ in mk), sum(n for _, n in mk)
            print(f'| {label} ({len(datas)}, {mb:.1f} MB) | {name} | {len(datas) / dt:.0f} | {mb / dt:.1f} | '
                  f'{sum(h for h, _ in got)}/{want_h} | {sum(c for _, c in got)}/{want_c} | {bad}/{tot} |')
    print()


def part_pdf():
    import pypdf
    from ragnb.readers import pdf_document
    print('## PDF text extraction\n')
    print('| PDF | extractor | pages | pages/s | words cut by a line-end hyphen | running header lines left | '
          'glued words (25+ letters) |')
    print('|---|---|---|---|---|---|---|')
    for pdf in sorted(DEBIAN.glob('*.pdf')):
        data = pdf.read_bytes()
        t = time.perf_counter()
        doc = pdf_document(data, pdf.name)
        dt_ours = time.perf_counter() - t
        t = time.perf_counter()
        reader = pypdf.PdfReader(pdf)
        text_pypdf = '\n'.join(p.extract_text() or '' for p in reader.pages)
        dt_pypdf = time.perf_counter() - t
        n = len(reader.pages)
        cut = lambda s: len(re.findall(r'[a-záéíóúñ]-\n[a-záéíóúñ]', s))
        running = r'(?:Debian ?Reference|Gu[ií]a ?de ?referencia ?de ?Debian)'      # the header text, en and es
        heads = lambda s: len(re.findall(rf'^\s*{running}\s*(?:\d+\s*/\s*\d+)?\s*$', s, re.M | re.I))
        glued = lambda s: len(re.findall(r'\b[a-záéíóúñ]{25,}\b', s))
        for name, text, dt in [('ragnb reader (pypdfium2)', doc.text, dt_ours), ('pypdf extract_text', text_pypdf,
                                                                                 dt_pypdf)]:
            print(f'| {pdf.name} | {name} | {n} | {n / dt:.0f} | {cut(text)} | {heads(text)} | {glued(text)} |')
    print()


def part_retrieval(keep):
    from ragnb.index import Store
    from ragnb.ingest import index_paths
    from ragnb.retrieve import retrieve
    qs = [json.loads(x) for x in (ROOT / 'bench' / 'debian_questions.jsonl').read_text().splitlines()]
    work = pathlib.Path(tempfile.mkdtemp())
    base = pathlib.Path(keep) if keep else work               # the copies stay with the stores that index them
    html_dir, pdf_dir = base / 'html', base / 'pdf'
    for d, pat in ((html_dir, '*.html'), (pdf_dir, '*.pdf')):
        d.mkdir(parents=True, exist_ok=True)
        for p in DEBIAN.glob(pat):
            if not p.name.startswith('index') and not (d / p.name).exists(): shutil.copy(p, d / p.name)
    print('## Retrieval from converted documents (hybrid, k=5)\n')
    print('| source | files | chunks | chunks with markup | build s | hit@5 es | hit@5 en | MRR@10 |')
    print('|---|---|---|---|---|---|---|---|')
    for label, src in (('markdown (shared tool)', corpus_dir()), ('HTML pages, read directly', html_dir),
                       ('PDFs, read directly', pdf_dir)):
        sdir = base / ('store_' + src.name)
        t = time.perf_counter()
        with Store.open(sdir) as s: rep = index_paths(s, [src], progress=False)
        build = time.perf_counter() - t
        store = Store.open(sdir, readonly=True)
        texts = [r[0] for r in store.db.execute('select text from chunks')]
        bad = sum(has_markup(x.split('\n', 1)[-1]) for x in texts)
        ranks = {'es': [], 'en': []}
        for q in qs:
            r = retrieve(store, q['question'], top_k=10)
            ranks[q['lang']].append(first_answer_rank([c.text for c in r.chunks], q['answer']))
        hit = {k: sum(x is not None and x <= 5 for x in v) / len(v) for k, v in ranks.items()}
        allr = ranks['es'] + ranks['en']
        mrr = sum(1 / x for x in allr if x) / len(allr)
        files = len(store.sources())
        built = f'{build:.0f}' if rep.chunks else 'reused'
        print(f"| {label} | {files} | {len(texts)} | {bad} | {built} | {hit['es']:.2f} | {hit['en']:.2f} | {mrr:.3f} |")
        store.close()
    shutil.rmtree(work)
    print(f'\n{os.cpu_count()} cores; {len(qs)} questions; answer = the command in the top-5 chunks')


HANDBOOK = pathlib.Path('/usr/share/doc/debian-handbook/html/es-ES')
DEBIAN_PDFS = ['/usr/share/doc/bzip2/manual.pdf.gz', '/usr/share/doc/fontconfig/fontconfig-user.pdf.gz',
               '/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf',
               '/usr/share/doc/debian/FAQ/debian-faq.en.pdf.gz', '/usr/share/doc/libtasn1-doc/libtasn1.pdf',
               '/usr/share/doc/camlidl/camlidl-1.04.doc.pdf', '/usr/share/doc/maint-guide-es/maint-guide.es.pdf']
NAVIGATION = re.compile(r'Download the ebook|\bAnterior\b[^\n]{0,300}\bSiguiente\b|\bPrevious topic\b|\bShow Source\b'
                        r'|¶')
SPLIT_ID = re.compile(r'[A-Za-z0-9] _[ \t]*\n|[A-Za-z0-9]_[ \t]*\n\n')   # `FONTCONFIG _` + `FILE`, `social_` + fence
JUNK = re.compile(r'<svg\b|Created with Inkscape|/\* XPM \*/|^\s*[.#]?[\w-]+\s*\{[^}]*:[^}]*;', re.M)
RUNNING_HEAD = re.compile(r'^CHAPTER \d+\.', re.M)
NODE_DOCS = pathlib.Path('/usr/share/doc/nodejs')                      # `nodejs`'s docs: markdown, and HTML beside


def fidelity_corpora(work):
    "{name: folder}: the handbook as installed, 46 Sphinx pages and the Debian PDFs copied (unzipped) to `work`."
    import gzip
    out = {}
    if HANDBOOK.is_dir(): out['Debian Handbook es-ES (DocBook folder)'] = HANDBOOK
    if SPHINX.is_dir():
        d = work / 'sphinx'
        d.mkdir()
        for p in sorted(SPHINX.glob('*.html'))[:46]: shutil.copy(p, d / p.name)
        out['Python library docs, 46 pages (Sphinx)'] = d
    d = work / 'pdfs'
    d.mkdir()
    for p in map(pathlib.Path, DEBIAN_PDFS):
        if p.exists():
            data = p.read_bytes()
            (d / p.name.removesuffix('.gz')).write_bytes(gzip.decompress(data) if p.suffix == '.gz' else data)
    if any(d.iterdir()): out[f'Debian PDFs ({len(list(d.iterdir()))}: ' + ', '.join(sorted(
        p.stem.split('.')[0] for p in d.iterdir())) + ')'] = d
    node = list({p.name: p for p in sorted(NODE_DOCS.glob('*.md')) + sorted(NODE_DOCS.glob('api/*.md'))}.values())
    if node:                                     # markdown with HTML in it, without the HTML pages beside it
        d = work / 'node-md'
        d.mkdir()
        for p in node: shutil.copy(p, d / p.name)
        out[f"Node.js docs' markdown ({len(node)} files)"] = d
    return out


def part_fidelity():
    from ragnb.ingest import IndexReport, changed_sources, chunk_sources, listed_files
    work = pathlib.Path(tempfile.mkdtemp())
    print('## Fidelity: what a folder gives the store (read and chunked as `ragnb index` does)\n')
    print('| corpus | files indexed | skipped as not text | visible text kept | chunks | with navigation | '
          'identifiers split at `_` | from image/style/build files | PDF running heads | `cron.allow` / `@reboot` | '
          'HTML tags or comments in prose |')
    print('|---|---|---|---|---|---|---|---|---|---|---|')
    for name, folder in fidelity_corpora(work).items():
        rep = IndexReport()
        files = list(changed_sources(listed_files([folder], rep, {}), rep, {}, None))
        chunks, _ = chunk_sources(files)
        texts = [c.text for c in chunks]
        junk = sum(pathlib.Path(c.source).suffix.lower() in ('.svg', '.css', '.xpm') or
                   pathlib.Path(c.source).name == 'Makefile' or bool(JUNK.search(c.text)) for c in chunks)
        chrome = getattr(rep, 'chrome', [])                  # (a ragnb before issue 33 does not count it)
        vis = sum(v for _, _, v in chrome)
        kept = f'{1 - sum(d for _, d, _ in chrome) / vis:.1%}' if vis else 'n/a'
        answers = (f"{sum('cron.allow' in t for t in texts)} / {sum('@reboot' in t for t in texts)}"
                   if 'Handbook' in name else '-')
        skipped = rep.binary_summary().removeprefix('skipped ') or '0'
        print(f'| {name} | {len(files)} | {skipped} | {kept} | {len(chunks)} | '
              f'{sum(bool(NAVIGATION.search(t)) for t in texts)} | {sum(bool(SPLIT_ID.search(t)) for t in texts)} | '
              f'{junk} | {sum(bool(RUNNING_HEAD.search(t)) for t in texts)} | {answers} | '
              f'{sum(has_markup(t, comments=True) for t in texts)} |')
    shutil.rmtree(work)
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--keep', help='keep the stores in this folder and reuse them')
    ap.add_argument('--parts', default='html,pdf,retrieval,fidelity')
    args = ap.parse_args()
    if not DEBIAN.is_dir(): sys.exit('apt-get install -y debian-reference-es debian-reference-en python3-doc')
    parts = args.parts.split(',')
    if 'html' in parts: part_html()
    if 'pdf' in parts: part_pdf()
    if 'retrieval' in parts: part_retrieval(args.keep)
    if 'fidelity' in parts: part_fidelity()


if __name__ == '__main__':
    sys.path.insert(0, str(ROOT))
    main()
