"""Index build throughput vs a bare transformers forward loop, ask latency, hnswlib recall@10, store size, peak RSS.

Usage: python bench/bench_index.py [--queries 100]
All measured in this run on the Debian Reference corpus with the default (offline) model.
"""
import argparse, resource, shutil, sys, tempfile, time, pathlib
import numpy as np
sys.path.insert(0, str(pathlib.Path(__file__).parent))
from corpus import corpus_dir


def main():
    ap = argparse.ArgumentParser(); ap.add_argument('--queries', type=int, default=100); a = ap.parse_args()
    import torch
    from ragnb.embed import Embedder
    from ragnb.index import Store
    from ragnb.ingest import index_paths
    from ragnb.chunking import chunk_file
    from ragnb.sentences import split_sentences
    root = corpus_dir()
    emb = Embedder.from_pretrained()
    texts = [c.text for f in sorted(root.glob('*/*.md')) for c in chunk_file(f)]
    emb.embed_documents(texts[:64])                                   # warm up
    # 1. a bare transformers forward loop: same texts, same batch size, same dtype, input order, mean pooling
    t = time.perf_counter()
    with torch.inference_mode(), torch.autocast('cpu', dtype=torch.bfloat16, enabled=emb.autocast):
        for i in range(0, len(texts), emb.batch_size):
            b = emb.tokenizer(texts[i:i + emb.batch_size], padding=True, truncation=True, max_length=emb.max_length, return_tensors='pt')
            h = emb.model(**b).last_hidden_state
            (h * b['attention_mask'].unsqueeze(-1)).sum(1)
    raw = len(texts) / (time.perf_counter() - t)
    # 2. index building: walk, read, chunk, embed, hnswlib, SQLite, atomic commit
    tmp = pathlib.Path(tempfile.mkdtemp())
    store = Store.open(tmp / 'store', embedder=emb)
    rep = index_paths(store, [root], progress=False)
    build = rep.chunks / rep.seconds
    # 3. ask latency with a warm model, by part
    rng = np.random.default_rng(0)
    rows = store.db.execute('select text from chunks').fetchall()
    queries = []
    for i in rng.choice(len(rows), size=a.queries, replace=False):
        ss = [s for s in split_sentences(rows[i][0].split('\n', 1)[-1]) if 30 < len(s) < 200 and not s.startswith(('|', '```'))]
        if ss: queries.append(ss[0])
    t_embed, t_search, t_fetch = [], [], []
    qvecs = []
    for q in queries:
        t0 = time.perf_counter(); v = emb.embed_queries([q])[0]; t1 = time.perf_counter()
        lab, dist = store.vectors.index.knn_query(v, k=5); t2 = time.perf_counter()
        store.get_chunks(lab[0].tolist(), (1 - dist[0]).tolist()); t3 = time.perf_counter()
        t_embed.append(t1 - t0); t_search.append(t2 - t1); t_fetch.append(t3 - t2); qvecs.append(v)
    total = np.array(t_embed) + np.array(t_search) + np.array(t_fetch)
    # 4. recall@10 of hnswlib at the default ef vs exact search over the same stored vectors
    ids = np.array([r[0] for r in store.db.execute('select id from chunks')])
    vecs = np.asarray(store.vectors.index.get_items(ids, return_type='numpy'))
    Q = np.stack(qvecs)
    exact = ids[np.argsort(-(Q @ vecs.T), axis=1)[:, :10]]
    approx, _ = store.vectors.index.knn_query(Q, k=10)
    recall = np.mean([len(set(e) & set(h)) / 10 for e, h in zip(exact, approx)])
    size = store.stats()['bytes_on_disk']; store.close(); shutil.rmtree(tmp)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ms = lambda xs, p: f'{np.percentile(np.array(xs) * 1e3, p):.2f}'
    print(f'\nDebian Reference corpus: {len(texts)} chunks; model {emb.name} ({emb.dim}-d, bf16={emb.bf16}, autocast={emb.autocast}), batch {emb.batch_size}\n')
    print('| measure | value |'); print('|---|---|')
    print(f'| bare transformers forward loop | {raw:.1f} chunks/s |')
    print(f'| ragnb index build (chunk+embed chunks and sentences+hnswlib+SQLite+commit) | {build:.1f} chunks/s ({build / raw:.0%} of raw) |')
    print(f'| ask p50 / p95 total | {ms(total, 50)} / {ms(total, 95)} ms |')
    print(f'| - query embedding p50 / p95 | {ms(t_embed, 50)} / {ms(t_embed, 95)} ms |')
    print(f'| - hnswlib search p50 / p95 | {ms(t_search, 50)} / {ms(t_search, 95)} ms |')
    print(f'| - SQLite fetch p50 / p95 | {ms(t_fetch, 50)} / {ms(t_fetch, 95)} ms |')
    print(f'| recall@10 vs exact, ef={store.manifest["ef"]} ({len(Q)} queries) | {recall:.4f} |')
    print(f'| store size on disk | {size / 1e6:.1f} MB |')
    print(f'| peak RSS | {rss:.0f} MB |')


if __name__ == '__main__':
    main()
