"""Citations of trimmed chunks: does what `ragnb ask --trim` cites hold the answer it kept? Prints one table.

    python bench/bench_citations.py [--questions long_questions.jsonl] [--work DIR]

A trimmed chunk keeps some of its sentences; its citation should point at them, not at the whole chunk: the lines of
a text file, the section (anchor) of an HTML page, the page of a PDF. Each kept sentence is placed by
`Chunk.place`, from the lines the chunker recorded (`Chunk.line_runs`) and where the reader's anchors and pages
change (`Chunk.marks`); before, every trimmed chunk cited its whole chunk.

Documents: `corpus.long_docs_dir` (the 12 longest pages of the Spanish Debian Handbook; 8 long pages of Python's
library reference and Nettle's manual as a PDF: installed Debian packages, never copied into the repo), and the
bundled markdown docs (`data/docs`). Questions: `bench/long_questions.jsonl` (38) and `data/eval/questions.jsonl`.

For every trimmed chunk of the top 5 (`RetrieveOpts(trim=True)`, the default policy) whose kept text holds the
answer string, the answer is found again in the reader's text of its file, on the lines of the whole chunk, and the
citation is judged against that line, once as the whole chunk cites it and once as the trimmed chunk does:
- lines: the cited lines hold the answer's line, and how many lines they span;
- HTML: the cited anchor is the one in force at the answer's line (the section a reader lands in);
- PDF: the cited first page (`#page=N`, what a viewer opens) is the answer's page.
Every kept sentence is also checked to lie, whitespace aside, inside the cited lines of the reader's text.
"""
import argparse, json, pathlib, re, statistics, sys, tempfile, time, unicodedata

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from corpus import long_docs_dir  # noqa: E402


def norm(s: str) -> str:
    return re.sub(r'\s+', ' ', unicodedata.normalize('NFKC', s).casefold()).strip()


def build(folders, path):
    from ragnb.ingest import index_paths, open_for_indexing
    t = time.perf_counter()
    with open_for_indexing(path, folders) as s:
        rep = index_paths(s, folders, progress=False)
    return rep.chunks, time.perf_counter() - t


def questions(names):
    out = []
    for n in names:
        p = ROOT / 'bench' / n if (ROOT / 'bench' / n).exists() else ROOT / n
        out += [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
    return out


def doc_of(source, cache):
    from ragnb.chunking import read_text_file
    from ragnb.readers import read_document, reader_for, text_document
    if source not in cache:
        cache[source] = (read_document(source) if reader_for(source)
                         else text_document(source, read_text_file(source)))
    return cache[source]


def anchor_at(doc, line):
    found = [a for ln, a in doc.anchors if ln <= line]
    return found[-1] if found else None


def line_of(text, doc, lo, hi):
    """The line of the reader's text, from `lo` to `hi`, where `text` starts: the first that begins with its first line
    (a code fence's marker aside), else the first that holds it."""
    first = next((ln for ln in text.split('\n') if ln.strip() and not ln.lstrip().startswith(('```', '~~~'))), '')
    key, lines = norm(first)[:40], doc.text.split('\n')
    if not key: return None
    rng = range(lo, min(hi, len(lines)) + 1)
    return (next((i for i in rng if norm(lines[i - 1]).startswith(key)), None)
            or next((i for i in rng if key in norm(lines[i - 1])), None))


def right_place(x, doc, line) -> bool:
    "Does citation `x` name the place of `line`: its page (PDF), its section (HTML), lines holding it (text)?"
    if doc.pages: return x.page_start == doc.pages[line - 1][0]
    if doc.anchors: return x.anchor == anchor_at(doc, line)
    return x.start_line <= line <= x.end_line


def opens_at(x, doc, line) -> int:
    "Where a reader of citation `x` starts reading: its anchor's line (HTML), else its first line."
    if doc.anchors and not doc.pages:
        return max((ln for ln, a in doc.anchors if a == x.anchor and ln <= line), default=x.start_line)
    return x.start_line


def judge(c, whole, answer, doc):
    "One trimmed chunk `c` (the whole one `whole`): each citation against its first kept sentence and the answer."
    kind = 'pdf' if doc.pages else 'html' if doc.anchors else 'text'
    first = line_of(c.original_text[c.kept_spans[0][0]:c.kept_spans[0][1]], doc, whole.start_line, whole.end_line)
    row = dict(kind=kind, found=first is not None)
    ans = line_of(answer, doc, whole.start_line, whole.end_line) if answer is not None else None
    for name, x in (('whole', whole), ('trimmed', c)):
        row[f'{name}_lines'] = x.end_line - x.start_line + 1
        row[f'{name}_right'] = first is not None and right_place(x, doc, first)
        if ans is not None: row[f'{name}_to_answer'] = ans - opens_at(x, doc, ans)
    return row


def kept_inside(c, doc) -> bool:
    "Every kept sentence's words lie in the cited lines of the reader's text."
    cited = norm('\n'.join(doc.text.split('\n')[c.start_line - 1:c.end_line]))
    return all(norm(c.original_text[s:e]) in cited for s, e in c.kept_spans
               if not c.original_text[s:e].startswith('[Doc: '))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--questions', nargs='+', default=['long_questions.jsonl', 'data/eval/questions.jsonl'])
    ap.add_argument('--work', help='keep the stores here (built once)')
    args = ap.parse_args()
    from ragnb.index import Store
    from ragnb.retrieve import RetrieveOpts, retrieve
    from ragnb.trim import TrimmedChunk
    work = pathlib.Path(args.work or tempfile.mkdtemp())
    long = long_docs_dir()
    corpora = {'es': [long / 'es'], 'en': [long / 'en'], 'bundled': [ROOT / 'data' / 'docs']}
    stores = {}
    for name, folders in corpora.items():
        path = work / name
        if not (path / 'manifest.json').exists():
            n, s = build(folders, path)
            print(f'indexed {name}: {n} chunks in {s:.1f} s', file=sys.stderr)
        stores[name] = Store.open(path, readonly=True)
    rows, sound, cache = [], [], {}
    for q in questions(args.questions):
        store = stores[{'pdf': 'en'}.get(q.get('corpus'), q.get('corpus') or 'bundled')]
        res = retrieve(store, q['question'], 5, RetrieveOpts(trim=True))
        for c in res.chunks:
            if not isinstance(c, TrimmedChunk) or len(c.kept) == len(c.sentence_spans): continue
            doc = doc_of(c.source, cache)
            sound.append(kept_inside(c, doc))
            answer = q['answer'] if norm(q['answer']) in norm(c.text) else None
            rows.append(judge(c, store.get_chunks([int(c.id)])[0], answer, doc))
    print(f'{len(rows)} trimmed chunks over {len(questions(args.questions))} questions; kept sentences inside their '
          f'cited lines: {sum(sound)}/{len(sound)}; first kept sentence found in the reader\'s text: '
          f'{sum(r["found"] for r in rows)}\n')
    print('| file | trimmed chunks | citation | names the first kept sentence\'s page, section or lines | lines cited '
          '(mean) | with the answer | lines from where the citation opens to the answer (mean) |')
    print('|---|---|---|---|---|---|---|')
    for kind in ('text', 'html', 'pdf'):
        rs = [r for r in rows if r['kind'] == kind]
        if not rs: continue
        for name, label in (('whole', 'the whole chunk\'s (before)'), ('trimmed', 'what was kept (`Chunk.place`)')):
            right = sum(r[f'{name}_right'] for r in rs)
            mean = statistics.mean(r[f'{name}_lines'] for r in rs)
            ans = [r[f'{name}_to_answer'] for r in rs if f'{name}_to_answer' in r]
            to = f'{statistics.mean(ans):.1f}' if ans else '-'
            print(f'| {kind} | {len(rs)} | {label} | {right}/{len(rs)} | {mean:.1f} | {len(ans)} | {to} |')
    for s in stores.values(): s.close()


if __name__ == '__main__':
    main()
