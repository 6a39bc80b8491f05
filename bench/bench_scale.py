"""Scale-out: single-process indexing against Ray Data, and query latency as the shards grow.

Usage: python bench/bench_scale.py [--copies 1] [--workers 1,2] [--shards 1,4,16] [--fanout 1,2,4,8,16]
                                   [--fanout-n 100000] [--queries 200]

1. Indexing: the Debian Reference corpus (es + en), copied `--copies` times (each title marked), indexed
   with MiniLM into a new store by `index_paths` in one process (torch on all cores), then into 4 shards by
   `index_with_ray` with 1 and 2 embedding actors (one local Ray runtime on all cores; threads split between the
   actors). Each run is a child process; a sampler reads the RSS of its whole process tree (driver, Ray's own
   processes, the actors) every 0.2 s. Times are wall clock, start to end, model loads and Ray's start included.
2. Queries on that corpus: the single store's chunks, vectors and sentence vectors copied into 1, 4 and 16 shards;
   p50/p95 of `retrieve` (hybrid, trimmed: what `ragnb ask --trim` runs) over the Debian questions, and of dense
   `search_ids` alone.
3. Fan-out: `--fanout-n` clustered random 384-d vectors split into 1, 2, 4, 8 and 16 shards; dense `search_ids`
   p50/p95 (k=10), unfiltered and with a 1% tenant filter.
1b. The ceiling (printed after part 1): `--ceiling-chunks` chunks of the corpus embedded (chunks and sentences) by
   one process on all cores, then by one 1-thread process per core at once. Nothing else runs, so no pipeline on
   this machine can embed faster than the second figure.

Prints one table per part.
"""
import argparse, json, os, shutil, subprocess, sys, threading, time
from pathlib import Path

import numpy as np
from machine import machine  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
HERE = Path(__file__).resolve().parent


# --- memory of a process tree ------------------------------------------------------------------------------------

def _tree(pid):
    "`pid` and all its descendants."
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for t in Path(f'/proc/{p}/task').glob('*/children'):
            try: todo += [int(c) for c in t.read_text().split()]
            except OSError: pass
    return out


def _rss_and_name(pid):
    try:
        rss = next(int(l.split()[1]) / 1024 for l in Path(f'/proc/{pid}/status').read_text().splitlines()
                   if l.startswith('VmRSS:'))
        name = Path(f'/proc/{pid}/cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace')[:60]
        return rss, name
    except (OSError, StopIteration): return None, None


def run_sampled(cmd, env):
    "Run `cmd`; its last stdout line (JSON), and the peak RSS of each process of its tree, by kind."
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peaks, done = {}, threading.Event()
    def sample():
        while not done.is_set():
            for p in _tree(proc.pid):
                rss, name = _rss_and_name(p)
                if rss is not None and rss > peaks.get(p, (0, ''))[0]: peaks[p] = (rss, name)
            time.sleep(0.2)
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    out, err = proc.communicate()
    done.set()
    t.join()
    if proc.returncode: sys.exit(f'{cmd} failed:\n{err[-3000:]}')
    res = json.loads(out.strip().splitlines()[-1])
    kind = lambda n: ('driver' if p == proc.pid else 'actor' if 'MapWorker' in n or 'EmbedActor' in n
                      else 'ray worker' if n.startswith('ray::') else 'ray system')
    by = {}
    for p, (rss, name) in peaks.items():
        by.setdefault(kind(name) if p != proc.pid else 'driver', []).append(rss)
    res['rss'] = {k: (max(v), sum(v), len(v)) for k, v in by.items()}
    return res


# --- 1. indexing ---------------------------------------------------------------------------------------------



def child_index(mode, workers, corpus, store):
    t = time.perf_counter()
    if mode == 'single':
        from ragnb.stores import open_store
        from ragnb.ingest import index_paths
        with open_store(store) as s: rep = index_paths(s, [corpus], progress=False)
    else:
        from ragnb.scale import index_with_ray, ray_session
        cpus = os.cpu_count()
        ray_session(num_cpus=cpus)
        rep = index_with_ray([corpus], store, shards=4, workers=workers, threads=max(1, cpus // workers),
                             progress=False)
    print(json.dumps(dict(chunks=rep.chunks, seconds=time.perf_counter() - t)))


def child_embed(threads, part, parts, corpus, n):
    "Embed (chunks and sentences, as indexing does) every k-th chunk of `corpus`, part `part` of `parts`: seconds."
    from ragnb.chunking import chunk_text, read_text_file
    from ragnb.embed import Embedder
    from ragnb.index import chunk_sentence_spans
    from ragnb.ingest import embed_chunks
    chunks = [c for f in sorted(corpus.rglob('*.md')) for c in chunk_text(read_text_file(f), f)]
    chunks = chunks[::max(1, len(chunks) // n)][:n][part::parts]
    emb = Embedder.from_pretrained(threads=threads)
    embed_chunks(emb, chunks[:2], [chunk_sentence_spans(c) for c in chunks[:2]])             # warm up
    t = time.perf_counter()
    embed_chunks(emb, chunks, [chunk_sentence_spans(c) for c in chunks])
    print(json.dumps(dict(chunks=len(chunks), seconds=time.perf_counter() - t)))


def embedding_ceiling(corpus, n, env):
    "Chunks/s of embedding alone: one process on all cores, and one 1-thread process per core at once."
    cores = os.cpu_count()
    one = run_sampled([sys.executable, __file__, '--embed', str(cores), '0', '1', str(corpus), str(n)], env)
    procs = [subprocess.Popen([sys.executable, __file__, '--embed', '1', str(k), str(cores), str(corpus), str(n)],
                              env=env, stdout=subprocess.PIPE, text=True) for k in range(cores)]
    outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    return one['chunks'] / one['seconds'], sum(o['chunks'] / o['seconds'] for o in outs)


# --- 2. queries on the corpus -----------------------------------------------------------------------------------

def copy_into_shards(single, dst, n):
    "The chunks, vectors and sentence vectors of the store `single`, added to a new store of `n` shards."
    from ragnb.index import chunk_sentence_spans
    from ragnb.stores import open_store
    with open_store(single, readonly=True) as one:
        with one._snapshot(): ids = [r[0] for r in one.db.execute('select id from chunks order by id')]
        chunks, vecs, sent = one.get_chunks(ids), one.vectors.vectors(np.array(ids)), one.sentence_vectors(ids)
        emb = one.embedder
    sv = np.concatenate([sent[str(i)][1].astype(np.float32) for i in ids
                         if len(chunk_sentence_spans(chunks[ids.index(i)]))])
    with open_store(dst, shards=n, embedder=emb) as st:
        st.add_documents(chunks, vecs, sentence_vectors=sv)


def timed(fn, items, repeat=1):
    ts = []
    for _ in range(repeat):
        for x in items:
            t = time.perf_counter()
            fn(x)
            ts.append((time.perf_counter() - t) * 1e3)
    return np.percentile(ts, 50), np.percentile(ts, 95)


def query_latency(single, work, shard_counts, n_queries):
    from ragnb.stores import open_store
    from ragnb.retrieve import RetrieveOpts, retrieve
    qs = [json.loads(l)['question'] for f in ('debian_questions.jsonl', 'debian_questions_heldout.jsonl')
          for l in (HERE / f).read_text(encoding='utf-8').splitlines() if l.strip()][:n_queries]
    rows = []
    for n in shard_counts:
        path = single if n == 1 else work / f'shards{n}'
        if n > 1: copy_into_shards(single, path, n)
        with open_store(path, readonly=True) as st:
            qv = [st.embedder.embed_query(q) for q in qs]
            for q in qs[:10]: retrieve(st, q, opts=RetrieveOpts(trim=True))           # warm caches
            r50, r95 = timed(lambda q: retrieve(st, q, opts=RetrieveOpts(trim=True)), qs)
            d50, d95 = timed(lambda v: st.search_ids(v, 10), qv, repeat=3)
        rows.append((n, r50, r95, d50, d95))
    return rows, len(qs)


# --- 3. fan-out on random vectors -------------------------------------------------------------------------------

def fanout(shard_counts, n, n_queries, work):
    from bench_store import dataset
    from ragnb.chunking import Chunk
    from ragnb.stores import open_store
    x, tenant, queries, _ = dataset(n, n_queries)
    chunks = [Chunk(f'[Doc: s{i // 10}]\nchunk {i}', f'/s/{i // 10}.md', 'documental', '', 1, 1, 0, 9, 'v',
                    {'tenant': f't{tenant[i]}'}) for i in range(n)]
    class Named:
        name, dim, pooling, query_instruction = 'bench/random-384', 384, 'mean', ''
    rows = []
    for s in shard_counts:
        path = work / f'fan{s}'
        t = time.perf_counter()
        with open_store(path, embedder=Named(), sentence_vectors=False, shards=None if s == 1 else s) as st:
            for lo in range(0, n, 20_000): st.add_documents(chunks[lo:lo + 20_000], x[lo:lo + 20_000])
        build = time.perf_counter() - t
        with open_store(path, readonly=True, embedder=Named()) as st:
            timed(lambda v: st.search_ids(v, 10), queries[:20])
            u50, u95 = timed(lambda v: st.search_ids(v, 10), queries, repeat=3)
            f = [{'tenant': f't{i % 100}'} for i in range(len(queries))]
            timed(lambda i: st.search_ids(queries[i], 10, f[i]), range(20))
            f50, f95 = timed(lambda i: st.search_ids(queries[i], 10, f[i]), range(len(queries)), repeat=3)
        rows.append((s, build, u50, u95, f50, f95))
        shutil.rmtree(path, ignore_errors=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--copies', type=int, default=1)
    ap.add_argument('--workers', default='1,2')
    ap.add_argument('--shards', default='1,4,16')
    ap.add_argument('--fanout', default='1,2,4,8,16')
    ap.add_argument('--fanout-n', type=int, default=100_000)
    ap.add_argument('--queries', type=int, default=200)
    ap.add_argument('--skip-index', action='store_true', help='reuse the single store of a previous run')
    ap.add_argument('--ceiling-chunks', type=int, default=300, help='chunks embedded to measure the ceiling')
    ap.add_argument('--child', nargs=4, metavar=('MODE', 'WORKERS', 'CORPUS', 'STORE'))
    ap.add_argument('--embed', nargs=5, metavar=('THREADS', 'PART', 'PARTS', 'CORPUS', 'N'))
    a = ap.parse_args()
    if a.child: return child_index(a.child[0], int(a.child[1]), Path(a.child[2]), Path(a.child[3]))
    if a.embed:
        t, k, n, c, m = a.embed
        return child_embed(int(t), int(k), int(n), Path(c), int(m))
    work = HERE / 'out' / 'scale'
    env = dict(os.environ, PYTHONPATH=f'{HERE.parent}{os.pathsep}{HERE}', RAY_DEDUP_LOGS='0')
    print(f'{machine()}; corpus: Debian Reference x{a.copies}')
    if not a.skip_index:
        shutil.rmtree(work, ignore_errors=True)
        from corpus import copied_corpus
        corpus = copied_corpus(work / 'corpus', a.copies)
        runs = [('single', 1)] + [('ray', int(w)) for w in a.workers.split(',')]
        res = {}
        for mode, w in runs:
            store = work / ('single' if mode == 'single' else f'ray{w}')
            res[mode, w] = run_sampled([sys.executable, __file__, '--child', mode, str(w), str(corpus), str(store)],
                                       env)
        base = res['single', 1]
        print('\n| indexing | chunks | seconds | chunks/s | speed-up | driver peak RSS MB | per actor peak MB '
              '| Ray system processes MB (sum) |')
        print('|---|---|---|---|---|---|---|---|')
        for (mode, w), r in res.items():
            cps = r['chunks'] / r['seconds']
            actor = r['rss'].get('actor', (0, 0, 0))
            system = r['rss'].get('ray system', (0, 0, 0))[1] + r['rss'].get('ray worker', (0, 0, 0))[1]
            name = 'ragnb index (one process)' if mode == 'single' else f'--ray, {w} worker{"s" * (w > 1)}'
            print(f"| {name} | {r['chunks']} | {r['seconds']:.1f} | {cps:.1f} | "
                  f"{cps / (base['chunks'] / base['seconds']):.2f}x | {r['rss']['driver'][0]:.0f} | "
                  f"{actor[0]:.0f} ({actor[2]} actors) | {system:.0f} |")
        one, per_core = embedding_ceiling(corpus, a.ceiling_chunks, env)
        single = base['chunks'] / base['seconds']
        print(f'\n| embedding alone, {a.ceiling_chunks} chunks of the corpus | chunks/s | vs `ragnb index` |')
        print('|---|---|---|')
        print(f'| one process, {os.cpu_count()} threads | {one:.1f} | {one / single:.2f}x |')
        print(f'| {os.cpu_count()} processes at once, 1 thread each (the most `--ray` can reach here) | '
              f'{per_core:.1f} | {per_core / single:.2f}x |')
    rows, nq = query_latency(work / 'single', work, [int(s) for s in a.shards.split(',')], a.queries)
    print(f'\n| shards (Debian corpus) | retrieve p50 ms | p95 | x one store | dense search_ids p50 ms | p95 | '
          f'x one store |  ({nq} questions, hybrid + trim)')
    print('|---|---|---|---|---|---|---|')
    for n, r50, r95, d50, d95 in rows:
        print(f'| {n} | {r50:.2f} | {r95:.2f} | {r50 / rows[0][1]:.2f} | {d50:.3f} | {d95:.3f} | '
              f'{d50 / rows[0][3]:.2f} |')
    fan = fanout([int(s) for s in a.fanout.split(',')], a.fanout_n, a.queries, work)
    print(f'\n| shards ({a.fanout_n} random vectors) | build s | p50 ms | p95 | x one | 1% filter p50 ms | p95 '
          '| x one |')
    print('|---|---|---|---|---|---|---|---|')
    for s, b, u50, u95, f50, f95 in fan:
        print(f'| {s} | {b:.1f} | {u50:.3f} | {u95:.3f} | {u50 / fan[0][2]:.2f} | {f50:.3f} | {f95:.3f} | '
              f'{f50 / fan[0][4]:.2f} |')


if __name__ == '__main__':
    main()
