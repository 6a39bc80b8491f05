"""HTML, PDF and DOCX ingestion (issue 15): conversions as tables of (input, expected), generated documents whose
every paragraph must reach a chunk, citations, bad files, reader versions, older stores."""
import base64, gzip, importlib.util, io, json, os, pathlib, re, shutil, sqlite3, struct, zipfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from faults import HashEmbedder
from inprocess import ragnb_main
from ragnb.chunking import ChunkingError, chunk_text
from ragnb.index import Store
from ragnb.ingest import index_paths
from ragnb.readers import (READERS, Reader, docx_document, epub_document, html_document, locate_chunks, odt_document,
                           pdf_document, pptx_document, read_document, xlsx_document)

OFFICE = pathlib.Path(__file__).parent / 'fixtures' / 'office'   # Word and Excel 97-2003 files, of our own text

HTML_CASES = [  # (html body, markdown)
    ('<div class="summary-table three-column-summary"><div class="table-header">Type</div><div class="table-header">'
     'Method</div><div class="table-header">Description</div><div><code>String</code></div><div><code>rotate()</code>'
     '</div><div>Rotates a key.</div></div>',                        # Javadoc's summaries: a grid of divs
     '| Type | Method | Description |\n|---|---|---|\n| `String` | `rotate()` | Rotates a key. |'),
    ('<dl><dt>Parameters:</dt><dd><code>client</code> - the name</dd></dl>', '**Parameters**: `client` - the name'),
    ('<ul><li><section><h2>Method Details</h2><p>rotate</p></section></li></ul>', '## Method Details\n\nrotate'),
    ('<ol><li><div><pre>a</pre></div></li><li>two</li></ol>', '```\na\n```\n\n2. two'),   # no bare "1. " first
    ('<h3 id="x">Título <code>x</code></h3>', '### Título `x`'),
    ('<pre class="language-sql">select 1;</pre>', '```sql\nselect 1;\n```'),
    ('<div class="highlight-console"><pre><span>$ ls</span></pre></div>', '```console\n$ ls\n```'),
    ('<ol start="3"><li>tres</li><li>cuatro</li></ol>', '3. tres\n4. cuatro'),
    ('<ul><li>a<ul><li>b<ul><li>c</li></ul></li></ul></li></ul>', '- a\n  - b\n    - c'),
    ('<ul><li><p>Run:</p><div><pre>make</pre></div></li><li>then</li></ul>', '- Run:\n\n```\nmake\n```\n\n- then'),
    ('<p>uno<br/>dos</p>', 'uno dos'),
    ('<dl><dt>clave</dt><dd>valor</dd></dl>', '**clave**: valor'),
    ('<dl><dt>f()</dt><dd><p>Does a.</p><pre>f()</pre></dd></dl>', '**f()**\n\nDoes a.\n\n```\nf()\n```'),
    ('<table><tr><td>a</td><td>b|c</td></tr><tr><td>1</td></tr></table>', '| a | b\\|c |\n|---|---|\n| 1 |  |'),
    ('<table><caption>Tabla 1</caption><tr><th>k</th></tr><tr><td>v</td></tr></table>',
     'Tabla 1\n\n| k |\n|---|\n| v |'),
    ('<div>suelto <b>texto</b><p>párrafo</p>cola</div>', 'suelto texto\n\npárrafo\n\ncola'),
    ('<aside><a href="/">Inicio</a> · <a href="/g">Guía</a></aside><div role="navigation">menú</div><p>x</p>', 'x'),
    # issue 33: asides, notes and DocBook sidebars are content; banners and DocBook's docnav are navigation
    ('<aside class="admonition note"><p class="admonition-title">Nota</p><p>Haga copia.</p></aside>',
     'Nota\n\nHaga copia.'),
    ('<div class="sidebar"><p class="title"><strong>SEGURIDAD</strong></p><div class="para">Use /etc/cron.allow.</div>'
     '</div>', 'SEGURIDAD\n\nUse /etc/cron.allow.'),
    ('<aside class="footnote" id="f1"><span>1</span><p>Véase man 5 crontab.</p></aside>', '1\n\nVéase man 5 crontab.'),
    ('<div id="banner"><a href="/get"><span>Download the ebook</span></a></div><p>x</p>', 'x'),
    ('<ul class="docnav top"><li class="previous"><a href="a.html"><strong>Anterior</strong></a></li>'
     '<li class="home">Manual</li></ul><p>x</p><ul class="docnav"><li><a href="#"><strong>Subir</strong></a></li></ul>',
     'x'),
    ('<div role="complementary"><a href="/a">Uno</a><a href="/b">Dos</a><a href="/c">Tres</a></div><p>x</p>', 'x'),
    ('<table><thead><tr><th><p>Codec</p></th><th><p>Languages</p></th></tr></thead><tr><td><p>cp273</p></td>'
     '<td><p>German</p><div class="versionadded"><p>New in 3.4.</p></div></td></tr></table>',
     '| Codec | Languages |\n|---|---|\n| cp273 | German New in 3.4. |'),           # a note in a cell: still data
    ('<table><tr><td><ul><li>menu</li></ul></td><td><p>texto</p></td></tr></table>', '- menu\n\ntexto'),  # layout
    ('<p>texto <a href="e">Edit on GitHub</a></p><div class="toc">índice</div>', 'texto'),
    ('<p># no es un título</p><p>- ni una lista</p>', '\\# no es un título\n\n\\- ni una lista'),
    ('<pre>a ``` b</pre>', '````\na ``` b\n````'),
    ('<script>x()</script><style>p{}</style><p>visible</p><!-- comentario -->', 'visible'),
    ('<div class="note"><table summary="Note"><tr><td><img alt="[Note]"/></td><td>Nota: ojo.</td></tr></table></div>',
     'Nota: ojo.'),
    # a Confluence export: the code block's language in its data attribute; the list of attachments is chrome
    ('<pre class="syntaxhighlighter-pre" data-syntaxhighlighter-params="brush: bash; gutter: false">ls</pre>',
     '```bash\nls\n```'),
    ('<p>x</p><div class="pageSection group"><div class="pageSectionHeader"><h2 id="attachments" '
     'class="pageSectionTitle">Attachments:</h2></div><div class="greybox"><a href="attachments/1/2.png">plan.png</a> '
     '(image/png)</div></div>', 'x'),
]


@pytest.mark.parametrize('body,md', HTML_CASES)
def test_html_conversion(body, md):
    assert html_document(f'<html><body>{body}</body></html>'.encode()).text == md + '\n'


def test_html_main_content_title_and_anchors():
    page = ('<html><head><title>T</title></head><body><header>logo</header><div class="sphinxsidebar">side</div>'
            '<div role="main"><section id="s1"><h1>Uno</h1><p>a</p></section><section id="s2"><h2>Dos</h2>'
            '<p id="p">b</p></section></div><footer>pie</footer></body></html>')
    doc = html_document(page.encode())
    assert doc.text == '# Uno\n\na\n\n## Dos\n\nb\n' and doc.title == 'T'
    assert doc.anchors == [(1, 's1'), (5, 's2'), (7, 'p')]
    no_title = html_document(b'<body><h1>Primero</h1><p>x</p></body>')
    assert no_title.title == 'Primero'


WORD = st.text('abcdefghijklmnopqrstuvwxyzñáé', min_size=2, max_size=9)
PARA = st.lists(WORD, min_size=3, max_size=30).map(lambda ws: (' '.join(ws)).capitalize() + '.')
SECTIONS = st.lists(st.tuples(WORD, st.lists(PARA, min_size=1, max_size=4)), min_size=1, max_size=6)


def bodies(chunks):
    return '\n'.join(re.sub(r'\s+', ' ', c.body) for c in chunks)


def every_paragraph_in_a_chunk(doc, name, sections):
    chunks = locate_chunks(chunk_text(doc.text, name, source=name, **({'title': doc.title} if doc.title else {})), doc)
    text = bodies(chunks)
    missing = [p for _, ps in sections for p in ps if p not in text]
    assert not missing, missing[:3]
    return chunks


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SECTIONS)
def test_every_html_paragraph_reaches_a_chunk_with_its_anchor(sections):
    html = '<html><body><nav>menú</nav><main>' + ''.join(
        f'<section id="s{i}"><h2>{h}</h2>' + ''.join(f'<p>{p}</p>' for p in ps) + '</section>'
        for i, (h, ps) in enumerate(sections)) + '</main><footer>pie de página</footer></body></html>'
    chunks = every_paragraph_in_a_chunk(html_document(html.encode()), 'g.html', sections)
    assert all(re.fullmatch(r's\d+', c.anchor) for c in chunks)
    assert 'menú' not in bodies(chunks) and 'pie de página' not in bodies(chunks)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SECTIONS)
def test_every_docx_paragraph_reaches_a_chunk(sections):
    import docx
    d = docx.Document()
    for h, ps in sections:
        d.add_heading(h, 1)
        for p in ps: d.add_paragraph(p)
    buf = io.BytesIO()
    d.save(buf)
    chunks = every_paragraph_in_a_chunk(docx_document(buf.getvalue()), 'm.docx', sections)
    assert {c.anchor for c in chunks} <= {h for h, _ in sections}


def odt_bytes(sections) -> bytes:
    "An ODT written by docutils' OpenDocument writer (a real writer, not LibreOffice) from the sections as rST."
    from docutils.core import publish_string
    rst = '\n\n'.join(f'{h}\n{"=" * len(h)}\n\n' + '\n\n'.join(ps) for h, ps in sections) + '\n'
    return publish_string(rst, writer='odt', settings_overrides={'report_level': 5})


@pytest.mark.skipif(importlib.util.find_spec('docutils') is None, reason='docutils writes the ODT files')
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SECTIONS)
def test_every_odt_paragraph_reaches_a_chunk(sections):
    chunks = every_paragraph_in_a_chunk(odt_document(odt_bytes(sections)), 'm.odt', sections)
    assert {c.anchor for c in chunks} <= {h for h, _ in sections}


ODF_NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
          'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
          'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
          'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"')
LEAF = WORD.map(lambda w: w + 'x')             # every word of the body ends in x: none is an element's or a style's


def odf_tree(children):
    "An element holding `children` (each a word or an element): blocks inside blocks, as a broken writer may nest them."
    return st.tuples(st.sampled_from([
        '<text:p>{}</text:p>', '<text:h text:outline-level="2">{}</text:h>', '<text:section>{}</text:section>',
        '<text:list><text:list-item>{}</text:list-item></text:list>', '<text:span>{}</text:span>',
        '<draw:frame><draw:text-box>{}</draw:text-box></draw:frame>',
        '<table:table><table:table-row><table:table-cell>{}</table:table-cell></table:table-row></table:table>',
        '<text:note><text:note-body>{}</text:note-body></text:note>']), st.lists(children, min_size=1, max_size=3)
    ).map(lambda t: t[0].format('<text:s/>'.join(t[1])))


ODF_BODIES = st.recursive(LEAF, odf_tree, max_leaves=25)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ODF_BODIES)
def test_every_word_of_an_odt_body_reaches_the_text_however_nested(body):
    xml = (f'<office:document {ODF_NS}><office:body><office:text>{body}</office:text></office:body>'
           '</office:document>')
    words = re.findall(r'\w+x', re.sub(r'<[^>]*>', ' ', body))
    text = odt_document(xml.encode(), 'h.fodt').text
    assert sorted(re.findall(r'\w+x', text)) == sorted(words)       # each once: none lost, none doubled


def epub_bytes(sections) -> bytes:
    "An EPUB written by EbookLib: a chapter per section (its heading with an id), and a navigation page."
    from ebooklib import epub
    book, chapters = epub.EpubBook(), []
    book.set_title('Manual')
    for i, (h, ps) in enumerate(sections):
        c = epub.EpubHtml(title=h, file_name=f'cap{i}.xhtml', lang='es')
        c.content = f'<h1 id="s{i}">{h}</h1>' + ''.join(f'<p>{p}</p>' for p in ps)
        book.add_item(c)
        chapters.append(c)
    book.toc, book.spine = chapters, ['nav', *chapters]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    buf = io.BytesIO()
    epub.write_epub(buf, book)
    return buf.getvalue()


@pytest.mark.skipif(importlib.util.find_spec('ebooklib') is None, reason='EbookLib writes the EPUB files')
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SECTIONS)
def test_every_epub_paragraph_reaches_a_chunk_citing_its_chapter(sections):
    chunks = every_paragraph_in_a_chunk(epub_document(epub_bytes(sections)), 'm.epub', sections)
    assert all(re.fullmatch(r'cap(\d+)\.xhtml#s\1', c.anchor) for c in chunks)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SECTIONS)
def test_every_slide_paragraph_reaches_a_chunk_spanning_its_slide(sections):
    from pptx import Presentation
    deck = Presentation()
    for h, ps in sections:                           # a slide per section: its title, its paragraphs as the body
        s = deck.slides.add_slide(deck.slide_layouts[1])
        s.shapes.title.text, s.placeholders[1].text_frame.text = h, ps[0]
        for p in ps[1:]: s.placeholders[1].text_frame.add_paragraph().text = p
    buf = io.BytesIO()
    deck.save(buf)
    chunks = every_paragraph_in_a_chunk(pptx_document(buf.getvalue()), 'm.pptx', sections)
    assert all(any(p in c.body and c.page_start <= i <= c.page_end for c in chunks)     # in a chunk spanning its slide
               for i, (_, ps) in enumerate(sections, 1) for p in ps)


ROWS = st.lists(st.lists(WORD, min_size=3, max_size=3), min_size=1, max_size=120)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ROWS)
def test_every_sheet_row_reaches_a_chunk_under_its_header(rows):
    import openpyxl
    wb = openpyxl.Workbook()
    for r in [('equipo', 'sala', 'responsable')] + rows: wb.active.append(r)
    buf = io.BytesIO()
    wb.save(buf)
    doc = xlsx_document(buf.getvalue(), 'm.xlsx')
    chunks = locate_chunks(chunk_text(doc.text, 'm.xlsx', source='m.xlsx'), doc)
    lines = {ln: c for c in chunks for ln in c.body.split('\n')}
    assert all(f'| {" | ".join(r)} |' in lines for r in rows)                         # every row, whole
    assert all('| equipo | sala | responsable |' in c.body for c in chunks if '|' in c.body)   # under its header
    assert all(re.fullmatch(r'Sheet(!A\d+)?', c.anchor) for c in chunks)


def pdf_bytes(sections, columns=False):
    "A PDF with a running header, page-number footers, bold headings and (optionally) two columns of text."
    from fpdf import FPDF

    class Doc(FPDF):
        def header(self):
            self.set_font('helvetica', size=8)
            self.cell(0, 6, 'Manual interno de Faro', align='C')
            self.ln(10)

        def footer(self):
            self.set_y(-15)
            self.set_font('helvetica', size=8)
            self.cell(0, 10, f'Página {self.page_no()}', align='C')

    pdf = Doc()
    pdf.add_page()
    for h, ps in sections:
        pdf.set_font('helvetica', 'B', 16)
        pdf.multi_cell(0, 9, h, new_x='LMARGIN', new_y='NEXT')
        pdf.set_font('helvetica', size=11)
        for p in ps:
            pdf.multi_cell(0, 5, p, new_x='LMARGIN', new_y='NEXT')
            pdf.ln(4)
    if columns:
        pdf.add_page()
        y = pdf.get_y()
        cols = ((10, 'Columna izquierda sobre copias. ' * 8), (110, 'Columna derecha sobre restauración. ' * 8))
        for x, text in cols:
            pdf.set_xy(x, y)
            pdf.multi_cell(90, 5, text.strip())
    return bytes(pdf.output())


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SECTIONS)
def test_every_pdf_paragraph_reaches_a_chunk_without_running_headers(sections):
    doc = pdf_document(pdf_bytes(sections * 3, columns=True))
    chunks = every_paragraph_in_a_chunk(doc, 'm.pdf', sections)
    text = bodies(chunks)
    assert 'Manual interno' not in text and 'Página' not in text
    assert text.index('Columna izquierda') < text.index('Columna derecha')
    assert all(1 <= c.page_start <= c.page_end for c in chunks)
    assert chunks[-1].page_end == doc.pages[-1][1] >= 2


def test_pdf_hyphenation_headings_and_pages():
    from fpdf import FPDF
    pdf = FPDF()
    for i in range(3):
        pdf.add_page()
        pdf.set_font('helvetica', 'B', 18)
        pdf.cell(0, 10, f'Capítulo {i + 1}', new_x='LMARGIN', new_y='NEXT')
        pdf.set_font('helvetica', size=11)
        pdf.multi_cell(0, 5, 'La configura-\nción del servicio se guarda en /etc/faro.', new_x='LMARGIN', new_y='NEXT')
    doc = pdf_document(bytes(pdf.output()))
    assert doc.text.split('\n\n')[:2] == ['# Capítulo 1', 'La configuración del servicio se guarda en /etc/faro.']
    chunks = locate_chunks(chunk_text(doc.text, 'c.pdf', source='c.pdf', target=60, overlap=0), doc)
    assert [(c.section_title, c.page_start, c.page_end) for c in chunks] == [
        ('Capítulo 1', 1, 1), ('Capítulo 2', 2, 2), ('Capítulo 3', 3, 3)]
    assert chunks[1].cite == 'c.pdf#page=2'


def test_bad_files_are_skipped_with_the_reason_and_the_rest_is_indexed(tmp_path):
    import pypdf
    kb = tmp_path / 'kb'
    kb.mkdir()
    (kb / 'ok.html').write_text('<p>Rollback con faro rollback.</p>')
    (kb / 'ok.pdf').write_bytes(pdf_bytes([('Copias', ['Las copias se hacen cada noche.'])]))
    w = pypdf.PdfWriter(clone_from=io.BytesIO(pdf_bytes([('X', ['secreto absoluto.'])])))
    w.encrypt('clave')
    w.write(kb / 'locked.pdf')
    (kb / 'truncated.pdf').write_bytes((kb / 'ok.pdf').read_bytes()[:300])
    (kb / 'menu.html').write_text('<nav><a href="/">Inicio</a></nav>')
    (kb / 'fake.docx').write_text('no soy un zip')
    (kb / 'fake.odt').write_text('tampoco soy un zip')
    (kb / 'fake.epub').write_text('ni yo')
    (kb / 'fake.pptx').write_text('ni yo tampoco')
    (kb / 'fake.doc').write_bytes(b'\x00\x01un binario con otro nombre')      # (text under `.doc` is read as text)
    (kb / 'fake.xls').write_text('otro más')
    (kb / 'jira.xls').write_text('<table><tr><th>Key</th><th>Summary</th></tr><tr><td>OPS-1</td><td>faro</td></tr>'
                                 '</table>')                       # a tool's "Excel" export: an HTML table, indexed
    (kb / 'fake.ppt').write_text('y el último')
    (kb / 'fake.rtf').write_text('{\\rtf1 ' + '{' * 300)
    (kb / 'fake.msg').write_bytes(b'From: ana@nubeluz.es\n\nun correo guardado como texto')
    bomb = io.BytesIO()
    import zipfile
    with zipfile.ZipFile(bomb, 'w', zipfile.ZIP_DEFLATED) as z: z.writestr('word/document.xml', b'\0' * (300 << 20))
    (kb / 'bomb.docx').write_bytes(bomb.getvalue())
    with Store.open(tmp_path / 's', embedder=HashEmbedder(), sentence_vectors=False) as s:
        rep = index_paths(s, [kb])
    why = {p.rsplit('/', 1)[-1]: w for p, w in rep.skipped}
    assert sorted(why) == ['bomb.docx', 'fake.doc', 'fake.docx', 'fake.epub', 'fake.msg', 'fake.odt', 'fake.ppt',
                           'fake.pptx', 'fake.rtf', 'fake.xls', 'locked.pdf', 'menu.html', 'truncated.pdf']
    assert 'encrypted PDF' in why['locked.pdf'] and 'qpdf --decrypt' in why['locked.pdf']
    assert 'not a readable PDF' in why['truncated.pdf']
    assert 'zip bomb' in why['bomb.docx'] and 'not a DOCX' in why['fake.docx']
    assert 'not an ODT (not a zip file); re-save it from LibreOffice' in why['fake.odt']
    assert 'not an EPUB (not a zip file)' in why['fake.epub'] and 'not a PPTX' in why['fake.pptx']
    assert 'no text in the page' in why['menu.html']
    assert 'not a Word 97-2003 file (not an OLE file)' in why['fake.doc'] and 'neither an Excel' in why['fake.xls']
    assert 'not a PowerPoint 97-2003 file' in why['fake.ppt'] and 'groups nested past 200' in why['fake.rtf']
    assert 'not an Outlook item (not an OLE file); if it is an .eml message, give it that extension' in why['fake.msg']
    assert all(w.startswith(str(kb)) for w in why.values())            # each message names its file
    assert rep.kind_summary() == ('doc: 1 skipped · docx: 2 skipped · epub: 1 skipped · html: 1 indexed, 1 skipped · '
                                  'mail: 1 skipped · odt: 1 skipped · pdf: 1 indexed, 2 skipped · ppt: 1 skipped · '
                                  'pptx: 1 skipped · rtf: 1 skipped · xls: 1 indexed, 1 skipped')


def test_a_new_reader_version_reindexes_only_its_files(tmp_path, monkeypatch):
    kb = tmp_path / 'kb'
    kb.mkdir()
    (kb / 'a.md').write_text('# A\n\nTexto.')
    (kb / 'b.html').write_text('<h1>B</h1><p>Página.</p>')
    with Store.open(tmp_path / 's', embedder=HashEmbedder(), sentence_vectors=False) as s:
        index_paths(s, [kb])
        old = READERS['.html']
        monkeypatch.setitem(READERS, '.html', Reader(old.name + '-next', 'html', old.fn))
        rep = index_paths(s, [kb])
        assert [p.rsplit('/', 1)[-1] for p in rep.updated] == ['b.html'] and len(rep.unchanged) == 1
        c = s.search(HashEmbedder().embed_query('Página'), k=2)
        assert {x.chunker_version.split('+')[0] for x in c if x.source.endswith('.html')} == {old.name + '-next'}


def test_locations_survive_the_store_and_older_stores_upgrade(tmp_path, monkeypatch):
    "A store from before locations (no column) reads as before; its next writer adds the column, then PDFs cite pages."
    from ragnb import chunking
    old, kb = tmp_path / 'old', tmp_path / 'kb'
    old.mkdir()
    kb.mkdir()
    (old / 'a.md').write_text('# Copias\n\nLas copias se hacen cada noche.')
    emb = HashEmbedder()
    with monkeypatch.context() as m:                    # a writer from before chunks knew their lines' runs
        m.setattr(chunking._Lines, 'runs', lambda *_: None)
        with Store.open(tmp_path / 's', embedder=emb, sentence_vectors=False) as s: index_paths(s, [old])
    with sqlite3.connect(tmp_path / 's' / 'chunks.sqlite') as db:     # a store from before locations and user_version
        db.executescript('alter table chunks drop column location; pragma user_version = 0')
    with Store.open(tmp_path / 's', embedder=emb, readonly=True) as r:
        assert [c.cite for c in r.search(emb.embed_query('copias'), k=5)] == ['old/a.md:1-3']
    (kb / 'g.html').write_text('<h1 id="top">Guía</h1><p>Arranque.</p><h2 id="rb">Rollback</h2><p>Vuelta atrás.</p>')
    (kb / 'm.pdf').write_bytes(pdf_bytes([('Copias', ['Las copias se hacen cada noche.'])]))
    with Store.open(tmp_path / 's', embedder=emb) as w: index_paths(w, [kb])
    with Store.open(tmp_path / 's', embedder=emb, readonly=True) as r:
        got = {c.cite for c in r.search(emb.embed_query('copias'), k=5)}
    assert got == {'old/a.md:1-3', 'kb/g.html#top', 'kb/m.pdf#page=1'}


def test_a_flipped_location_is_caught(tmp_path):
    from ragnb.index import StoreCorruptedError
    kb = tmp_path / 'kb'
    kb.mkdir()
    (kb / 'g.html').write_text('<h1 id="top">Guía</h1><p>Arranque.</p>')
    emb = HashEmbedder()
    with Store.open(tmp_path / 's', embedder=emb, sentence_vectors=False) as s: index_paths(s, [kb])
    with sqlite3.connect(tmp_path / 's' / 'chunks.sqlite') as db:
        db.execute('''update chunks set location = '{"anchor": "other"}' ''')
    with Store.open(tmp_path / 's', embedder=emb, readonly=True) as r:
        with pytest.raises(StoreCorruptedError):
            r.search(emb.embed_query('Guía'), k=1)


def test_cli_index_reports_kinds_and_ask_cites_pages(tmp_path):
    kb = tmp_path / 'kb'
    kb.mkdir()
    (kb / 'ops.pdf').write_bytes(pdf_bytes([('Copias', ['Las copias de la base de datos se hacen cada noche.'])]))
    (kb / 'g.html').write_text('<h1 id="rb">Rollback</h1><p>Ejecute faro rollback para volver atrás.</p>')
    run = lambda *a: ragnb_main(*a, text=True)
    web = ('--url-base', 'https://intranet.acme.es/kb/')             # where the folder is published
    r = run('index', str(kb), '--store', str(tmp_path / 's'), '--quiet', '--max-mb', '1', *web)
    assert r.returncode == 0, r.stderr
    assert 'by kind: html: 1 indexed · pdf: 1 indexed' in r.stdout
    (kb / 'big.pdf').write_bytes(b'%PDF-1.4\n' + bytes(2 << 20))
    r = run('index', str(kb), '--store', str(tmp_path / 's'), '--quiet', '--max-mb', '1', *web)
    assert 'big.pdf: 2 MB, over the 1 MB limit' in r.stderr and 'pdf: 1 unchanged, 1 skipped' in r.stdout
    r = run('ask', '¿Cuándo se hacen las copias?', '--store', str(tmp_path / 's'), '--json')
    rows = json.loads(r.stdout)
    first = rows['chunks'][0] if isinstance(rows, dict) else rows[0]
    assert first['cite'] == 'kb/ops.pdf#page=1' and first['page_start'] == 1
    assert first['link'] == 'https://intranet.acme.es/kb/ops.pdf#page=1'
    r = run('ask', 'faro rollback', '--store', str(tmp_path / 's'), '--filter', 'url^=https://intranet.acme.es/kb/g')
    assert r.stdout.count('\n    https://intranet.acme.es/kb/g.html#rb\n') == 1, r.stdout


@pytest.mark.skipif(importlib.util.find_spec('docutils') is None or importlib.util.find_spec('ebooklib') is None,
                    reason='docutils and EbookLib write the ODT and the EPUB')
def test_office_files_and_books_are_indexed_and_cited_where_the_answer_is(tmp_path):
    "One fact per format, each file written by a real writer; each question's first chunk cites its slide, row..."
    import openpyxl
    from pptx import Presentation
    kb = tmp_path / 'kb'
    kb.mkdir()
    (kb / 'manual.odt').write_bytes(odt_bytes([('Cintas', ['La rotación de cintas LTO se hace los viernes.'])]))
    (kb / 'libro.epub').write_bytes(epub_bytes([('Restauración', ['Para restaurar use faro restore con last.'])]))
    deck = Presentation()
    for title, text in [('Plan', 'Equipo de sistemas'), ('Guardias', 'El teléfono de guardia es el 555-0199.')]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text, slide.placeholders[1].text = title, text
    deck.save(kb / 'plan.pptx')
    wb = openpyxl.Workbook()
    wb.active.title = 'Servidores'
    for row in [('equipo', 'sala')] + [(f'srv-{i:02}', 'A') for i in range(40)] + [('srv-zeta', 'sala Z')]:
        wb.active.append(row)
    wb.save(kb / 'inventario.xlsx')
    for f in ('guia.doc', 'inventario.xls', 'corte.msg'):     # Word and Excel 97-2003 from LibreOffice, an Outlook item
        shutil.copyfile(OFFICE / f, kb / ('contactos.xls' if f.endswith('.xls') else f))
    (kb / 'guardias.ppt').write_bytes(gzip.decompress((OFFICE / 'plan.ppt.gz').read_bytes()))
    (kb / 'contratos.rtf').write_text(r'{\rtf1{\stylesheet{\s1 heading 1;}}\pard\s1 Proveedores y contratos\par\pard '
                                      r'El contrato de mantenimiento del SAI vence en marzo.\par}')
    (kb / 'comite.vtt').write_text('WEBVTT\n\n00:12:30.000 --> 00:12:33.000\n<v Marta Peña>La revisión de capacidad '
                                   'es el jueves\n\n00:12:33.000 --> 00:12:36.000\n<v Marta Peña>en la sala Tajo.\n')
    (kb / 'proxy.mhtml').write_bytes(b'MIME-Version: 1.0\nContent-Type: multipart/related; boundary="b"\n\n--b\n'
                                     b'Content-Type: text/html; charset="utf-8"\n\n<html><body><h1 id="cert">Proxy</h1>'
                                     b'<p>El certificado del proxy caduca en enero.</p></body></html>\n--b--\n')
    import docx
    word = docx.Document()
    word.add_paragraph('La macro de cierre se ejecuta el último día hábil del mes.')
    buf = io.BytesIO()
    word.save(buf)
    macro = rb'\1application/vnd.ms-word.document.macroEnabled.main+xml'
    with zipfile.ZipFile(buf) as src, zipfile.ZipFile(kb / 'cierre.docm', 'w') as z:   # as Word saves a .docm
        for i in src.infolist():
            body = src.read(i)
            if i.filename == '[Content_Types].xml': body = re.sub(rb'(document\.xml" ContentType=")[^"]+', macro, body)
            z.writestr(i, body)
    with zipfile.ZipFile(kb / 'wiki.zip', 'w') as z:          # a wiki's export: its pages, a logo, a broken PDF
        z.writestr('Ops/Llaves_12.html', '<h1 id="t">Llaves</h1><h2 id="cpd">CPD</h2><p>La llave del CPD está en el '
                                         'armario gris de la planta 2.</p>')
        z.writestr('Ops/images/logo.png', b'\x89PNG')
        z.writestr('Ops/roto.pdf', b'%PDF-1.4 torn')
    r = ragnb_main('index', str(kb), '--store', str(tmp_path / 's'), '--quiet', text=True)
    assert r.returncode == 0, r.stderr
    assert ('by kind: archive: 1 indexed · doc: 1 indexed · docx: 1 indexed · epub: 1 indexed · mail: 1 indexed · '
            'mhtml: 1 indexed · odt: 1 indexed · pdf: 1 skipped · ppt: 1 indexed · pptx: 1 indexed · rtf: 1 indexed · '
            'transcript: 1 indexed · xls: 1 indexed · xlsx: 1 indexed') in r.stdout, r.stdout
    assert f'skipped {kb}/wiki.zip/Ops/roto.pdf: not a readable PDF' in r.stderr
    for question, cite, slide in [('¿Qué día se rotan las cintas LTO?', 'kb/manual.odt#Cintas', None),
                                  ('¿Cuál es el teléfono de guardia?', 'kb/plan.pptx#slide=', 2),
                                  ('¿En qué sala está srv-zeta?', 'kb/inventario.xlsx#Servidores', None),
                                  ('¿Cómo se restaura con faro restore?', 'kb/libro.epub#cap0.xhtml#s0', None),
                                  ('¿Dónde está la llave del CPD?', 'kb/wiki.zip#Ops/Llaves_12.html#', None),
                                  ('¿Qué puerto usa la base de datos?', 'kb/guia.doc § ', None),
                                  ('¿Qué número tiene Ana en contactos?', 'kb/contactos.xls#', None),
                                  ('¿Qué número tiene la sala de guardia?', 'kb/guardias.ppt#slide=', 3),
                                  ('¿Cuándo vence el contrato del SAI?', 'kb/contratos.rtf § Proveedores', None),
                                  ('¿Desde qué edificio sigue activa la VPN?', 'kb/corte.msg:', None),
                                  ('¿Qué extensión tiene la responsable del corte?',      # in the mail's attached PDF
                                   'kb/corte.msg#plan%20de%20corte.pdf#page=1', None),
                                  ('¿A qué versión hay que actualizar el firmware del router?',   # a message attached
                                   'kb/corte.msg#Incidencia%2042.msg', None),
                                  ('¿Dónde es la revisión de capacidad?', 'kb/comite.vtt#t=00:12:30', None),
                                  ('¿Cuándo caduca el certificado del proxy?', 'kb/proxy.mhtml#cert', None),
                                  ('¿Cuándo se ejecuta la macro de cierre?', 'kb/cierre.docm', None)]:
        r = ragnb_main('ask', question, '--store', str(tmp_path / 's'), '--json', text=True)
        first = json.loads(r.stdout)['chunks'][0]
        assert first['cite'].startswith(cite), (question, r.stdout[:500])
        assert slide is None or first['page_start'] <= slide <= first['page_end']    # the slides it spans


@pytest.mark.skipif(importlib.util.find_spec('rapidocr') is None, reason="OCR is the `ocr` extra")
def test_a_scanned_page_is_read_by_ocr_and_cited_at_its_page(tmp_path):
    "A PDF whose second page is a scan (a picture of our text, by Pillow): its heading and fact found, at page 2."
    from fpdf import FPDF
    from PIL import Image, ImageDraw, ImageFont
    scan = Image.new('L', (1240, 1754), 255)
    draw = ImageDraw.Draw(scan)
    for i, text in enumerate(['Acta del comité de cambios', 'La llave del armario B3 la guarda el jefe de turno,',
                              'que la entrega firmada en el libro de llaves.']):
        try: font = ImageFont.truetype('DejaVuSans.ttf', 44 if i == 0 else 30)
        except OSError: font = ImageFont.load_default(44 if i == 0 else 30)
        draw.text((150, 150 + 60 * i), text, fill=0, font=font)
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font('helvetica', size=11)
    pdf.multi_cell(0, 6, 'The change board meets on Mondays. Its signed minutes follow.')
    pdf.add_page()
    pdf.image(scan, x=0, y=0, w=210, h=297)
    (tmp_path / 'kb').mkdir()
    pdf.output(str(tmp_path / 'kb' / 'acta.pdf'))
    r = ragnb_main('index', str(tmp_path / 'kb'), '--store', str(tmp_path / 's'), text=True)
    assert r.returncode == 0 and 'skipped' not in r.stderr, r.stderr
    assert 'read 1 scanned pages or pictures of 1 files by OCR' in r.stdout, r.stdout
    r = ragnb_main('ask', '¿Quién guarda la llave del armario B3?', '--store', str(tmp_path / 's'), '--json', text=True)
    first = json.loads(r.stdout)['chunks'][0]
    assert first['cite'].startswith('kb/acta.pdf#page=') and first['page_end'] == 2, r.stdout[:500]
    assert '# Acta del comité de cambios' in first['text'] and 'la guarda el jefe de turno' in first['text']


def _screenshot(lines: list[str]) -> bytes:
    "A PNG of a console dialog showing `lines` (DejaVu Sans where installed)."
    from PIL import Image, ImageDraw, ImageFont
    im = Image.new('RGB', (900, 60 + 50 * len(lines)), 'white')
    draw = ImageDraw.Draw(im)
    draw.rectangle((0, 0, 900, 40), fill=(220, 220, 220))
    for i, text in enumerate(lines):
        try: font = ImageFont.truetype('DejaVuSans.ttf', 24)
        except OSError: font = ImageFont.load_default(24)
        draw.text((20, 8 + 50 * i + (10 if i else 0)), text, fill='black', font=font)
    buf = io.BytesIO()
    im.save(buf, 'PNG')
    return buf.getvalue()


def _office_with_screenshots(kb: pathlib.Path):
    "A DOCX, a PPTX, an ODT and a flat ODP whose answers are only in their pictures."
    import docx
    from docx.shared import Inches
    from pptx import Presentation
    d = docx.Document()
    d.add_heading('Réplica de la base de datos', 1)
    d.add_paragraph('Si la réplica se detiene, la consola muestra este aviso:')
    d.add_picture(io.BytesIO(_screenshot(['Error de replicación', 'No se puede conectar con db-02 (código E1042).',
                                          'Compruebe que el puerto 5433 está abierto.'])), width=Inches(5))
    d.inline_shapes[-1]._inline.docPr.set('descr', 'Aviso de la consola de réplica')
    d.add_paragraph('Avise después al equipo de datos.')
    broken = bytearray(_screenshot(['x', 'y']))
    for k in range(100, len(broken) - 20, 7): broken[k] ^= 0x55             # its headers whole, its pixels not
    d.add_picture(io.BytesIO(bytes(broken)), width=Inches(1))               # left out, no error
    d.save(kb / 'replica.docx')
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = 'Acceso a la VPN'
    slide.shapes.add_picture(io.BytesIO(_screenshot(['Configuración de la VPN', 'Servidor: vpn.faro.example',
                                                     'Grupo: guardias-noche'])), Inches(1), Inches(2), Inches(7))
    deck.save(kb / 'vpn.pptx')
    ns = (ODF_NS + ' xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
          'xmlns:xlink="http://www.w3.org/1999/xlink" '
          'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"')
    with zipfile.ZipFile(kb / 'correo.odt', 'w') as z:                  # LibreOffice's layout: the picture a member
        z.writestr('mimetype', 'application/vnd.oasis.opendocument.text')
        z.writestr('content.xml', f'<office:document-content {ns}><office:body><office:text><text:h '
                   'text:outline-level="1">Servidor de correo</text:h><text:p>El panel muestra el certificado:'
                   '<draw:frame><draw:image xlink:href="Pictures/cert.svg"/>'
                   '<draw:image xlink:href="Pictures/cert.png"/>'
                   '<svg:title>Panel de certificados</svg:title></draw:frame></text:p></office:text></office:body>'
                   '</office:document-content>')
        z.writestr('Pictures/cert.png', _screenshot(['Certificado de correo.faro.example',
                                                     'Caduca el 14 de marzo de 2027.']))
        z.writestr('Pictures/cert.svg', '<svg xmlns="http://www.w3.org/2000/svg"/>')
    shot = base64.b64encode(_screenshot(['Turno de guardia de marzo', 'Responsable: Lucía Prieto, extensión 4471']))
    (kb / 'turnos.fodp').write_text(                                       # a flat file: the picture in base64
        f'<?xml version="1.0"?><office:document {ns}><office:body><office:presentation><draw:page><draw:frame '
        'presentation:class="title" svg:x="1cm" svg:y="1cm"><draw:text-box><text:p>Guardias</text:p></draw:text-box>'
        f'</draw:frame><draw:frame svg:x="1cm" svg:y="5cm"><draw:image><office:binary-data>{shot.decode()}'
        '</office:binary-data></draw:image></draw:frame></draw:page></office:presentation></office:body>'
        '</office:document>')


@pytest.mark.skipif(importlib.util.find_spec('rapidocr') is None, reason="OCR is the `ocr` extra")
def test_screenshots_in_word_and_powerpoint_are_read_by_ocr(tmp_path):
    "The text in office files' pictures is found, cited to its file and slide, after the picture's alt text."
    kb = tmp_path / 'kb'
    kb.mkdir()
    _office_with_screenshots(kb)
    r = ragnb_main('index', str(kb), '--store', str(tmp_path / 's'), text=True)
    assert r.returncode == 0 and 'skipped' not in r.stderr, r.stderr
    assert 'read 4 scanned pages or pictures of 4 files by OCR' in r.stdout, r.stdout
    for question, cite, said in [('¿Qué puerto hay que abrir si aparece el error E1042?', 'kb/replica.docx',
                                  '> Aviso de la consola de réplica\n> Error de replicación'),
                                 ('¿Cuál es el grupo de la VPN para las guardias?', 'kb/vpn.pptx#slide=1',
                                  '> Grupo: guardias-noche'),
                                 ('¿Qué día caduca el certificado del servidor de correo?', 'kb/correo.odt',
                                  '> Panel de certificados\n> Certificado de correo.faro.example'),
                                 ('¿Qué extensión tiene la responsable de la guardia de marzo?',
                                  'kb/turnos.fodp#slide=1', '> Responsable: Lucía Prieto, extensión 4471')]:
        r = ragnb_main('ask', question, '--store', str(tmp_path / 's'), '--json', text=True)
        first = json.loads(r.stdout)['chunks'][0]
        assert first['cite'].startswith(cite) and said in first['text'], (question, r.stdout[:600])


def test_without_ocr_a_files_pictures_are_named_not_silently_dropped(tmp_path, monkeypatch):
    "Without `ragnb[ocr]` the files read as before, and the report says how many pictures were not read and the fix."
    import ragnb.readers as readers
    monkeypatch.setattr(readers, 'ocr_engine', lambda: None)
    _office_with_screenshots(tmp_path)
    doc = docx_document((tmp_path / 'replica.docx').read_bytes(), 'replica.docx')
    assert '> Aviso de la consola de réplica\n\nAvise después' in doc.text and 'E1042' not in doc.text
    assert doc.ocr_pages == 0 and doc.parts_skipped == [('replica.docx', 'replica.docx: 1 pictures not read, and any '
                                                         'text in them not indexed; pip install "ragnb[ocr]" to read '
                                                         'the text in them')]
    deck = readers.pptx_document((tmp_path / 'vpn.pptx').read_bytes(), 'vpn.pptx')
    assert deck.text.startswith('# Acceso a la VPN') and len(deck.parts_skipped) == 1
    odt = readers.odt_document((tmp_path / 'correo.odt').read_bytes(), 'correo.odt')
    assert '> Panel de certificados' in odt.text and len(odt.parts_skipped) == 1
    odp = readers.odp_document((tmp_path / 'turnos.fodp').read_bytes(), 'turnos.fodp')
    assert odp.text.startswith('# Guardias') and len(odp.parts_skipped) == 1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(['Hola.', 'hola.', 'Gracias.', 'Ana Ruiz · Tel. 910', 'AVISO legal.',
                                          'La cinta 3.', 'La cinta 4.']), max_size=6), max_size=6))
def test_repeated_tails_keep_every_paragraph_once_at_least(messages):
    "Signatures and disclaimers left out of later messages: every paragraph still somewhere, only tails cut."
    from ragnb.readers import repeated_tails
    drops = repeated_tails(messages)
    kept = {p.lower() for ps, d in zip(messages, drops) for i, p in enumerate(ps) if i not in d}
    assert kept == {p.lower() for ps in messages for p in ps}
    for k, (ps, d) in enumerate(zip(messages, drops)):     # what goes is in a tail that other messages repeat
        others = {q.lower() for j, qs in enumerate(messages) if j != k for q in qs}
        assert all(p.lower() in others for p in ps[min(d, default=len(ps)):])


def test_read_document_wraps_any_converter_failure(tmp_path, monkeypatch):
    def boom(*_): raise RecursionError('too deep')
    monkeypatch.setitem(READERS, '.html', Reader('html-v1', 'html', boom))
    (tmp_path / 'x.html').write_text('<p>x</p>')
    with pytest.raises(ChunkingError, match=r'x\.html: not a readable HTML file \(RecursionError'):
        read_document(tmp_path / 'x.html')


def test_max_pages_caps_a_pdf_and_says_how_to_raise_the_cap(tmp_path):
    "Issue 32.7: `--max-pages` (or $RAGNB_MAX_PDF_PAGES) skips a longer PDF, counted before any page is read."
    from faults import pdf_listing_one_page
    (tmp_path / 'kb').mkdir()
    (tmp_path / 'kb' / 'long.pdf').write_bytes(pdf_listing_one_page(20))
    r = ragnb_main('index', tmp_path / 'kb', '--store', tmp_path / 's', '--quiet', '--max-pages', '10', text=True)
    assert 'long.pdf: 20 pages, over the 10-page cap; split it, or raise the cap with --max-pages' in r.stderr
    assert r.returncode == 1 and 'RAGNB_MAX_PDF_PAGES' not in os.environ      # the flag held for that run only


_FM_LINE = st.one_of(st.sampled_from(['---', '+++', '', 'title: Guía', 'title = "Guía"', '- item', 'a: [1, 2',
                                      'description: >', '  folded line', 'tags:', '  - ops', '# Heading', 'texto']),
                     st.text(st.characters(blacklist_categories=('Cs',)), max_size=20))


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(_FM_LINE, max_size=14), crlf=st.booleans())
def test_front_matter_never_moves_a_line_or_fails(lines, crlf):
    "Whatever opens a markdown file, front matter or not, its lines keep their numbers; a field is text or a list."
    from ragnb.readers import front_matter
    text = ('\r\n' if crlf else '\n').join(lines)
    fields, out = front_matter(text)
    plain = lambda v: isinstance(v, str) and v != ''
    assert out.count('\n') == text.count('\n') and all(plain(v) or v and all(map(plain, v)) for v in fields.values())
    assert all(a == b or a == '' or i == 0 for i, (a, b) in enumerate(zip(out.split('\n'), text.split('\n'))))


def test_a_trimmed_chunk_cites_the_page_and_section_it_kept(tmp_path):
    """A chunk trimmed to its second PDF page (a page of its own, or the part of a paragraph after a page break), its
    second HTML section or one row of a sheet cites that place."""
    from ragnb.retrieve import RetrieveOpts, retrieve
    kb = tmp_path / 'kb'
    kb.mkdir()
    from fpdf import FPDF
    pdf, answer = FPDF(), 'Para restaurar la copia de la base de datos ejecute faro restore con la opción last.'
    for text in ('Las copias de la base de datos se hacen cada noche en el servidor de respaldo.', answer):
        pdf.add_page()                                       # one section, one small chunk, two pages
        if text != answer:
            pdf.set_font('helvetica', 'B', 16)
            pdf.multi_cell(0, 9, 'Copias', new_x='LMARGIN', new_y='NEXT')
        pdf.set_font('helvetica', size=11)
        pdf.multi_cell(0, 5, text, new_x='LMARGIN', new_y='NEXT')
    (kb / 'ops.pdf').write_bytes(bytes(pdf.output()))
    pdf, turn = FPDF(), 'Para volver a la copia del martes ejecute faro restore con la fecha y espere.'
    pdf.add_page()                                    # one paragraph over a page break, its last sentence on page 2
    pdf.set_font('helvetica', size=11)
    pdf.set_y(268)
    pdf.multi_cell(0, 5, 'Las copias se guardan siete días en el disco local del servidor de respaldo, y cada domingo '
                   f'pasan a la cinta de la semana, que se lleva al armario ignífugo del sótano. {turn}')
    (kb / 'larga.pdf').write_bytes(bytes(pdf.output()))
    (kb / 'g.html').write_text('<link rel="canonical" href="https://wiki.acme.es/g.html">'   # its web address
                               '<h1 id="guia">Guía</h1><p>El servicio arranca solo al encender la máquina.</p>'
                               '<h2 id="restaurar">Restaurar</h2><p>Para volver atrás ejecute faro rollback.</p>')
    import openpyxl
    wb = openpyxl.Workbook()
    wb.active.title = 'Red'
    for n in range(1, 12): wb.active.append(('equipo', 'ip') if n == 1 else (f'srv-{n:02}', f'10.0.0.{n}'))
    wb.save(kb / 'red.xlsx')
    emb = HashEmbedder()
    with Store.open(tmp_path / 's', embedder=emb) as w: index_paths(w, [kb])
    opts = RetrieveOpts(trim=True, trim_policy='fixed', trim_threshold=0.99)   # the query's own sentence alone
    with Store.open(tmp_path / 's', embedder=emb, readonly=True) as r:
        for question, whole, kept in [(answer, 'kb/ops.pdf#page=1', 'kb/ops.pdf#page=2'),
                                      (turn, 'kb/larga.pdf#page=1', 'kb/larga.pdf#page=2'),
                                      ('Para volver atrás ejecute faro rollback.', 'kb/g.html#guia',
                                       'kb/g.html#restaurar'),
                                      ('| srv-08 | 10.0.0.8 |', 'kb/red.xlsx#Red', 'kb/red.xlsx#Red!A8')]:
            full = [c for c in retrieve(r, question, 5).chunks if question in c.text]
            cut = [c for c in retrieve(r, question, 5, opts).chunks if question in c.text]
            assert [c.cite for c in full] == [whole] and [c.cite for c in cut] == [kept], (full, cut)
            assert full[0].start_line < cut[0].start_line == cut[0].end_line <= full[0].end_line
        web = {'url': {'$prefix': 'https://wiki.acme.es/'}}          # the page's address: a link, and a filter
        full, cut = (retrieve(r, 'Para volver atrás ejecute faro rollback.', 5, o, filters=web) for o in (None, opts))
        assert [c.link for c in full.chunks] == ['https://wiki.acme.es/g.html#guia']
        assert [c['link'] for c in cut.to_dict()['chunks']] == ['https://wiki.acme.es/g.html#restaurar']


_words = st.lists(st.sampled_from(['Faro', 'rota', 'los', 'logs', 'cada', 'noche', 'keep', 'siete']), min_size=1,
                  max_size=8).map(' '.join)
_html_blocks = st.one_of(
    _words,                                                                            # a paragraph
    _words.map(lambda w: f'{w} <b>{w}</b> <kbd>Ctrl</kbd><br>{w} `<b>{w}</b>`'),    # inline tags, a code span
    _words.map(lambda w: f'<div align="center">\n<img src="l.png"> {w}\n</div>'),
    _words.map(lambda w: f'<table>\n<tr><th>{w}</th></tr>\n<tr><td>{w}</td></tr>\n</table>'),
    _words.map(lambda w: f'<details>\n<summary>{w}</summary>'), st.just('</details>'),
    _words.map(lambda w: f'<!-- {w}\n{w} -->'), _words.map(lambda w: f'{w} <!-- {w} --> {w}'),
    _words.map(lambda w: f'```html\n<div>{w}</div>\n<!-- {w} -->\n```'),           # code: as it is
    _words.map(lambda w: f'<pre>\n{w}\n\n{w}\n</pre>'), _words.map(lambda w: f'## {w}'))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_html_blocks, st.integers(2, 3)), min_size=1, max_size=12))
def test_markdown_with_html_reads_as_shown_and_cites_its_lines(blocks):
    """Tags and comments go outside code; code fences stay; every line leads back, in order, to a line of the file.
    Blocks apart by blank lines: a tag-led HTML block runs on to the next blank line (CommonMark), fences and all."""
    from ragnb.readers import _INLINE_TAG, markdown_html
    text = ''.join(b + '\n' * k for b, k in blocks)
    got = markdown_html(text)
    if got is None: return
    new, src, n = *got, text.count('\n') + 1
    assert len(src) == new.count('\n') + 1 and src == sorted(src) and 1 <= src[0] and src[-1] <= n
    assert all(f in new for f in re.findall(r'```html\n.*?\n```', text, re.S))     # code fences as written
    prose = re.sub(r'```html\n.*?\n```|(`+)[^`]*?\1', '', new, flags=re.S)
    assert not _INLINE_TAG.search(prose) and '<div' not in prose and '<table' not in prose, prose
    words = lambda t: sorted(re.findall(r'\w+', re.sub(r'<[^<>]*>|```html|`', ' ', re.sub(r'<!--.*?-->', ' ', t,
                                                                                          flags=re.S))))
    assert set(words(new)) <= set(words(text)) | {'html'}                   # nothing made up
    assert markdown_html(new) is None                                     # read once, it is as shown


def test_a_readme_with_html_is_indexed_as_shown_and_cited_by_its_lines(tmp_path):
    kb = tmp_path / 'kb'
    kb.mkdir()
    readme = ('<p align="center"><img src="logo.png"></p>\n\n<h1 align="center">Faro</h1>\n\n<!-- badges -->\n'
              '<!-- more\nbadges -->\n\nFaro rotates logs.<br>Every night.\n\n<details>\n<summary>Options</summary>\n\n'
              'Set `FARO_KEEP=7` to keep <b>seven</b> rotations.\n\n</details>\n')
    (kb / 'README.md').write_text(readme)
    emb = HashEmbedder()
    with Store.open(tmp_path / 's', embedder=emb) as w: first = index_paths(w, [kb])
    with Store.open(tmp_path / 's', embedder=emb) as w: again = index_paths(w, [kb])
    with Store.open(tmp_path / 's', embedder=emb, readonly=True) as r:
        chunks = r.search(emb.embed_query('Faro'), k=5)
    assert (first.chunks, len(again.unchanged), len(chunks)) == (1, 1, 1)
    c = chunks[0]
    assert c.text.startswith('[Doc: Faro]') and '<' not in c.text and 'seven rotations' in c.text
    lines = readme.split('\n')
    assert (c.start_line, c.end_line) == (3, 14) and c.chunker_version.startswith('mdhtml-v1+documental-v2')
    at = c.place(c.body.index('Set'), c.body.index('rotations.'))
    assert lines[at['start_line'] - 1].startswith('Set `FARO_KEEP=7`')


@settings(max_examples=60, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=12))
def test_a_damaged_doc_is_read_or_refused_never_hangs(flips):
    "Bytes of a real DOC's two streams changed at random: the reader returns blocks or raises, quickly, small."
    import olefile
    from ragnb.readers import WordBinary, word_blocks
    with olefile.OleFileIO(str(OFFICE / 'guia.doc')) as ole:
        streams = [bytearray(ole.openstream(n).read()) for n in ('WordDocument', '1Table')]
    for in_table, at, value in flips:
        s = streams[in_table]
        s[at % len(s)] = value
    try: blocks = word_blocks(WordBinary(bytes(streams[0]), bytes(streams[1])))
    except (ValueError, IndexError, KeyError, struct.error, UnicodeError): return      # read_document names the file
    assert sum(len(md) for _, md in blocks) < 50 * len(streams[0])


@settings(max_examples=60, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=12))
def test_a_damaged_ppt_is_read_or_refused_never_hangs(flips):
    "Bytes of a real PPT file changed at random (its container and its streams): a deck, or a clear refusal."
    from ragnb.readers import ppt_document
    data = bytearray(gzip.decompress((OFFICE / 'plan.ppt.gz').read_bytes()))
    for at, value in flips: data[at % len(data)] = value
    try: doc = ppt_document(bytes(data), 'plan.ppt')
    except ChunkingError as e:
        assert 'plan.ppt' in str(e)
        return
    except (ValueError, IndexError, KeyError, struct.error, UnicodeError, OSError): return    # read_document wraps
    assert len(doc.text) < 50 * len(data)


API_SPEC = {'openapi': '3.0.3', 'info': {'title': 'Faro', 'version': '2'}, 'paths': {'/tenants': {
    'parameters': [{'name': 'X-Id', 'in': 'header', 'schema': {'type': 'string'}}],
    'post': {'operationId': 'createTenant', 'summary': 'Crea un tenant', 'requestBody': {'content': {
        'application/json': {'schema': {'$ref': '#/components/schemas/New'}}}},
        'responses': {'201': {'description': 'Creado.', 'content': {'application/json': {'schema': {
            'type': 'array', 'items': {'$ref': '#/components/schemas/Tenant'}}}}}}}}},
    'components': {'schemas': {
        'New': {'type': 'object', 'required': ['name'], 'properties': {'name': {'type': 'string'},
                                                                       'owner': {'$ref': '#/components/schemas/New'}}},
        'Tenant': {'allOf': [{'$ref': '#/components/schemas/New'}, {'properties': {'id': {'type': 'integer'}}}]}}}}
API_JUNK = [None, 1, 'x', [], {}, [1, {}], {'$ref': '#/nope'}, {'$ref': '#/components/schemas/Tenant'},
            {'$ref': 'other.yaml#/X'}, {'type': ['string', 'null']}, {'enum': 'x'}, {'properties': [1]}, {'allOf': 'a'}]


def _api_places(o, path=()):
    "Every place in a parsed description, as the keys that lead to it."
    yield path
    for k, v in (o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else ()):
        yield from _api_places(v, path + (k,))


@settings(max_examples=100, deadline=5000)
@given(st.data(), st.booleans())
def test_a_hand_edited_api_description_is_read_or_refused(data, as_json):
    """An OpenAPI description with values put where they should not be (missing and external `$ref`s, a schema
    that holds itself, lists for maps): read, each operation left cited by its id and its lines as the text's, or
    refused naming the file; never another error."""
    import copy, yaml
    from ragnb.readers import openapi_document
    spec = copy.deepcopy(API_SPEC)
    for _ in range(data.draw(st.integers(1, 4))):
        *up, last = data.draw(st.sampled_from(list(_api_places(spec))[1:]))
        parent = spec
        for k in up: parent = parent[k]
        parent[last] = copy.deepcopy(data.draw(st.sampled_from(API_JUNK)))
    text = json.dumps(spec) if as_json else yaml.safe_dump(spec, allow_unicode=True)
    try: doc = openapi_document('api.yaml', text)
    except ChunkingError as e:
        assert str(e).startswith('api.yaml: ')
        return
    assert len(doc['lines']) == (doc['text'].count('\n') + 1 if doc['text'] else 0)      # a file's line per line
    assert all(isinstance(n, int) for n in doc['lines'])
    post = spec.get('paths', {}).get('/tenants', {}).get('post') if isinstance(spec.get('paths'), dict) and \
        isinstance(spec['paths'].get('/tenants'), dict) else None
    if isinstance(post, dict) and post.get('operationId') == 'createTenant':
        assert 'createTenant' in [a for _, a in doc['anchors']]


@pytest.mark.parametrize('name', ['corte.msg', 'nota.msg'])      # a plain-text body, a compressed RTF one
@settings(max_examples=40, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=12))
def test_a_damaged_msg_is_read_or_refused_never_hangs(name, flips):
    "Bytes of an Outlook item changed at random (its container, names and properties): a message, or a refusal."
    from ragnb.readers import msg_document
    data = bytearray((OFFICE / name).read_bytes())
    for at, value in flips: data[at % len(data)] = value
    try: doc = msg_document(bytes(data), name)
    except ChunkingError as e:
        assert name in str(e)
        return
    assert len(doc.text) < 50 * len(data)


_rtf_bits = st.sampled_from([r'{', r'}', r'\par ', r'\pard', r'\s1 ', r'\intbl ', r'\cell ', r'\row ', r'\u8364 ',
                             r"\'e9", r'\uc0 ', r'\*', r'\footnote ', r'\ftnalt ', r'\deleted ', r'\v0 ', r'\bin3 ',
                             r'\ansicpg99999 ', r'\ansicpg932 ', r'{\stylesheet{\s1 heading 1;}}', r'\outlinelevel0 ',
                             'texto ', 'más ', '\\', "\\'"])


@settings(max_examples=80, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_rtf_bits, max_size=60).map(''.join))
def test_any_rtf_is_read_or_refused_by_name(body):
    "Control words, groups, bytes and text in any order, unbalanced too: a document, or an error naming the file."
    from ragnb.readers import rtf_document
    try: doc = rtf_document(('{\\rtf1 ' + body).encode('utf-8'), 'x.rtf')
    except ChunkingError as e:
        assert 'x.rtf' in str(e)
        return
    except ValueError as e:                          # groups nested too deep: `read_document` names the file
        assert 'nested past' in str(e)
        return
    assert doc.text.strip()
