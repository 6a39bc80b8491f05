"""Sentence trimming on the Debian Reference corpus: latency of the stored-vector path, the on-the-fly path and
LlamaIndex's SentenceEmbeddingOptimizer (same embedder, same top-5 chunks), token reduction by threshold and
window, and the store-size cost of sentence vectors.

Usage: python bench/bench_trim.py [--queries 60]
Queries are sentences sampled from random chunks (the corpus has no question set); every peer gets the same ones.
"""
import argparse, shutil, sys, tempfile, time, pathlib
import numpy as np
sys.path.insert(0, str(pathlib.Path(__file__).parent))
from corpus import corpus_dir


def llama_embedding(emb):
    "Our Embedder as a LlamaIndex BaseEmbedding, so both sides use the same model and weights."
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.bridge.pydantic import PrivateAttr

    class Wrapped(BaseEmbedding):
        _emb = PrivateAttr()
        def __init__(self, e, **kw):
            super().__init__(model_name=e.name, **kw)
            self._emb = e
        def _get_query_embedding(self, q): return self._emb.embed_query(q).tolist()
        async def _aget_query_embedding(self, q): return self._get_query_embedding(q)
        def _get_text_embedding(self, t): return self._emb.embed_documents([t])[0].tolist()
        def _get_text_embeddings(self, ts): return self._emb.embed_documents(ts).tolist()
    return Wrapped(emb)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--queries', type=int, default=60)
    a = ap.parse_args()
    from ragnb.embed import Embedder
    from ragnb.index import Store
    from ragnb.ingest import index_paths
    from ragnb.sentences import split_sentences
    from ragnb.trim import SCORE_TOLERANCE, as_chunk, trim_agreement, trim_chunks_by_sentence, estimate_tokens
    root = corpus_dir()
    emb = Embedder.from_pretrained()
    tmp = pathlib.Path(tempfile.mkdtemp())
    # 1. two stores, with and without sentence vectors: index time and size on disk
    plain = Store.open(tmp / 'plain', embedder=emb, sentence_vectors=False)
    rep0 = index_paths(plain, [root], progress=False)
    size0 = plain.stats()['bytes_on_disk']
    plain.close()
    store = Store.open(tmp / 'store', embedder=emb)
    rep1 = index_paths(store, [root], progress=False)
    st = store.stats()
    n_chunks, n_sent = st['chunks'], st['sentence_vectors']
    f16 = sum(f.stat().st_size for f in (tmp / 'store').glob('sentences-*.f16'))
    spans_bytes = store.db.execute('select sum(length(spans)) + 16 * count(*) from sentences').fetchone()[0]
    # 2. queries and their top-5 chunks
    rng = np.random.default_rng(0)
    rows = store.db.execute("select text from chunks where mode='documental'").fetchall()
    queries = []
    for i in rng.permutation(len(rows)):
        body = rows[i][0].split('\n', 1)[-1]
        ss = [s for s in split_sentences(body) if 30 < len(s) < 200 and not s.startswith(('|', '```', '#', '-', '*'))]
        if ss: queries.append(ss[int(rng.integers(len(ss)))])
        if len(queries) == a.queries: break
    qv = emb.embed_queries(queries)
    hits = [store.search(v, k=5) for v in qv]
    strip = lambda cs: [as_chunk(c, id=None) for c in cs]
    # 3. latency: stored vectors, on the fly, LlamaIndex; window 0 and 1 at 0.38
    from llama_index.core.postprocessor import SentenceEmbeddingOptimizer
    from llama_index.core.schema import NodeWithScore, TextNode, QueryBundle
    lemb = llama_embedding(emb)
    for v, hs in zip(qv[:3], hits[:3]): trim_chunks_by_sentence(v, strip(hs), embedder=emb)      # warm up
    lat = {k: [] for k in ('cached', 'fly', 'llama')}
    agree, llama_err = [], 0
    for v, q, hs in zip(qv, queries, hits):
        t0 = time.perf_counter()
        a1 = trim_chunks_by_sentence(v, hs, store=store)
        t1 = time.perf_counter()
        a2 = trim_chunks_by_sentence(v, strip(hs), embedder=emb)
        t2 = time.perf_counter()
        lat['cached'].append(t1 - t0)
        lat['fly'].append(t2 - t1)
        agree.append(trim_agreement(a1, a2, 0.38))
        opt = SentenceEmbeddingOptimizer(embed_model=lemb, threshold_cutoff=0.38, context_before=0, context_after=0)
        nodes = [NodeWithScore(node=TextNode(text=c.text), score=c.score) for c in hs]
        t3 = time.perf_counter()
        try: opt.postprocess_nodes(nodes, query_bundle=QueryBundle(q, embedding=v.tolist()))
        except ValueError: llama_err += 1          # "Optimizer returned zero sentences."
        lat['llama'].append(time.perf_counter() - t3)
    # 4. token reduction by threshold and window (stored path), ours and LlamaIndex's
    red = {}
    for th in (0.3, 0.38, 0.45):
        for w in (0, 1):
            ours, theirs, errs = [], [], 0
            for v, q, hs in zip(qv, queries, hits):
                before = estimate_tokens(hs)
                trimmed = trim_chunks_by_sentence(v, hs, store=store, threshold=th, window=w)
                ours.append(1 - estimate_tokens(trimmed) / before)
                nodes = [NodeWithScore(node=TextNode(text=c.text), score=c.score) for c in hs]
                opt = SentenceEmbeddingOptimizer(embed_model=lemb, threshold_cutoff=th, context_before=w,
                                                 context_after=w)
                bundle = QueryBundle(q, embedding=v.tolist())
                try: kept = [n.node.text for n in opt.postprocess_nodes(nodes, query_bundle=bundle)]
                except ValueError:
                    errs += 1
                    continue
                theirs.append(1 - estimate_tokens(kept) / before)
            red[th, w] = (np.mean(ours), np.mean(theirs) if theirs else float('nan'), errs)
    store.close()
    shutil.rmtree(tmp)
    ms = lambda xs, p: np.percentile(np.array(xs) * 1e3, p)
    print(f'\nDebian Reference corpus: {n_chunks} chunks, {n_sent} sentence vectors; model {emb.name} ({emb.dim}-d); '
          f'{len(queries)} queries, top-5 chunks each\n')
    print('| trim path (threshold 0.38, window 0) | p50 ms | p95 ms | vs stored |')
    print('|---|---|---|---|')
    base = ms(lat['cached'], 50)
    for k, name in (('cached', 'ragnb, stored sentence vectors'), ('fly', 'ragnb, on the fly (one batched embed)'),
                    ('llama', 'LlamaIndex SentenceEmbeddingOptimizer')):
        print(f'| {name} | {ms(lat[k], 50):.2f} | {ms(lat[k], 95):.2f} | {ms(lat[k], 50) / base:.0f}x |')
    tot = {k: sum(r[k] for r in agree) for k in ('sentences', 'same', 'chunks_differ', 'unexplained')}
    print(f'\nstored vs on-the-fly paths: the same keep/drop decision on {tot["same"]}/{tot["sentences"]} sentences '
          f'({tot["same"] / max(tot["sentences"], 1):.2%}); {tot["chunks_differ"]} chunks differ, '
          f'{tot["unexplained"]} not explained by a tie within {SCORE_TOLERANCE:g} of the threshold')
    print(f'LlamaIndex raised "zero sentences" on {llama_err}/{len(queries)} queries at 0.38 '
          '(ragnb keeps the best sentence)\n')
    print('| threshold | window | ragnb token reduction | LlamaIndex token reduction (queries that raised) |')
    print('|---|---|---|---|')
    for (th, w), (o, l, e) in red.items(): print(f'| {th} | {w} | {o:.1%} | {l:.1%} ({e}) |')
    print('\n| sentence vectors: store-size cost | value |')
    print('|---|---|')
    print(f'| store without / with sentence vectors | {size0 / 1e6:.1f} / {st["bytes_on_disk"] / 1e6:.1f} MB |')
    print(f'| float16 file + spans in SQLite | {f16 / 1e6:.1f} + {spans_bytes / 1e6:.2f} MB |')
    per_1000 = (st['bytes_on_disk'] - size0) / n_chunks * 1000 / 1e6
    print(f'| per 1,000 chunks (whole store difference) | {per_1000:.2f} MB |')
    print(f'| index time without / with sentence vectors | {rep0.seconds:.1f} / {rep1.seconds:.1f} s |')


if __name__ == '__main__':
    main()
