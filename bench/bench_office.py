"""Office files and books: what each reader keeps of them, and whether a chunk can say where it came from.

The files are written here by real writers, with text of our own: a deck of 12 slides (python-pptx: a title, three
bullets and speaker notes each), a workbook of 300 rows and a CSV export of the same rows with Excel's Spanish `;`
(openpyxl, the csv module), a book of 8 chapters (EbookLib), a manual of 6 sections (docutils' ODT writer), a
mail archive of 20 messages by two senders, each replying to the one before and quoting it, above its sender's
signature and a legal disclaimer (`email` and `mailbox`; the two phone numbers are facts too), a wiki's
export as a zip (10 pages with a wiki's breadcrumbs and footer, and their images; `zipfile`), and a Word manual of 6
sections (python-docx: each section's second paragraph in a content control, its third a tracked insertion beside a
tracked deletion, and a table of rows), and a MediaWiki export (10 service pages, each with an infobox, steps, a
preformatted command, a table of ports and a captioned picture, plus their talk pages, a redirect and a template),
a Slack workspace's export (a zip of 12 threads over six days, each question answered in its thread, every third
the next day, among join notices, a bot's alerts and link previews), and a ticket tracker's CSV export (Jira's
columns, two of them `Comment`: 10 incidents, each with a description of about 2,400 characters and a fix), and the
same incidents as a tracker's JSON export (GitHub's `gh issue list --json` shape; LlamaIndex reads it as text), and
an API's OpenAPI description (20 operations, their request bodies' schemas by `$ref`; LlamaIndex reads it as text).
Where `soffice` is installed (`apt install libreoffice-writer-nogui libreoffice-calc-nogui
libreoffice-impress-nogui`), LibreOffice saves the Word manual, the workbook and the deck again
as Word, Excel and PowerPoint 97-2003 (`.doc`, `.xls`, `.ppt`), and the manual as RTF.
ragnb reads them with its readers and cuts them with its documental chunker; LlamaIndex with its file readers
(`PptxReader`, `PandasExcelReader`, `PagedCSVReader`, `EpubReader`, `MboxReader`, `DocxReader`, `RTFReader`; none for
ODT, DOC or PPT; `antiword`, which textract calls for DOC, where it is installed) and its `SentenceSplitter` at its
defaults; the zip and the MediaWiki export through `SimpleDirectoryReader`. LangChain reads the export with
`MWDumpLoader` (main namespace, redirects skipped), the Slack export with `SlackDirectoryLoader`, the tickets with
`CSVLoader`, and cuts them with
`RecursiveCharacterTextSplitter` (1,500 / 200).
Per format and tool:

- facts: the bullets, notes, paragraphs and rows written that reach one chunk whole (a row: all its cells; a Slack
  answer: alone, with its question, and with the asker's name; a ticket's comments, and its fix with its key and
  with its summary; an API operation's description, alone and with its summary, and its path with the description
  of its request body's required field);
- placed: chunks whose metadata says where in the file they are (slide, sheet and row, chapter, heading, message);
- headed: for the spreadsheets, the chunks holding rows that also hold the column names;
- chars: the characters of all chunks, what an LLM would be given to read; ms: reading and splitting.

    python bench/bench_office.py
"""
import argparse, contextlib, csv, io, pathlib, re, shutil, subprocess, sys, tempfile, time

SLIDES, ROWS, CHAPTERS, SECTIONS, MESSAGES, PAGES, THREADS, TICKETS, OPERATIONS = 12, 300, 8, 6, 20, 10, 12, 10, 20
HEADER = ('equipo', 'sala', 'ip', 'responsable')


def rows():
    return [(f'srv-{i:03}', f'sala {"ABCD"[i % 4]}{i % 9}', f'10.0.{i // 200}.{i % 200}', f'persona {i % 37}')
            for i in range(ROWS)]


def make(folder: pathlib.Path) -> dict:
    "Write the five files; `{format: (path, facts)}`, a fact being a string or, for a row, its cells."
    from docutils.core import publish_string
    from ebooklib import epub
    import openpyxl
    from pptx import Presentation
    out = {}
    deck, facts = Presentation(), []
    for i in range(SLIDES):
        s = deck.slides.add_slide(deck.slide_layouts[1])
        s.shapes.title.text = f'Tema {i}: ventanas de copia del grupo {i}'
        bullets = [f'El grupo {i} copia la base {j} a las {j + 1} horas' for j in range(3)]
        s.placeholders[1].text_frame.text = bullets[0]
        for b in bullets[1:]: s.placeholders[1].text_frame.add_paragraph().text = b
        note = f'Nota del grupo {i}: avisar al turno de guardia antes de la copia'
        s.notes_slide.notes_text_frame.text = note
        facts += bullets + [note]
    deck.save(folder / 'plan.pptx')
    out['pptx'] = (folder / 'plan.pptx', facts)
    wb = openpyxl.Workbook()
    wb.active.title = 'Servidores'
    for r in [HEADER] + rows(): wb.active.append(r)
    wb.save(folder / 'inventario.xlsx')
    out['xlsx'] = (folder / 'inventario.xlsx', rows())
    with open(folder / 'inventario.csv', 'w', newline='', encoding='utf-8') as f:
        csv.writer(f, delimiter=';').writerows([HEADER] + rows())
    out['csv'] = (folder / 'inventario.csv', rows())
    book, chapters, facts = epub.EpubBook(), [], []
    book.set_title('Manual de restauración')
    for i in range(CHAPTERS):
        paras = [f'En el capítulo {i} la restauración del volumen {j} usa la instantánea {i * 10 + j}.'
                 for j in range(4)]
        c = epub.EpubHtml(title=f'Capítulo {i}', file_name=f'cap{i}.xhtml', lang='es')
        c.content = f'<h1 id="c{i}">Capítulo {i}</h1>' + ''.join(f'<p>{p}</p>' for p in paras)
        book.add_item(c)
        chapters.append(c)
        facts += paras
    book.toc, book.spine = chapters, ['nav', *chapters]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    epub.write_epub(str(folder / 'manual.epub'), book)
    out['epub'] = (folder / 'manual.epub', facts)
    facts, rst = [], []
    for i in range(SECTIONS):
        paras = [f'La sección {i} describe la cinta {i}{j} y su rotación semanal número {j}.' for j in range(3)]
        rst.append(f'Sección {i}\n{"=" * (len(str(i)) + 8)}\n\n' + '\n\n'.join(paras))
        facts += paras
    (folder / 'cintas.odt').write_bytes(publish_string('\n\n'.join(rst) + '\n', writer='odt',
                                                       settings_overrides={'report_level': 5}))
    out['odt'] = (folder / 'cintas.odt', facts)
    import mailbox
    from email.message import EmailMessage
    box, facts = mailbox.mbox(folder / 'lista.mbox'), ['Tel. 910 000 123', 'Tel. 910 000 456']
    legal = ('AVISO: este mensaje y sus anexos son confidenciales y se dirigen solo a su destinatario. Si lo ha\n'
             'recibido por error, avise al remitente y bórrelo sin copiarlo.')
    for i in range(MESSAGES):
        m = EmailMessage()
        who, sig = [('ana', 'Ana Ruiz\nSistemas, Nubeluz\nTel. 910 000 123'),
                    ('luis', 'Luis Gil\nRedes, Nubeluz\nTel. 910 000 456')][i % 2]
        m['Subject'], m['From'], m['Message-ID'] = f'Re: cinta {i}', f'{who}@nubeluz.es', f'<m{i}@nubeluz.es>'
        fact = f'La cinta {i} se rota el día {i + 1} y se guarda en el armario {i % 5}.'
        quote = f'\n\n> La cinta {i - 1} se rota el día {i}.' if i else ''
        m.set_content(f'{fact}{quote}\n\n-- \n{sig}\n\n{legal}')        # a signature and a disclaimer, as sent
        box.add(m)
        facts.append(fact)
    box.close()
    out['mbox'] = (folder / 'lista.mbox', facts)
    out['zip'] = wiki_export(folder / 'wiki.zip')
    out['docx'] = word_manual(folder / 'manual.docx')
    out['mediawiki'] = mediawiki_export(folder / 'wiki.xml')
    out['slack'] = slack_export(folder / 'slack.zip')
    out['tickets'] = ticket_export(folder / 'tickets.csv')
    out['json'] = issue_export(folder / 'issues.json')
    out['openapi'] = api_description(folder / 'api.yaml')
    if shutil.which('soffice'):                        # the same files as Word and Excel 97-2003
        for fmt, src in (('doc', 'docx'), ('xls', 'xlsx'), ('ppt', 'pptx'), ('rtf', 'docx')):
            subprocess.run(['soffice', '--headless', '--convert-to', fmt, '--outdir', str(folder), str(out[src][0])],
                           check=True, capture_output=True)
            out[fmt] = (out[src][0].with_suffix(f'.{fmt}'), out[src][1])
    return out


def word_manual(path: pathlib.Path) -> tuple:
    """A Word manual: each section's heading and three paragraphs, the second in a content control (a template's
    field), the third with a tracked deletion and insertion (a reviewed draft); then a table of the rows' first 30."""
    import docx
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls
    d, facts, rev = docx.Document(), [], 'w:author="Ana" w:date="2026-01-01T00:00:00Z"'
    for i in range(SECTIONS):
        d.add_heading(f'Procedimiento {i}', 1)
        paras = [f'El procedimiento {i} reinicia el nodo {i}{j} tras vaciar la cola {j}.' for j in range(3)]
        d.add_paragraph(paras[0])
        d.add_paragraph()._p.append(parse_xml(f'<w:sdt {nsdecls("w")}><w:sdtContent><w:r><w:t>{paras[1]}</w:t></w:r>'
                                              '</w:sdtContent></w:sdt>'))
        head, last = paras[2].rsplit(' ', 1)
        p = d.add_paragraph(head + ' ')
        p._p.append(parse_xml(f'<w:del {nsdecls("w")} w:id="{2 * i}" {rev}><w:r><w:delText>antigua </w:delText>'
                              '</w:r></w:del>'))
        p._p.append(parse_xml(f'<w:ins {nsdecls("w")} w:id="{2 * i + 1}" {rev}><w:r><w:t>{last}</w:t></w:r></w:ins>'))
        facts += paras
    t = d.add_table(rows=31, cols=len(HEADER))
    for r, row in enumerate([HEADER] + rows()[:30]):
        for c, v in enumerate(row): t.cell(r, c).text = v
    d.save(path)
    return path, facts + rows()[:30]


def wiki_export(path: pathlib.Path) -> tuple:
    "A wiki space exported as HTML in a zip: each page under the wiki's breadcrumbs and footer, with an image."
    import zipfile
    facts = []
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        for i in range(PAGES):
            paras = [f'El servicio {i} se reinicia con la orden faro-{i} restart {j} tras avisar al equipo {j}.'
                     for j in range(3)]
            z.writestr(f'OPS/Servicio-{i}_{1000 + i}.html', (
                f'<html><head><title>OPS : Servicio {i}</title></head><body><div id="breadcrumbs"><a href="index.html">'
                'OPS</a> / <a href="Runbooks_1.html">Runbooks</a></div><h1 id="title-heading">OPS : Servicio '
                f'{i}</h1><div id="main-content"><h2 id="reinicio">Reinicio</h2>'
                + ''.join(f'<p>{p}</p>' for p in paras) + f'<p><img src="images/s{i}.png"/></p></div>'
                '<div id="footer" role="contentinfo"><p>Document generated by the wiki on 2026-12-01</p></div>'
                '</body></html>'))
            z.writestr(f'OPS/images/s{i}.png', b'\x89PNG\r\n\x1a\n' + bytes(64))
            facts += paras
    return path, facts


WIKI_PAGE = """{{{{Infobox servicio
 | nombre = faro-{i}
 | ip = 10.0.{i}.1
 | responsable = equipo {i}
}}}}
'''faro-{i}''' es el servicio {i} del grupo de operaciones.<ref>Inventario 2026</ref>

== Reinicio ==
El servicio {i} se reinicia con la orden faro-{i} restart tras avisar al equipo {i}.
# Avisar al equipo de guardia {i}.
# Vaciar la cola {i} con <code>faro-{i} drain</code>.

 systemctl restart faro-{i}

== Puertos ==
{{| class="wikitable"
! Puerto !! Uso
|-
| 80{i:02} || HTTP del servicio {i}
|-
| 90{i:02} || métricas del servicio {i}
|}}

[[Archivo:faro-{i}.png|thumb|Esquema del servicio {i} con su balanceador]]
[[Categoría:Servicios]]"""


def mediawiki_export(path: pathlib.Path) -> tuple:
    """A MediaWiki export (`Special:Export`'s XML) of PAGES service pages and, as a wiki holds them, their talk
    pages, a redirect and a template: the facts are in the service pages' prose, steps, command, infobox, table rows
    and picture captions."""
    from xml.sax.saxutils import escape
    pages, facts = [], []

    def page(title, ns, text, redirect=''):
        pages.append(f'  <page>\n    <title>{escape(title)}</title>\n    <ns>{ns}</ns>\n{redirect}    <revision>\n'
                     f'      <model>wikitext</model>\n      <format>text/x-wiki</format>\n'
                     f'      <text xml:space="preserve">{escape(text)}</text>\n    </revision>\n  </page>')
    for i in range(PAGES):
        page(f'Servicio {i}', 0, WIKI_PAGE.format(i=i))
        page(f'Discusión:Servicio {i}', 1, f'¿Hace falta avisar antes de reiniciar faro-{i}? --~~~~')
        facts += [f'El servicio {i} se reinicia con la orden faro-{i} restart tras avisar al equipo {i}.',
                  f'Avisar al equipo de guardia {i}.', f'systemctl restart faro-{i}', ('ip', f'10.0.{i}.1'),
                  (f'80{i:02}', f'HTTP del servicio {i}'), f'Esquema del servicio {i} con su balanceador']
    page('Faro', 0, '#REDIRECCIÓN [[Servicio 0]]', '    <redirect title="Servicio 0" />\n')
    page('Plantilla:Infobox servicio', 10, '{| class="infobox"\n! Nombre\n| {{{nombre}}}\n|}')
    path.write_text('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="es">\n'
                    '  <siteinfo>\n    <sitename>Wiki de Operaciones</sitename>\n  </siteinfo>\n'
                    + '\n'.join(pages) + '\n</mediawiki>\n', encoding='utf-8')
    return path, facts


def slack_export(path: pathlib.Path) -> tuple:
    """A Slack workspace export as an admin downloads it (a zip: `users.json`, `channels.json`, a folder per channel,
    a file per day): THREADS questions in `#soporte`, each answered in its thread (every third the next day), among
    join notices, a bot's alerts and link previews. The facts: each answer whole, with its question in one chunk, and
    with the asker's name in one chunk."""
    import json, zipfile
    facts, days = [], {}
    msg = lambda user, text, ts, **kw: dict(type='message', user=user, text=text, ts=f'{ts:.6f}', **kw)
    for i in range(THREADS):
        day, asked = 3 * (i // 4), 1714989600 + i // 4 * 3 * 86400 + i % 4 * 3600
        ask = msg('U01', f'¿Cómo se reinicia faro-{i} tras el corte? *Urgente* <@U02>', asked, reply_count=1,
                  thread_ts=f'{asked:.6f}', user_profile=dict(real_name='Ana García'))
        answered = asked + (86400 if i % 3 == 0 else 600)
        answer = f'Con `systemctl restart faro-{i}` y avisando antes al equipo {i}.'
        reply = msg('U02', answer, answered, thread_ts=f'{asked:.6f}', parent_user_id='U01')
        days.setdefault(day, []).extend([
            dict(type='message', subtype='channel_join', user=f'U{10 + i}', text=f'<@U{10 + i}> has joined',
                 ts=f'{asked - 60:.6f}'), ask,
            dict(type='message', subtype='bot_message', username='alertas', ts=f'{asked + 30:.6f}', text='',
                 attachments=[dict(title=f'faro-{i} caído', fields=[dict(title='Host', value=f'faro-{i}')])]),
            msg('U03', f'Lo vi en <https://status.x/faro-{i}|la página de estado>', asked + 60,
                attachments=[dict(from_url=f'https://status.x/faro-{i}', title='Estado', text='Todo en orden')])])
        days.setdefault(day + (answered - asked) // 86400, []).append(reply)
        facts += [answer, (f'reinicia faro-{i} tras el corte', answer), ('Ana García', answer)]
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        people = [dict(id='U01', real_name='Ana García'), dict(id='U02', real_name='Luis Gil'),
                  dict(id='U03', real_name='Eva Sanz')]
        z.writestr('users.json', json.dumps(people))
        z.writestr('channels.json', json.dumps([dict(id='C01', name='soporte')]))
        for day, msgs in days.items():
            name = time.strftime('%Y-%m-%d', time.gmtime(1714989600 + day * 86400))
            z.writestr(f'soporte/{name}.json', json.dumps(sorted(msgs, key=lambda m: float(m['ts'])), indent=4,
                                                          ensure_ascii=False))
    return path, facts


def incidents() -> list[tuple[int, str, str, str, str]]:
    "TICKETS incidents: `(number, summary, description of about 2,400 characters, first comment, the fix)`."
    out = []
    for i in range(TICKETS):
        body = ' '.join(f'En el nodo {j} del clúster {i} el servicio tarda {j + 2} minutos en responder tras el '
                        f'reinicio de la noche, y el balanceador lo marca como caído durante ese tiempo.'
                        for j in range(14))
        first = f'Reinicié el balanceador del clúster {i} y el problema sigue igual en los nodos lentos.'
        fix = (f'Solución: subir el tiempo de gracia del balanceador {i} a {i + 5} minutos con lbctl grace {i + 5}m; '
               f'causa raíz: la caché del nodo se reconstruye al arrancar.')
        out.append((300 + i, f'Nodos del clúster {i} caídos tras el reinicio', body, first, fix))
    return out


def ticket_export(path: pathlib.Path) -> tuple:
    """A ticket tracker's CSV export (Jira's columns) of the `incidents`: a key, a summary, short fields, the
    description and two comments, the second the fix. The facts: each comment whole, and the fix in one chunk with
    its ticket's key, and with its summary."""
    facts, rows = [], [('Summary', 'Issue key', 'Issue Type', 'Status', 'Priority', 'Assignee', 'Created',
                        'Description', 'Comment', 'Comment')]
    for n, summary, body, first, fix in incidents():
        rows.append((summary, f'OPS-{n}', 'Incidencia', 'Resuelta', 'Alta', 'Luis Gil', f'0{1 + n % 9}/05/2024',
                     body, first, fix))
        facts += [first, fix, (f'OPS-{n}', fix), (summary, fix)]
    with open(path, 'w', newline='', encoding='utf-8') as f: csv.writer(f).writerows(rows)
    return path, facts


def issue_export(path: pathlib.Path) -> tuple:
    """The same `incidents` as a tracker's JSON export (GitHub's `gh issue list --json number,title,state,body,
    comments` shape): the facts as for the CSV, the number for the key."""
    import json
    issues, facts = [], []
    for n, summary, body, first, fix in incidents():
        comments = [dict(author=dict(login='ana'), body=first), dict(author=dict(login='luis'), body=fix)]
        issues.append(dict(number=n, title=summary, state='CLOSED', body=body, comments=comments))
        facts += [first, fix, (f'{n}', fix), (summary, fix)]
    path.write_text(json.dumps(issues, indent=2, ensure_ascii=False), encoding='utf-8')
    return path, facts


def api_description(path: pathlib.Path) -> tuple:
    """An API's OpenAPI description in YAML (PyYAML's dump, as frameworks write it): OPERATIONS operations, each with
    a summary, a description of about 250 characters and a request body naming its schema by `$ref`, the schemas
    at the end under `components`. The facts: each description whole, and with its summary; each operation's path
    with the description of its body's required field."""
    import yaml
    paths, schemas, facts = {}, {}, []
    for i in range(OPERATIONS):
        desc = (f'Reinicia el servicio faro-{i} sin cortar las conexiones abiertas: primero deja de aceptar '
                f'peticiones nuevas, luego espera a que acaben las que están en curso y por último arranca la '
                f'versión desplegada. Solo pueden llamarla los operadores del turno {i % 3}.')
        field = f'Segundos que faro-{i} espera a que acaben las peticiones en curso antes de reiniciar.'
        paths[f'/servicios/faro-{i}/reinicio'] = {'post': {
            'operationId': f'reiniciaFaro{i}', 'summary': f'Reinicia faro-{i}', 'description': desc,
            'requestBody': {'required': True, 'content': {'application/json': {'schema': {
                '$ref': f'#/components/schemas/Reinicio{i}'}}}},
            'responses': {'202': {'description': f'Reinicio de faro-{i} aceptado.'}}}}
        schemas[f'Reinicio{i}'] = {'type': 'object', 'required': ['espera'], 'properties': {
            'espera': {'type': 'integer', 'description': field},
            'motivo': {'type': 'string', 'description': f'Motivo del reinicio de faro-{i}, que queda en el registro.'}}}
        facts += [desc, (f'Reinicia faro-{i}', desc), (f'/servicios/faro-{i}/reinicio', field)]
    spec = {'openapi': '3.0.3', 'info': {'title': 'API de operaciones de Faro', 'version': '1.4'}, 'paths': paths,
            'components': {'schemas': schemas}}
    path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding='utf-8')
    return path, facts


def langchain_tickets(path: pathlib.Path) -> list[tuple[str, str | None]]:
    "LangChain's `CSVLoader` (a `column: value` document per row) cut by its recursive splitter; a place: its row."
    import warnings
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        from langchain_community.document_loaders import CSVLoader
        docs = CSVLoader(str(path), encoding='utf-8').load()
    chunks = RecursiveCharacterTextSplitter(chunk_size=1500, chunk_overlap=200).split_documents(docs)
    return [(c.page_content, f"row={c.metadata['row']}" if 'row' in c.metadata else None) for c in chunks]


def langchain_slack(path: pathlib.Path) -> list[tuple[str, str | None]]:
    "LangChain's `SlackDirectoryLoader` (a document per message) cut by its recursive splitter; a place: its source."
    import warnings
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        from langchain_community.document_loaders import SlackDirectoryLoader
        docs = SlackDirectoryLoader(str(path)).load()
    chunks = RecursiveCharacterTextSplitter(chunk_size=1500, chunk_overlap=200).split_documents(docs)
    return [(c.page_content, c.metadata.get('source')) for c in chunks]


def langchain_wiki(path: pathlib.Path) -> list[tuple[str, str | None]]:
    "LangChain's `MWDumpLoader` (main namespace, no redirects) cut by its recursive splitter; a place: its page."
    import warnings
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')                  # langchain-community's notice that it is being sunset
        from langchain_community.document_loaders import MWDumpLoader
        docs = MWDumpLoader(str(path), namespaces=[0], skip_redirects=True).load()
    chunks = RecursiveCharacterTextSplitter(chunk_size=1500, chunk_overlap=200).split_documents(docs)
    return [(c.page_content, c.metadata.get('source')) for c in chunks]


def ragnb_chunks(path: pathlib.Path) -> list[tuple[str, str | None]]:
    "`(text, place)` of ragnb's chunks of one file: its citation when it names a place in the file."
    from ragnb.ingest import SourceFile, document_chunks
    from ragnb.readers import locate_chunks, read_document
    doc = read_document(path)
    cs = locate_chunks(document_chunks(SourceFile(path, str(path), path.name, doc, '', '', False, '')), doc)
    return [(c.text, c.cite if (c.anchor or c.page_start) else None) for c in cs]


LI_PLACES = ('page_label', 'sheet_name', 'row', 'chapter', 'title', 'section', 'message_id', 'subject')


def llamaindex_chunks(fmt: str, path: pathlib.Path) -> list[tuple[str, str | None]] | None:
    "`(text, place)` of LlamaIndex's nodes of one file (None: no reader for the format)."
    from llama_index.core.node_parser import SentenceSplitter
    if fmt in ('zip', 'mediawiki', 'slack', 'json', 'openapi'): return llamaindex_zip(path, unpacked=False)
    from llama_index.readers.file import (DocxReader, EpubReader, MboxReader, PagedCSVReader, PandasExcelReader,
                                          PptxReader, RTFReader)
    reader = dict(pptx=PptxReader, xlsx=PandasExcelReader, xls=PandasExcelReader, csv=PagedCSVReader, epub=EpubReader,
                  mbox=MboxReader, docx=DocxReader, rtf=RTFReader, tickets=PagedCSVReader).get(fmt)
    if reader is None: return None
    kw = dict(delimiter=';') if fmt == 'csv' else {}      # told the delimiter: it does not look for one
    nodes = SentenceSplitter().get_nodes_from_documents(reader().load_data(path, **kw))
    place = lambda m: next((f'{k}={m[k]}' for k in LI_PLACES if m.get(k) not in (None, '', [])), None)
    return [(n.get_content(), place(n.metadata)) for n in nodes]


def llamaindex_zip(path: pathlib.Path, unpacked: bool) -> list[tuple[str, str | None]]:
    "`SimpleDirectoryReader` on the zip as given, or on the folder it unpacks to (a node's place: its page)."
    import shutil, zipfile
    from llama_index.core import SimpleDirectoryReader
    from llama_index.core.node_parser import SentenceSplitter
    if not unpacked: docs = SimpleDirectoryReader(input_files=[str(path)]).load_data()
    else:
        folder = path.with_suffix('')
        zipfile.ZipFile(path).extractall(folder)
        with contextlib.redirect_stdout(io.StringIO()):   # a line per image it cannot read, between our rows
            docs = SimpleDirectoryReader(str(folder), recursive=True).load_data()
        shutil.rmtree(folder)
    nodes = SentenceSplitter().get_nodes_from_documents(docs)
    return [(n.get_content(), n.metadata.get('file_path') if unpacked else None) for n in nodes]


def found(fact, texts: list[str]) -> bool:
    "A string fact in one chunk; a row: every cell in one chunk."
    flat = [re.sub(r'\s+', ' ', t) for t in texts]
    cells = [fact] if isinstance(fact, str) else list(fact)
    return any(all(c in t for c in cells) for t in flat)


UNPACKED = 'LlamaIndex, unpacked by hand'


def antiword_chunks(path: pathlib.Path) -> list[tuple[str, str | None]]:
    "`antiword`'s text of a DOC (what textract returns for one), cut by LlamaIndex's `SentenceSplitter`."
    from llama_index.core.node_parser import SentenceSplitter
    text = subprocess.run(['antiword', '-w', '0', str(path)], capture_output=True, text=True, check=True).stdout
    return [(t, None) for t in SentenceSplitter().split_text(text)]


def measure(fmt: str, path: pathlib.Path, facts: list, tool: str) -> dict | None:
    t = time.perf_counter()
    chunks = (ragnb_chunks(path) if tool == 'ragnb' else llamaindex_zip(path, True) if tool == UNPACKED
              else antiword_chunks(path) if tool == 'antiword'
              else dict(slack=langchain_slack, tickets=langchain_tickets).get(fmt, langchain_wiki)(path)
              if tool == 'LangChain'
              else llamaindex_chunks(fmt, path))
    ms = (time.perf_counter() - t) * 1e3
    if chunks is None: return None
    texts = [t for t, _ in chunks]
    with_rows = [t for t in texts if any(r[0] in t for r in facts)] if fmt in ('xlsx', 'xls', 'csv') else []
    return dict(facts=sum(found(f, texts) for f in facts), n=len(facts), chunks=len(chunks),
                placed=sum(p is not None for _, p in chunks), example=next((p for _, p in chunks if p), '-'),
                headed=sum(all(h in t for h in HEADER) for t in with_rows) if with_rows else None,
                with_rows=len(with_rows), chars=sum(map(len, texts)), ms=ms)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        files = make(pathlib.Path(tmp))
        print('| format | tool | facts whole | chunks | placed | e.g. | headed | chars | ms |')
        print('|---|---|---|---|---|---|---|---|---|')
        for fmt, (path, facts) in files.items():
            for tool in ('ragnb', 'LlamaIndex') + ((UNPACKED,) if fmt in ('zip', 'slack') else ()) + \
                    (('antiword',) if fmt == 'doc' and shutil.which('antiword') else ()) + \
                    (('LangChain',) if fmt in ('mediawiki', 'slack', 'tickets') else ()):
                m = measure(fmt, path, facts, tool)
                if m is None:
                    print(f'| {fmt} | {tool} | not read | | | | | | |')
                    continue
                headed = f"{m['headed']}/{m['with_rows']}" if m['headed'] is not None else ''
                print(f"| {fmt} | {tool} | {m['facts']}/{m['n']} | {m['chunks']} | {m['placed']} | "
                      f"`{m['example'].replace(str(path.parent) + '/', '')}` | {headed} | {m['chars']:,} | "
                      f"{m['ms']:.0f} |")
                sys.stdout.flush()


if __name__ == '__main__':
    argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
