"""Index build throughput against its ceiling (a bare forward pass over the same chunk texts) and against peers with
the same model, for MiniLM (the packaged default) and multilingual-e5-small (built offline); then, for the default
model, ask latency by part, hnswlib recall@10 and store size. One run, the Debian Reference corpus. Prints one table.

Usage: python bench/bench_index.py [--queries 100] [--models minilm,e5] [--before DIR]

Rows per model:
- `forward pass`: the model alone over ragnb's chunk texts, same batch size and dtype, in torch and in OpenVINO (the
  runtime ragnb embeds documents with where `openvino` is installed: the ceiling);
- `ragnb index`: walk, read, chunk, embed, hnswlib, SQLite, commit; with sentence vectors (the default; the same with
  the sentence pass in int8, `RAGNB_SENTENCE_PRECISION=int8`, where `nncf` is installed; and through torch,
  `RAGNB_DOCUMENT_RUNTIME=torch`), with late
  ones (pooled from each chunk's own pass, `--sentence-pass late`) and without;
- `LlamaIndex IngestionPipeline`: the same chunk texts as `TextNode`s through `IngestionPipeline([embed_model])`
  into its in-memory vector store (its embedding calls, batched by `embed_batch_size=32`);
- `chromadb`: the same chunk texts added to a persistent collection with the model as its embedding function.
Chunks/s counts ragnb's chunks for every row (the peers embed the same texts); `share` is of the
fastest forward pass. The int8 sentence graph is built before the clock starts, as the model is loaded: once per
model and machine.

`--before DIR` adds a row for another checkout's `ragnb index` with sentence vectors (its default), in a child process
that imports that checkout (e.g. `git worktree add /tmp/before ac25a57`), on the same corpus and model, and prints
each row's speed against it: the issue's "measured with the old code and the new in the same run".
"""
import argparse, json, os, resource, shutil, subprocess, sys, tempfile, time, pathlib
import numpy as np
sys.path.insert(0, str(pathlib.Path(__file__).parent))
from corpus import corpus_dir
from machine import machine
from bench_trim import llama_embedding

MODELS = dict(minilm=None, e5='intfloat/multilingual-e5-small')


def forward_pass(emb, texts):
    "Seconds for a bare transformers loop: same texts, batch size and dtype, input order, mean pooling."
    import torch
    t = time.perf_counter()
    with torch.inference_mode(), torch.autocast('cpu', dtype=torch.bfloat16, enabled=emb.autocast):
        for i in range(0, len(texts), emb.batch_size):
            b = emb.tokenizer(texts[i:i + emb.batch_size], padding=True, truncation=True, max_length=emb.max_length,
                              return_tensors='pt')
            h = emb.model(**b).last_hidden_state
            (h * b['attention_mask'].unsqueeze(-1)).sum(1)
    return time.perf_counter() - t


def openvino_pass(emb, texts):
    "Seconds for a bare loop over OpenVINO's compiled graph: same texts and batch size, input order, mean pooling."
    threads = len(os.sched_getaffinity(0))
    t = time.perf_counter()
    for i in range(0, len(texts), emb.batch_size):
        b = emb.tokenizer(texts[i:i + emb.batch_size], padding=True, truncation=True, max_length=emb.max_length,
                          return_tensors='np')
        h = emb.doc_encoder.hidden(b['input_ids'], b['attention_mask'], threads)
        (h * b['attention_mask'][..., None]).sum(1)
    return time.perf_counter() - t


def ragnb_index(emb, root, tmp, sentences, sentence_pass='sentence', tag=''):
    from ragnb.index import Store
    from ragnb.ingest import index_paths
    path = tmp / f'store-{sentences}-{sentence_pass}{tag}'
    with Store.open(path, embedder=emb, sentence_vectors=sentences, sentence_pass=sentence_pass) as s:
        rep = index_paths(s, [root], progress=False)
    return rep.seconds, path


BEFORE_CHILD = '''
import json, sys, time
from ragnb.embed import Embedder
from ragnb.index import Store
from ragnb.ingest import index_paths
model, store, root = sys.argv[1:4]
emb = Embedder.from_pretrained(model) if model != '-' else Embedder.from_pretrained()
emb.embed_documents(['warm up the model'] * 8, progress=False)
t = time.perf_counter()
with Store.open(store, embedder=emb) as s: index_paths(s, [root], progress=False)
print(json.dumps(time.perf_counter() - t))
'''


def before_index(repo, model, root, tmp):
    "Seconds of another checkout's `index_paths` (sentence vectors as it makes them), in a child importing it."
    env = dict(os.environ, PYTHONPATH=str(repo))
    out = subprocess.run([sys.executable, '-c', BEFORE_CHILD, model or '-', str(tmp / 'before'), str(root)],
                         env=env, capture_output=True, text=True, check=True, cwd=tmp)
    return json.loads(out.stdout.strip().splitlines()[-1])


def llamaindex_pipeline(emb, texts):
    from llama_index.core import VectorStoreIndex
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.schema import TextNode
    t = time.perf_counter()
    nodes = IngestionPipeline(transformations=[llama_embedding(emb)]).run(nodes=[TextNode(text=x) for x in texts])
    VectorStoreIndex(nodes, embed_model=llama_embedding(emb))        # the vectors are there: nothing re-embedded
    return time.perf_counter() - t


def chroma_collection(emb, texts, tmp):
    import chromadb
    from chromadb.api.types import Documents, EmbeddingFunction

    class Fn(EmbeddingFunction):
        def __init__(self): pass
        def __call__(self, docs: Documents): return emb.embed_documents(list(docs), progress=False)
        @staticmethod
        def name() -> str: return 'ragnb-embedder'
    t = time.perf_counter()
    col = chromadb.PersistentClient(path=str(tmp / 'chroma')).create_collection('bench', embedding_function=Fn())
    for i in range(0, len(texts), 256): col.add(ids=[str(j) for j in range(i, i + len(texts[i:i + 256]))],
                                                 documents=texts[i:i + 256])
    return time.perf_counter() - t


def ask_rows(emb, path, n_queries):
    "Ask latency by part, recall@10 of hnswlib against exact search, store size (the default model)."
    from ragnb.index import Store
    from ragnb.sentences import split_sentences
    store = Store.open(path, embedder=emb, readonly=True)
    rng = np.random.default_rng(0)
    rows = store.db.execute('select text from chunks').fetchall()
    queries = []
    for i in rng.choice(len(rows), size=n_queries, replace=False):
        ss = [s for s in split_sentences(rows[i][0].split('\n', 1)[-1])
              if 30 < len(s) < 200 and not s.startswith(('|', '```'))]
        if ss: queries.append(ss[0])
    t_embed, t_search, t_fetch, qvecs = [], [], [], []
    for q in queries:
        t0 = time.perf_counter()
        v = emb.embed_queries([q])[0]
        t1 = time.perf_counter()
        lab, dist = store.vectors.index.knn_query(v, k=5)
        t2 = time.perf_counter()
        store.get_chunks(lab[0].tolist(), (1 - dist[0]).tolist())
        t3 = time.perf_counter()
        t_embed.append(t1 - t0)
        t_search.append(t2 - t1)
        t_fetch.append(t3 - t2)
        qvecs.append(v)
    total = np.array(t_embed) + np.array(t_search) + np.array(t_fetch)
    ids = np.array([r[0] for r in store.db.execute('select id from chunks')])
    vecs = np.asarray(store.vectors.index.get_items(ids, return_type='numpy'))
    Q = np.stack(qvecs)
    exact = ids[np.argsort(-(Q @ vecs.T), axis=1)[:, :10]]
    approx, _ = store.vectors.index.knn_query(Q, k=10)
    recall = np.mean([len(set(e) & set(h)) / 10 for e, h in zip(exact, approx)])
    size, ef = store.stats()['bytes_on_disk'], store.manifest['ef']
    store.close()
    ms = lambda xs, p: f'{np.percentile(np.array(xs) * 1e3, p):.2f}'
    return [('ask p50 / p95 total', f'{ms(total, 50)} / {ms(total, 95)} ms'),
            ('- query embedding p50 / p95', f'{ms(t_embed, 50)} / {ms(t_embed, 95)} ms'),
            ('- hnswlib search p50 / p95', f'{ms(t_search, 50)} / {ms(t_search, 95)} ms'),
            ('- SQLite fetch p50 / p95', f'{ms(t_fetch, 50)} / {ms(t_fetch, 95)} ms'),
            (f'recall@10 vs exact, ef={ef} ({len(Q)} queries)', f'{recall:.4f}'),
            ('store size on disk (with sentence vectors)', f'{size / 1e6:.1f} MB')]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--queries', type=int, default=100)
    ap.add_argument('--models', default='minilm,e5')
    ap.add_argument('--before', help="another checkout of ragnb: its `ragnb index` is timed in the same run")
    a = ap.parse_args()
    label = a.before and subprocess.run(['git', '-C', a.before, 'rev-parse', '--short', 'HEAD'],
                                        capture_output=True, text=True).stdout.strip()
    from ragnb.chunking import chunk_file
    from ragnb.embed import Embedder, int8_problem
    root = corpus_dir()
    texts = [c.text for f in sorted(root.glob('*/*.md')) for c in chunk_file(f)]
    rows, extra = [], []
    for key in a.models.split(','):
        emb = Embedder.from_pretrained(MODELS[key])
        int8 = int8_problem(emb.doc_encoder and emb.doc_encoder.onnx_file) is None
        q8_emb = Embedder.from_pretrained(MODELS[key], sentence_precision='int8') if int8 else None
        torch_emb = Embedder.from_pretrained(MODELS[key], document_runtime='torch')
        for e in (emb, torch_emb): e.embed_documents(texts[:64])          # warm up
        if q8_emb: q8_emb.embed_sentences(texts[:64])                       # the int8 sentence graph, built once
        tmp = pathlib.Path(tempfile.mkdtemp())
        timed = [('forward pass, torch', forward_pass(torch_emb, texts))]
        if emb.doc_encoder is not None: timed += [('forward pass, OpenVINO (ragnb\'s runtime: the ceiling)',
                                                   openvino_pass(emb, texts))]
        ceiling = timed[-1][1]
        with_sent, path = ragnb_index(emb, root, tmp, True)
        before = a.before and before_index(a.before, MODELS[key], root, tmp)
        if before: timed += [(f'ragnb index at {label}, with sentence vectors (before)', before)]
        timed += [('ragnb index, with sentence vectors, torch', ragnb_index(torch_emb, root, tmp, True, tag='t')[0]),
                  ('ragnb index, with sentence vectors', with_sent),
                  *[('ragnb index, with sentence vectors in int8 (`RAGNB_SENTENCE_PRECISION=int8`)',
                     ragnb_index(q8_emb, root, tmp, True, tag='q')[0])] * bool(q8_emb),
                  ('ragnb index, late sentence vectors (`--sentence-pass late`)',
                   ragnb_index(emb, root, tmp, True, 'late')[0]),
                  ('ragnb index, without sentence vectors', ragnb_index(emb, root, tmp, False)[0]),
                  ('LlamaIndex IngestionPipeline', llamaindex_pipeline(emb, texts)),
                  ('chromadb collection.add', chroma_collection(emb, texts, tmp))]
        name = emb.name.split('/')[-1]
        rows += [(name, what, s, len(texts) / s, ceiling / s, before and before / s) for what, s in timed]
        if not extra: extra = [(name, what, v) for what, v in ask_rows(emb, path, a.queries)]
        shutil.rmtree(tmp)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f'\nDebian Reference corpus: {len(texts)} chunks (ragnb\'s), the same texts for every row; {machine()}\n')
    print(f'| model | what | seconds | chunks/s | share of the forward pass |{" vs before |" * bool(a.before)}')
    print(f'|---|---|---|---|---|{"---|" * bool(a.before)}')
    for name, what, s, cps, share, vs in rows:
        print(f'| {name} | {what} | {s:.1f} | {cps:.1f} | {share:.0%} |' + (f' {vs:.2f}x |' if a.before else ''))
    blank = ' |' * bool(a.before)
    for name, what, v in extra: print(f'| {name} | {what} | {v} | | |{blank}')
    print(f'| | peak RSS of this run | {rss:.0f} MB | | |{blank}')


if __name__ == '__main__':
    main()
