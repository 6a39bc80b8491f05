"""Peak RSS of `index_paths` as the corpus grows: the Debian Reference corpus copied 1x, 4x and 16x (each page's
title marked with its copy, so no two chunks are equal: `corpus.copied_corpus`), each size indexed into a new store
in a child process of its own.

Usage: python bench/bench_index_memory.py [--copies 1,4,16] [--model fake|NAME] [--repo DIR] [--sentence-pass late]

`--model fake` embeds with seeded random 384-d vectors, which measures what the pipeline holds (texts, token ids,
vectors, the store) without the model's time; a model name measures the real thing. `--repo` runs another
checkout's `ragnb` (for a before/after table); `--sentence-pass late` makes a store of late sentence vectors (one
pass per chunk, `Embedder.embed_late`; a real model only). Prints one table.
"""
import argparse, json, os, resource, shutil, subprocess, sys, tempfile, time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))


class FakeEmbedder:
    name, dim, pooling, query_instruction = 'bench/fake-384', 384, 'mean', ''

    def embed_documents(self, texts, progress=None):  # noqa: ARG002 (the interface takes it)
        v = np.random.default_rng(len(texts)).standard_normal((len(texts), self.dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def child(copies, model, sentence_pass='sentence'):
    from ragnb.index import Store
    from ragnb.ingest import index_paths
    work = Path(tempfile.mkdtemp(prefix='bench-index-memory-'))
    try:
        from corpus import copied_corpus
        corpus = copied_corpus(work / 'corpus', copies)
        emb = FakeEmbedder() if model == 'fake' else None
        if emb is None:
            from ragnb.embed import Embedder
            emb = Embedder.from_pretrained(model if model != 'default' else None)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t = time.perf_counter()
        kw = dict(sentence_pass=sentence_pass) if sentence_pass != 'sentence' else {}   # older checkouts lack it
        with Store.open(work / 'store', embedder=emb, **kw) as s:
            rep = index_paths(s, [corpus], progress=False)
            sent = s.stats()['sentence_vectors']
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(dict(copies=copies, chunks=rep.chunks, sentences=sent, seconds=time.perf_counter() - t,
                              peak_mb=peak, before_mb=base)))
    finally: shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--copies', default='1,4,16')
    ap.add_argument('--model', default='fake')
    ap.add_argument('--repo', default=str(Path(__file__).resolve().parent.parent))
    ap.add_argument('--child', type=int)
    ap.add_argument('--sentence-pass', default='sentence', choices=('sentence', 'late'))
    a = ap.parse_args()
    if a.child: return child(a.child, a.model, a.sentence_pass)
    env = dict(os.environ, PYTHONPATH=f'{a.repo}{os.pathsep}{Path(__file__).parent}')
    rows = []
    for k in map(int, a.copies.split(',')):
        p = subprocess.run([sys.executable, __file__, '--child', str(k), '--model', a.model,
                            '--sentence-pass', a.sentence_pass], env=env,
                           capture_output=True, text=True, cwd=a.repo)
        if p.returncode: sys.exit(f'{k} copies failed:\n{p.stderr[-2000:]}')
        rows.append(json.loads(p.stdout.strip().splitlines()[-1]))
    print(f'ragnb from {a.repo}; model {a.model}; sentence vectors: {a.sentence_pass}')
    print('| copies | chunks | sentences | seconds | peak RSS MB | RSS before indexing MB |')
    print('|---|---|---|---|---|---|')
    for r in rows:
        print(f"| {r['copies']} | {r['chunks']} | {r['sentences']} | {r['seconds']:.1f} | {r['peak_mb']:.0f} | "
              f"{r['before_mb']:.0f} |")


if __name__ == '__main__':
    main()
