"""Filtered and scoped lexical search: FTS5 with a filter, ragnb's filtered search (FTS5's statistics, scored in
numpy), BM25 inside a scope (a tenant's pin: the scope's own statistics), and a store of the tenant's own.

Usage: python bench/bench_scoped.py [--size 100000] [--queries 200]

Data: synthetic chunks of 120 words drawn from a Zipf(1.1) vocabulary of 50,000 words, 10 chunks per source, 100
tenants by source; a scope keeps 1, 10 or 50 tenants (1%, 10%, 50%). Questions: three words, one frequent (rank
20-200), two less so (rank 200-20,000). Vectors are 8-d random (only lexical search is timed).
Columns: p50/p95 per question, in ms, of
- `FTS5 + filter`: FTS5's `bm25()` with `rowid in (the filter's ids)`, the path before issue 32 (20 questions);
- `filtered`: `search_lexical(q, 10, filters=scope)`: the filter's postings scored in numpy with FTS5's statistics;
- `scoped, new terms`: `search_lexical(q, 10, scope=scope)` in a fresh reader, each question's terms read for the
  first time (a server's first sight of those words in this generation);
- `scoped, warm`: the same questions again;
- `own store`: FTS5 on a store holding only the scope's chunks (built for 1% and 10%);
and `scope open`: a fresh reader's first scoped question with no known word: the scope's chunk lengths, read once
per generation;
`same as own`: questions whose scoped top 10 equals the own store's; `same as FTS5`: questions whose filtered top 10
equals FTS5's (ties aside: compared as sets of ids with their scores to 1e-6).
"""
import argparse, statistics, sys, tempfile, time
from pathlib import Path
import numpy as np

DIM, PER_SOURCE, TENANTS, WORDS = 8, 10, 100, 120


class Emb:
    name, pooling, query_instruction, dim = 'bench/precomputed', 'mean', '', DIM


def vocabulary(n=50_000, seed=0):
    rng = np.random.default_rng(seed)
    letters = np.array(list('abcdefghijklmnopqrstuvwxyz'))
    words = {''.join(rng.choice(letters, rng.integers(5, 10))) for _ in range(int(n * 1.2))}
    return sorted(words)[:n]


def corpus(n, vocab, seed=1):
    rng = np.random.default_rng(seed)
    p = 1 / np.arange(1, len(vocab) + 1) ** 1.1
    draws = rng.choice(len(vocab), size=(n, WORDS), p=p / p.sum())
    tenant = rng.integers(0, TENANTS, n // PER_SOURCE + 1).repeat(PER_SOURCE)[:n]
    return [' '.join(vocab[j] for j in row) for row in draws], tenant


def build(d, texts, tenant, rows):
    from ragnb.chunking import Chunk
    from ragnb.index import Store
    s = Store.open(d, embedder=Emb(), sentence_vectors=False)
    rng = np.random.default_rng(2)
    for lo in range(0, len(rows), 10_000):
        part = rows[lo:lo + 10_000]
        x = rng.standard_normal((len(part), DIM)).astype(np.float32)
        s.add_documents([Chunk(texts[i], f'src{i // PER_SOURCE}', 'documental', None, 1, 1, 0, 8, 'bench',
                               metadata=dict(tenant=int(tenant[i]))) for i in part],
                        x / np.linalg.norm(x, axis=1, keepdims=True), commit=False)
    s.commit()
    s.close()


def timed(f, qs):
    out, ms = [], []
    for q in qs:
        t = time.perf_counter()
        out.append(f(q))
        ms.append((time.perf_counter() - t) * 1e3)
    return out, ms


def pct(ms, p): return sorted(ms)[min(len(ms) - 1, int(p / 100 * len(ms)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--size', type=int, default=100_000)
    ap.add_argument('--queries', type=int, default=200)
    a = ap.parse_args()
    from ragnb.index import Store
    vocab = vocabulary()
    texts, tenant = corpus(a.size, vocab)
    rng = np.random.default_rng(3)
    qs = [' '.join([vocab[rng.integers(20, 200)], *(vocab[j] for j in rng.integers(200, 20_000, 2))])
          for _ in range(a.queries)]
    root = Path(tempfile.mkdtemp())
    t = time.perf_counter()
    build(root / 'all', texts, tenant, np.arange(a.size))
    print(f'built {a.size:,} chunks in {time.perf_counter() - t:.0f} s', file=sys.stderr)
    rows = []
    for share in (1, 10, 50):
        scope = {'tenant': list(range(share))}
        own = None
        if share <= 10:
            build(root / f'own{share}', texts, tenant, np.flatnonzero(tenant < share))
            with Store.open(root / f'own{share}', readonly=True) as s: own, own_ms = timed(
                lambda q: [i for i, _ in s.search_lexical(q, 10)], qs)
            with Store.open(root / f'own{share}', readonly=True) as s:   # its ids are its own: compare texts
                own = [[c.text for c in s.get_chunks(ids)] for ids in own]
        with Store.open(root / 'all', readonly=True) as s:
            def fts(q):
                from ragnb.lexical import query_terms
                with s._snapshot(): return s.lexical._hits(*s.lexical.informative(query_terms(q)), 10, scope)
            fts_got, fts_ms = timed(fts, qs[:20])
            filt_got, filt_ms = timed(lambda q: s.search_lexical(q, 10, filters=scope), qs)
            agree = sum({i: round(x, 6) for i, x in a} == {i: round(x, 6) for i, x in b}
                        for a, b in zip(fts_got, filt_got))
        with Store.open(root / 'all', readonly=True) as s:                 # a fresh reader: nothing cached
            t = time.perf_counter()
            s.search_lexical('zzzz', 10, scope=scope)                     # no such word: only the scope's lengths
            opened = (time.perf_counter() - t) * 1e3
            got, cold_ms = timed(lambda q: [i for i, _ in s.search_lexical(q, 10, scope=scope)], qs)
            _, warm_ms = timed(lambda q: s.search_lexical(q, 10, scope=scope), qs)
            same = 'n/a' if own is None else \
                f'{sum([c.text for c in s.get_chunks(ids)] == o for ids, o in zip(got, own))}/{len(qs)}'
        rows.append((f'{share}%', fts_ms, filt_ms, cold_ms, warm_ms, own_ms if own is not None else None, opened, same,
                     f'{agree}/{len(fts_got)}'))
    print(f'\nBM25 inside a scope, {a.size:,} chunks, {len(qs)} questions, k=10 (ms)\n')
    print('| scope | FTS5 + filter | filtered | scoped, new terms | scoped, warm | own store | scope open '
          '| same as own | same as FTS5 |')
    print('|---|---|---|---|---|---|---|---|---|')
    f = lambda ms: '-' if ms is None else f'{statistics.median(ms):.1f} / {pct(ms, 95):.1f}'
    for share, fts_, filt, cold, warm, own, opened, same, agree in rows:
        print(f'| {share} | {f(fts_)} | {f(filt)} | {f(cold)} | {f(warm)} | {f(own)} | {opened:.0f} | {same} '
              f'| {agree} |')
    print('\np50 / p95 in ms; scope open in ms')


if __name__ == '__main__':
    main()
