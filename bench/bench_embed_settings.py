"""Embedding settings per model, measured: max length (the model's own against 512), bf16 (autocast on every forward
against weights cast once, against fp32), and batches by a token budget against a fixed 32, idle and under a
background load (one busy-loop process per core). Texts: Debian Reference chunks and their sentences.

Usage: python bench/bench_embed_settings.py [--model NAME] [--chunks 256] [--sentences 2048]
Prints one table: texts/s for chunks and sentences, and the lowest cosine to the fp32 vectors at the same length.
"""
import argparse, multiprocessing as mp, os, sys, time
from pathlib import Path
import numpy as np
from machine import machine  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))


def spin():
    while True: pass


def corpus_texts(n_chunks, n_sentences):
    from corpus import corpus_dir
    from ragnb.chunking import chunk_file
    from ragnb.sentence_file import sentence_texts
    files = sorted(corpus_dir().glob('*/*.md'))
    chunks = [c for f in files for c in chunk_file(f)]
    rng = np.random.default_rng(0)
    picked = [chunks[i] for i in sorted(rng.choice(len(chunks), n_chunks, replace=False))]
    sents = sentence_texts(chunks)
    return [c.text for c in picked], [sents[i] for i in sorted(rng.choice(len(sents), n_sentences, replace=False))]


def timed(emb, texts):
    emb.embed_documents(texts[:16])
    t = time.perf_counter()
    v = emb.embed_documents(texts)
    return len(texts) / (time.perf_counter() - t), v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--model', default=None)
    ap.add_argument('--chunks', type=int, default=256)
    ap.add_argument('--sentences', type=int, default=2048)
    a = ap.parse_args()
    from ragnb.embed import Embedder
    chunks, sents = corpus_texts(a.chunks, a.sentences)
    base = Embedder.from_pretrained(a.model, dtype='fp32', document_runtime='torch')
    own = base.max_length
    settings = [('fp32', 512, None), ('fp32', own, None), ('bf16-autocast', own, None), ('bf16', own, None),
                ('bf16', own, 16384)]
    rows, ref = [], {}
    for load in ('idle', 'busy'):
        procs = [mp.Process(target=spin, daemon=True) for _ in range(os.cpu_count() if load == 'busy' else 0)]
        for p in procs: p.start()
        try:
            for dtype, length, budget in settings:
                emb = Embedder.from_pretrained(a.model, dtype=dtype, max_length=length, document_runtime='torch',
                                               **({'batch_tokens': budget} if budget else {}))
                if budget is None and hasattr(emb, 'batch_tokens'): emb.batch_tokens = None
                c_rate, cv = timed(emb, chunks)
                s_rate, sv = timed(emb, sents)
                key = (length, 'chunks')
                if dtype == 'fp32': ref[key], ref[(length, 'sents')] = cv, sv
                cos = min(float((cv * ref[key]).sum(1).min()), float((sv * ref[(length, 'sents')]).sum(1).min()))
                rows.append((load, dtype, length, budget or 'fixed 32', c_rate, s_rate, cos))
                print(f'  {rows[-1]}', file=sys.stderr)
        finally:
            for p in procs: p.terminate()
    print(f'model: {base.name}; its own max length: {own}; {len(chunks)} chunks, {len(sents)} sentences; '
          f'{machine()}')
    print('| load | weights | max length | batches | chunks/s | sentences/s | min cosine to fp32 |')
    print('|---|---|---|---|---|---|---|')
    for r in rows: print(f'| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.1f} | {r[5]:.0f} | {r[6]:.4f} |')


if __name__ == '__main__':
    main()
