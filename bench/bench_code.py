"""Source code beside its docs: `codigo` (tree-sitter grammars for Go, Java, C, C++, PHP and Perl, `sqlparse` for
SQL) against the same files read as prose (what ragnb did with them before), LangChain's language splitter and
LlamaIndex's `CodeSplitter`. Prints one table of chunks and one of answers.

    python bench/bench_code.py [--questions code_questions.jsonl] [--work DIR]

Chunks: every function and method of the code (tree-sitter's nodes at any depth, the ones of at most 2,200
characters, which fit one chunk; for SQL each `CREATE` statement, found by a scanner of the bench's own) is looked
for whole in one chunk, whitespace aside. Files: the code corpus
(`corpus.code_corpus_dir`: zlib's and Nettle's C examples, git's persistent-https in Go, 8 classes of
`java.util.concurrent`), for C++ 800 headers of `/usr/include` read as `.h` files are, for PHP App Engine's PHP SDK
(as `google-cloud-sdk` installs it), for Perl the first 400 modules of `/usr/share/perl5` and for SQL the scripts a
PostgreSQL server installs (a row is left out when its files are not installed; LangChain has no Perl or SQL
splitter, and LlamaIndex reads SQL with `tree-sitter-sql`). LangChain:
`RecursiveCharacterTextSplitter.from_language` at 2,200 characters with 200 of overlap; LlamaIndex: `CodeSplitter`
at 2,200 characters (40-line windows, 15 of overlap), with the same tree-sitter grammar as ragnb.

Answers: the code corpus with its two HTML manuals, indexed as a user would (`index_paths`, the model `ragnb index`
picks: MiniLM for English), and again with the code files renamed `*.txt` (prose chunks). Peers embed their chunks
with the same model (ragnb's `Embedder`) and search them densely; the manuals go to them as ragnb's readers' text,
split at 1,500 characters (200 overlap). Each question's answer is a declaration's text, such as
`public int drainPermits()`, that one of the top 5 must hold.

Questions: `bench/code_questions.jsonl` (18, dev) and `code_questions_heldout.jsonl` (12, looked at once).
"""
import argparse, functools, glob, json, pathlib, re, shutil, statistics, sys, tempfile, time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from corpus import code_corpus_dir  # noqa: E402

FUNCTIONS = {'c': {'function_definition'}, 'cpp': {'function_definition'}, 'go': {'function_declaration',
             'method_declaration'}, 'java': {'method_declaration', 'constructor_declaration'},
             'php': {'function_definition', 'method_declaration'}, 'perl': {'subroutine_declaration_statement'}}
PHP_SDK = pathlib.Path('/usr/lib/google-cloud-sdk/platform/google_appengine/php/sdk')   # google-cloud-sdk's
PERL5 = pathlib.Path('/usr/share/perl5')                                                   # Debian's Perl modules
POSTGRES_SQL = '/usr/share/postgresql/*/**/*.sql'                             # what a PostgreSQL server installs
MAX_CHARS = 2200


def squash(text:str) -> str: return ''.join(text.split())


_DOLLAR = re.compile(r'\$(\w*)\$')
_WORD = re.compile(r'(BEGIN\s+ATOMIC|END)\b', re.I)


def sql_creates(text:str) -> list[str]:
    """The `CREATE` statements of a PostgreSQL script, from `CREATE` to its `;`, by a scanner of the bench's own
    (quotes, comments, dollar quotes, `BEGIN ATOMIC ... END`), not by the `sqlparse` that ragnb uses."""
    out, i, at, depth, n = [], 0, 0, 0, len(text)
    while i < n:
        if text.startswith('--', i) or text.startswith('/*', i):
            j = text.find('\n' if text[i] == '-' else '*/', i + 2)
            i = n if j < 0 else j + (text[i] == '/') * 2
        elif text[i] in '\'"':
            q, j = text[i], i + 1
            while j < n and text[j:j + 1] != q or text.startswith(q * 2, j): j += 2 if text.startswith(q * 2, j) else 1
            i = j + 1
        elif (m := _DOLLAR.match(text, i)) and not text[i - 1:i].isalnum():
            j = text.find(m.group(0), m.end())
            i = n if j < 0 else j + len(m.group(0))
        elif (m := _WORD.match(text, i)) and not text[i - 1:i].isalnum():
            depth = max(0, depth + (1 if m.group(1).upper() != 'END' else -1))
            i = m.end()
        elif text[i] == ';' and not depth:
            stmt = text[at:i + 1]
            k = re.search(r'^[ \t]*CREATE\b', re.sub(r'--[^\n]*|/\*.*?\*/', lambda m: ' ' * len(m.group()), stmt,
                                                  flags=re.S), re.M | re.I)
            if k: out.append(stmt[k.start():].strip())
            at = i = i + 1
        else: i += 1
    return out


def functions(text:str, language:str) -> list[str]:
    "The functions and methods of `text` that fit one chunk (for SQL, its `CREATE` statements), whitespace removed."
    if language == 'sql': return [squash(s) for s in sql_creates(text) if len(s) <= MAX_CHARS]
    import tree_sitter as ts
    from ragnb.chunking import _grammar_language
    root = ts.Parser(_grammar_language(language)).parse(text.encode()).root_node
    out, todo = [], [root]
    while todo:
        n = todo.pop()
        if n.type in FUNCTIONS[language] and len(n.text) <= MAX_CHARS:
            out.append(squash(n.text.decode('utf-8', 'replace')))
        todo.extend(n.children)
    return out


@functools.cache
def splitters(language:str) -> dict:
    "Each method's `texts(source, name) -> list[str]`."
    import tree_sitter as ts
    from langchain_text_splitters import Language, RecursiveCharacterTextSplitter
    from llama_index.core.node_parser import CodeSplitter
    from ragnb.chunking import _grammar_language, chunk_code, chunk_document
    try: lc = RecursiveCharacterTextSplitter.from_language(
        {'c': Language.C, 'cpp': Language.CPP, 'go': Language.GO, 'java': Language.JAVA, 'php': Language.PHP,
         'perl': Language.PERL}[language], chunk_size=MAX_CHARS, chunk_overlap=200)
    except (ValueError, KeyError): lc = None             # "Language.PERL is not implemented yet", no SQL: left out
    if language == 'sql':                                # tree-sitter's SQL grammar (`pip install tree-sitter-sql`)
        import tree_sitter_sql
        grammar = ts.Language(tree_sitter_sql.language())
    else: grammar = _grammar_language(language)
    li = CodeSplitter(language=language, parser=ts.Parser(grammar), max_chars=MAX_CHARS)
    out = {'ragnb `codigo`': lambda t, n: [c.body for c in chunk_code(t, source=n, language=language)],
           'ragnb before (code read as prose)': lambda t, n: [c.body for c in chunk_document(t, source=n)],
           'LangChain from_language': lambda t, _: lc.split_text(t),
           'LlamaIndex CodeSplitter': lambda t, _: li.split_text(t)}
    return {k: v for k, v in out.items() if lc is not None or not k.startswith('LangChain')}


def chunk_rows(corpus:pathlib.Path) -> list[str]:
    files = {'c': sorted(corpus.glob('*/*.c')), 'go': sorted(corpus.glob('go/*.go')),
             'java': sorted(corpus.glob('java/*.java')),
             'cpp': sorted(pathlib.Path(p) for p in glob.glob('/usr/include/**/*.h', recursive=True))[:800],
             'php': sorted(PHP_SDK.rglob('*.php')), 'perl': sorted(PERL5.rglob('*.pm'))[:400],
             'sql': sorted(pathlib.Path(p) for p in glob.glob(POSTGRES_SQL, recursive=True))}
    rows = []
    for language, paths in files.items():
        if not paths: continue                                   # not installed here: the row is left out
        texts = [(p.read_text(encoding='utf-8', errors='replace'), p.name) for p in paths]
        found = [functions(t, language) for t, _ in texts]
        wanted = [f for fs in found for f in fs]
        for method, split in splitters(language).items():
            t0, whole, chunks, refused = time.perf_counter(), 0, [], 0
            for (text, name), fs in zip(texts, found):
                try: got = split(text, name)
                except ValueError: got, refused = [], refused + 1       # LlamaIndex refuses a parse with errors
                chunks += got
                squashed = [squash(c) for c in got]
                whole += sum(any(f in c for c in squashed) for f in fs)
            ms = (time.perf_counter() - t0) * 1e3
            rows.append(f'| {language} ({len(paths)} files) | {method} | {len(chunks)} | '
                        f'{statistics.median(map(len, chunks)):.0f} | {whole} / {len(wanted)} '
                        f'({whole / max(1, len(wanted)):.0%}) | {refused} | {ms:.0f} |')
    return rows


def as_prose(corpus:pathlib.Path, work:pathlib.Path) -> pathlib.Path:
    "A copy of the corpus whose code files end in `.txt`, so that ragnb reads them as prose, as it did before."
    from ragnb.chunking import CODE_EXTS
    out = work / 'as-prose'
    if not out.exists():
        for p in corpus.rglob('*'):
            if p.is_file():
                dst = out / p.relative_to(corpus)
                dst = dst.with_name(dst.name + '.txt') if p.suffix in CODE_EXTS else dst
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(p, dst)
    return out


def ragnb_store(folder:pathlib.Path, path:pathlib.Path):
    from ragnb.index import Store
    from ragnb.ingest import index_paths, open_for_indexing
    t = time.perf_counter()
    if not path.exists():
        with open_for_indexing(path, [folder]) as s: index_paths(s, [folder], progress=False)
    store = Store.open(path, readonly=True)
    return store, time.perf_counter() - t


def peer_texts(corpus:pathlib.Path, method:str) -> list[str]:
    "The corpus as `method` chunks it: code by its code splitter, the HTML manuals by ragnb's reader, then 1,500/200."
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from ragnb.chunking import CODE_EXTS
    from ragnb.readers import read_document
    prose = RecursiveCharacterTextSplitter(chunk_size=1500, chunk_overlap=200)
    out = []
    for p in sorted(corpus.rglob('*')):
        if p.suffix == '.html': out += prose.split_text(read_document(p, p.read_bytes()).text)
        elif p.suffix in CODE_EXTS:
            text = p.read_text(encoding='utf-8', errors='replace')
            try: out += splitters(CODE_EXTS[p.suffix])[method](text, p.name)
            except ValueError: out.append(text)          # refused (LlamaIndex on a parse error): the file whole
    return out


def dense_peer(texts:list[str], emb):
    import numpy as np
    t = time.perf_counter()
    vecs = emb.embed_documents(texts, progress=False)
    secs = time.perf_counter() - t
    def search(q, k=5):
        s = vecs @ emb.embed_query(q)
        return [texts[i] for i in np.argsort(-s)[:k]]
    return search, secs, len(texts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--questions', nargs='+', default=['code_questions.jsonl', 'code_questions_heldout.jsonl'])
    ap.add_argument('--work', help='keep the stores here (reused when present)')
    args = ap.parse_args()
    from ragnb.retrieve import RetrieveOpts, retrieve
    corpus = code_corpus_dir()
    work = pathlib.Path(args.work) if args.work else pathlib.Path(tempfile.mkdtemp())
    print('\n| code | method | chunks | median chars | functions whole in one chunk | files refused | ms |\n'
          '|---|---|---|---|---|---|---|')
    print('\n'.join(chunk_rows(corpus)))
    stores = {'ragnb `codigo`': ragnb_store(corpus, work / 'codigo'),
              'ragnb before (code read as prose)': ragnb_store(as_prose(corpus, work), work / 'prose')}
    emb = stores['ragnb `codigo`'][0].embedder
    peers = {m: dense_peer(peer_texts(corpus, m), emb) for m in ('LangChain from_language', 'LlamaIndex CodeSplitter')}
    sets = {f: [json.loads(x) for x in (ROOT / 'bench' / f).read_text().splitlines() if x.strip()]
            for f in args.questions}
    print(f"\n{corpus}: {emb.name}; answer@5 (the declaration's text in one of the top 5)\n")
    print(f"| method | search | {' | '.join(sets)} | chunks | index s |\n|---|---|{'---|' * len(sets)}---|---|")
    for name, (store, secs) in stores.items():
        for mode in ('hybrid', 'dense', 'lexical'):
            cells = []
            for qs in sets.values():
                hits = [squash(q['answer']) in squash('\n'.join(c.text for c in retrieve(
                    store, q['question'], top_k=5, opts=RetrieveOpts(mode=mode)).chunks)) for q in qs]
                cells.append(f'{sum(hits)} / {len(qs)}')
            print(f"| {name} | {mode} | {' | '.join(cells)} | {store.stats()['chunks']} | {secs:.0f} |")
    for name, (search, secs, n) in peers.items():
        cells = [f"{sum(squash(q['answer']) in squash(chr(10).join(search(q['question']))) for q in qs)} / {len(qs)}"
                 for qs in sets.values()]
        print(f"| {name} | dense | {' | '.join(cells)} | {n} | {secs:.0f} (embedding) |")
    for store, _ in stores.values(): store.close()
    if not args.work: shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    import warnings
    warnings.simplefilter('ignore')       # a header ragnb reads by line windows says so; the table counts what matters
    main()
