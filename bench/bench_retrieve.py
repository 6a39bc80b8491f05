"""Dense, lexical and hybrid retrieval on the Debian Reference corpus (es + en), with our own 56 labelled questions
(bench/debian_questions.jsonl: 28 topics, each asked in Spanish and in English, with the command that answers it).
The lexical side is SQLite FTS5 inside the store; bm25s and tantivy, fed the very same terms, are measured beside it.
Prints one table.

    python bench/bench_retrieve.py [--store DIR]   # DIR: keep the built store there, and reuse it next time

With `--signals` (issue 34), it prints instead one table per language for each model (MiniLM, the packaged default,
and multilingual-e5-small, built offline): dense, lexical and hybrid as `retrieve` runs them, then the stored
sentence vectors as a ranking (max-sim: a chunk's best sentence cosine, over every stored sentence, no model
call), and RRF fusions of dense, BM25 and max-sim. Cross-language rows ask the Spanish questions of the English
half of the corpus (a filter on the `en/` sources) and the reverse. Search p50 per question (the query embedded).

    python bench/bench_retrieve.py --signals [--store PREFIX] [--questions FILE]

`--questions debian_questions_cross.jsonl`: 20 questions (10 topics in Spanish and in English) written for the
cross-language rows, reported separately from the dev set.
`--questions debian_questions_dev2.jsonl`: a second dev set of 30 Spanish and 25 English questions, each written from a
paragraph of the Debian Reference drawn at random (seed 20261205, the first usable ones in draw order), paraphrased.
`--questions debian_questions_dev3.jsonl`: a third dev set of 24 Spanish questions asked as the first set asks them
(a task, whose answer is the command, package or file, rarely named), on topics drawn from Spanish paragraphs that
cite a command (seed 20261209) and not in the other sets.
`--questions debian_questions_heldout2.jsonl`: a second held-out set of 24 Spanish questions asked as the third dev
set asks them, written on 2026-12-07 from Spanish prose paragraphs of 250-1,500 characters that cite a command with
its manual section (seed 20261207, in draw order; skipped: answers of the other sets, names that are common
substrings such as `script`, `col` or `head`, and commands named only in passing such as `bash`), looked at once.

`--corpus html`: the quality issue's second kind of set, real HTML as a user indexes it: the Spanish Debian Handbook
and Python's tutorial with 12 library pages (`corpus.html_corpus_dir`, 156 pages), with `html_questions.jsonl`
(20 + 20, dev), `html_questions_dev2.jsonl` (a second dev set of 30 + 25, each written from a paragraph of the
reader's text drawn at random, seed 20261206, the first usable ones in draw order, paraphrased; harder, since the
questions rarely name the tool), `html_questions_heldout.jsonl` (10 + 10, looked at once) or
`html_questions_heldout2.jsonl` (20 + 20 held out from the same draw: the next usable paragraphs after the second
dev set's, looked at once). No cross-language rows there.

`hybrid` is `retrieve`'s default (dense, BM25 and the candidates' best stored sentence, fused by RRF); `hybrid,
two rankings` is the same with `sentence_rank=False`.
"""
import argparse, json, pathlib, shutil, sqlite3, sys, tempfile, time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from corpus import corpus_dir, html_corpus_dir  # noqa: E402
from machine import machine  # noqa: E402


ROUNDS = 5   # each question's search is timed this many times


def first_answer_rank(texts, answer):
    "1-based rank of the first text holding the answer (case-insensitive), or None."
    a = answer.lower()
    return next((i for i, t in enumerate(texts, 1) if a in t.lower()), None)


def quality(ranks):
    hit = sum(r is not None and r <= 5 for r in ranks) / len(ranks)
    mrr = sum(1 / r for r in ranks if r is not None and r <= 10) / len(ranks)
    return hit, mrr


def pct(xs, p): return sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]


def main():
    from ragnb.index import Store
    from ragnb.ingest import index_paths
    from ragnb.lexical import query_terms
    from ragnb.retrieve import RetrieveOpts, retrieve
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--store', help='where to keep the built store (reused when it is there)')
    ap.add_argument('--signals', action='store_true', help='per-language tables of dense, BM25, max-sim and fusions')
    ap.add_argument('--questions', help='a file in bench/ (the corpus\'s dev set by default)')
    ap.add_argument('--corpus', choices=('debian', 'html'), default='debian', help='--signals: which documents')
    args = ap.parse_args()
    if args.signals:
        default = 'html_questions.jsonl' if args.corpus == 'html' else 'debian_questions.jsonl'
        return signals(args.store, args.questions or default, args.corpus)
    qs = [json.loads(l) for l in (ROOT / 'bench' / 'debian_questions.jsonl').read_text().splitlines()]
    work = pathlib.Path(tempfile.mkdtemp())
    sdir = pathlib.Path(args.store) if args.store else work / 'store'
    t = time.perf_counter()
    with Store.open(sdir) as s: rep = index_paths(s, [corpus_dir()], progress=False)
    build = time.perf_counter() - t
    with Store.open(sdir) as s:                      # the lexical index alone, rebuilt and timed
        t = time.perf_counter()
        s._begin()
        s.lexical.rebuild()
        s.commit()
        lex_build = time.perf_counter() - t
    db_size = (sdir / 'chunks.sqlite').stat().st_size
    shutil.copy(sdir / 'chunks.sqlite', work / 'nolex.sqlite')
    with sqlite3.connect(work / 'nolex.sqlite') as db: db.execute('drop table lexical')
    sqlite3.connect(work / 'nolex.sqlite', isolation_level=None).execute('vacuum')
    lex_size = db_size - (work / 'nolex.sqlite').stat().st_size
    store_size = sum(f.stat().st_size for f in sdir.iterdir() if f.is_file())

    store = Store.open(sdir, readonly=True)
    rows = store.db.execute('select l.rowid, l.terms, c.text from lexical l join chunks c on c.id = l.rowid').fetchall()
    ids, terms, texts = [r[0] for r in rows], [r[1].split() for r in rows], {r[0]: r[2] for r in rows}
    for q in qs: store.embedder.embed_query(q['question'])     # the model is loaded and each query cached
    res = {}
    for mode in ('dense', 'lexical', 'hybrid'):
        ranks, lat = {'es': [], 'en': []}, []
        for q in qs:
            r = retrieve(store, q['question'], top_k=10, opts=RetrieveOpts(mode=mode))
            ranks[q['lang']].append(first_answer_rank([c.text for c in r.chunks], q['answer']))
        for _ in range(ROUNDS):                                # latency at the default top_k=5, search only
            for q in qs:
                r = retrieve(store, q['question'], top_k=5, opts=RetrieveOpts(mode=mode))
                lat.append(r.timings_ms.get('search', 0) + r.timings_ms.get('lexical', 0))
        res[f'ragnb {mode}'] = (ranks, lat)
    for name, peer in (('bm25s (same terms)', _bm25s), ('tantivy (same terms)', _tantivy)):
        try: res[name] = peer(ids, terms, texts, qs, query_terms)
        except Exception as e: print(f'{name}: not measured ({type(e).__name__}: {e})', file=sys.stderr)
    chunks = store.stats()['chunks']
    print(f"Debian Reference (es + en): {chunks} chunks; {len(qs)} questions ({len(qs) // 2} es, {len(qs) // 2} en); "
          f"answer = the command in the top-k context; model {store.manifest['model']}; {machine()}\n")
    print('| retriever | answer@5 es | answer@5 en | MRR@10 es | MRR@10 en | search p50 ms (k=5) | p95 ms |')
    print('|---|---|---|---|---|---|---|')
    for name, (ranks, lat) in res.items():
        (he, me), (hn, mn) = quality(ranks['es']), quality(ranks['en'])
        print(f'| {name} | {he:.2f} | {hn:.2f} | {me:.3f} | {mn:.3f} | {pct(lat, .5):.2f} | {pct(lat, .95):.2f} |')
    built = f'{build:.1f} s' if rep.chunks else 'reused (see a run without --store)'
    print(f'\nstore build (chunks, sentences, lexical): {built}; the lexical index alone: {lex_build:.2f} s; '
          f'store {store_size / 2**20:.1f} MB, of which the lexical index {lex_size / 2**20:.2f} MB')
    store.close()
    shutil.rmtree(work)


def _bm25s(ids, terms, texts, qs, query_terms):
    import bm25s
    t = time.perf_counter()
    vocab = {w: i for i, w in enumerate(sorted({w for d in terms for w in d}))}
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenization.Tokenized(ids=[[vocab[w] for w in d] for d in terms], vocab=vocab),
                     show_progress=False)
    ranks, lat = {'es': [], 'en': []}, []
    for rnd in range(ROUNDS):
        for q in qs:
            qt = [w for w in query_terms(q['question']) if w in vocab]
            t = time.perf_counter()
            docs, _ = retriever.retrieve(bm25s.tokenization.Tokenized(ids=[[vocab[w] for w in qt]], vocab=vocab),
                                         k=10, show_progress=False)
            lat.append((time.perf_counter() - t) * 1e3)
            if not rnd: ranks[q['lang']].append(first_answer_rank([texts[ids[i]] for i in docs[0]], q['answer']))
    return ranks, lat


def _tantivy(ids, terms, texts, qs, query_terms):
    import tantivy
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field('id', stored=True)
    sb.add_text_field('terms', stored=False, tokenizer_name='whitespace')
    index = tantivy.Index(sb.build())
    w = index.writer()
    for i, d in zip(ids, terms): w.add_document(tantivy.Document(id=i, terms=' '.join(d)))
    w.commit()
    index.reload()
    searcher = index.searcher()
    ranks, lat = {'es': [], 'en': []}, []
    for rnd in range(ROUNDS):
        for q in qs:
            t = time.perf_counter()
            query = index.parse_query(' '.join(query_terms(q['question'])), ['terms'])
            hits = searcher.search(query, 10).hits
            found = [searcher.doc(a)['id'][0] for _, a in hits]
            lat.append((time.perf_counter() - t) * 1e3)
            if not rnd: ranks[q['lang']].append(first_answer_rank([texts[i] for i in found], q['answer']))
    return ranks, lat


MODELS = ('sentence-transformers/all-MiniLM-L6-v2', 'intfloat/multilingual-e5-small')


def _maxsim_index(store):
    "Every stored sentence vector of `store` (float32) and the chunk it belongs to, sorted by chunk."
    import numpy as np
    ids = [r[0] for r in store.db.execute('select id from chunks order by id')]
    sv = store.sentence_vectors(ids)
    owners = [int(i) for i in ids if str(i) in sv for _ in range(len(sv[str(i)][1]))]
    vecs = np.concatenate([sv[str(i)][1] for i in ids if str(i) in sv]).astype(np.float32)
    return np.array(owners), vecs


def _maxsim(owners, vecs, qv, allowed=None, k=50):
    "Chunks ranked by their best sentence's cosine with `qv` (only `allowed` chunks, if given)."
    import numpy as np
    sims = vecs @ qv
    if allowed is not None: sims = np.where(np.isin(owners, allowed), sims, -2.0)
    starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
    best = np.maximum.reduceat(sims, starts)
    top = np.argsort(-best)[:k]
    return [int(owners[starts[i]]) for i in top if best[i] > -2]


def signals(store_prefix, qfile, corpus='debian'):
    "Per-language answer@5 / MRR@10 of each retriever and fusion, for MiniLM and e5, and across languages."
    import numpy as np
    from ragnb.embed import Embedder
    from ragnb.index import Store
    from ragnb.ingest import index_paths
    from ragnb.retrieve import RetrieveOpts, _dense_weight, retrieve, rrf_fuse, unread_language
    RETRIEVERS = {'dense': RetrieveOpts(mode='dense'), 'lexical': RetrieveOpts(mode='lexical'),
                  'hybrid, two rankings': RetrieveOpts(sentence_rank=False), 'hybrid': RetrieveOpts()}
    qs = [json.loads(l) for l in (ROOT / 'bench' / qfile).read_text().splitlines()]
    work = pathlib.Path(tempfile.mkdtemp())
    table = {}                                                  # (set, model, retriever) -> (ranks, ms)
    for model in MODELS:
        short = model.split('/')[-1]
        sdir = pathlib.Path(f'{store_prefix}-{short}') if store_prefix else work / short
        if not (sdir / 'manifest.json').exists():
            docs = html_corpus_dir() if corpus == 'html' else corpus_dir()
            with Store.open(sdir, embedder=Embedder.from_pretrained(model)) as s: index_paths(s, [docs], progress=False)
        store = Store.open(sdir, readonly=True)
        owners, vecs = _maxsim_index(store)
        halves = {lang: [x for x in store.chunk_sources() if f'/{lang}/' in x] for lang in ('es', 'en')}
        for q in qs: store.embedder.embed_query(q['question'])
        for q in qs:
            for crossed in (False, True)[:1 if corpus == 'html' else 2]:
                other = 'en' if q['lang'] == 'es' else 'es'
                f = {'source': halves[other]} if crossed else None
                allowed = np.array([r[0] for r in store.db.execute(
                    f"select id from chunks where source in ({','.join('?' * len(halves[other]))})",
                    halves[other])]) if crossed else None
                key = f"{q['lang']} over {other}" if crossed else q['lang']
                rank = lambda ids: first_answer_rank([c.text for c in store.get_chunks(ids[:10])], q['answer'])
                for mode, opts in RETRIEVERS.items():
                    t = time.perf_counter()
                    r = retrieve(store, q['question'], top_k=10, opts=opts, filters=f)
                    ms = (time.perf_counter() - t) * 1e3
                    table.setdefault((key, short, mode), ([], []))[0].append(
                        first_answer_rank([c.text for c in r.chunks], q['answer']))
                    table[key, short, mode][1].append(ms)
                t = time.perf_counter()
                qv = store.embedder.embed_query(q['question'])
                dense = [i for i, _ in store.search_ids(qv, 50, f)]
                lexical = [i for i, _ in store.search_lexical(q['question'], 50, f)]
                ms_rank = _maxsim(owners, vecs, qv, allowed)
                base = (time.perf_counter() - t) * 1e3
                w = _dense_weight(unread_language(store, q['question']), RetrieveOpts())
                fused = {'max-sim': {'max-sim': ms_rank},
                         'RRF dense + BM25 + max-sim': {'dense': dense, 'lexical': lexical, 'max-sim': ms_rank},
                         'RRF BM25 + max-sim': {'lexical': lexical, 'max-sim': ms_rank}}
                for name, rankings in fused.items():
                    ids = [i for i, _, _ in rrf_fuse(rankings, 60, {'dense': w, 'max-sim': w})]
                    table.setdefault((key, short, name), ([], []))[0].append(rank(ids))
                    table[key, short, name][1].append(base)
        store.close()
    shutil.rmtree(work)
    docs = 'Debian Handbook (es) + Python tutorial and library (en), HTML' if corpus == 'html' else \
        'Debian Reference (es + en)'
    print(f'{docs}; {len(qs)} questions from bench/{qfile}; answer = its string in the top chunks; '
          f'p50 ms: the whole `retrieve` call, query embedded; {machine()}\n')
    for key in dict.fromkeys(k for k, _, _ in table):
        print(f'### {key}\n')
        print('| model | retriever | answer@5 | MRR@10 | p50 ms |')
        print('|---|---|---|---|---|')
        for (k, model, name), (ranks, ms) in table.items():
            if k != key: continue
            hit, mrr = quality(ranks)
            print(f'| {model} | {name} | {hit:.2f} | {mrr:.3f} | {pct(ms, .5):.1f} |')
        print()


if __name__ == '__main__':
    sys.path.insert(0, str(ROOT))
    main()
