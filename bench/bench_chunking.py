"""Chunking speed, sizes and answers: ragnb documental vs LangChain (header splitter + recursive 1500/200) vs chonkie.

Usage: python bench/bench_chunking.py [--repeat 3] [--questions debian_questions.jsonl] [--speed-only]
Prints one markdown table, all measured in this run on the Debian Reference corpus. Peers: pip install -e .[bench]

Answers: every chunker's chunks, as its users get them (ragnb's with their title line, LangChain's without the
headings it moves to metadata), are embedded with the model `ragnb index` picks for this corpus
(multilingual-e5-small), and each question of `bench/debian_questions.jsonl` (the dev set) is asked by dense search
(cosine over those vectors) and by hybrid search (RRF, k = 60, of the dense ranking and bm25s over the same chunks,
its own tokenizer, no stemming, the same for all). answer@5: the answer string in the top 5 chunks; tokens: the
top 5 chunks' mean size (`trim.estimate_tokens`), which larger chunks make larger. Only the chunker differs.
"""
import argparse, json, pathlib, sys, time
sys.path.insert(0, str(pathlib.Path(__file__).parent))
from corpus import corpus_files

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODEL = 'intfloat/multilingual-e5-small'


def ragnb_chunks(docs, embedded=False):
    "The chunks' bodies (their sizes), or with `embedded` the texts ragnb embeds and returns (the title line too)."
    from ragnb.chunking import chunk_markdown
    return [c.text if embedded else c.body for name, text in docs for c in chunk_markdown(text, source=name)]


def langchain_chunks(docs):
    from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter
    heads = MarkdownHeaderTextSplitter([('#', 'h1'), ('##', 'h2'), ('###', 'h3'), ('####', 'h4')])
    rec = RecursiveCharacterTextSplitter(chunk_size=1500, chunk_overlap=200)
    return [d.page_content for name, text in docs for d in rec.split_documents(heads.split_text(text))]


def chonkie_chunks(docs):
    from chonkie import RecursiveChunker
    ch = RecursiveChunker(chunk_size=1500)
    return [c.text for name, text in docs for c in ch.chunk(text)]


def answers(texts, questions, emb):
    "Dense and hybrid answer@5 per language (`{mode: {lang: hits}}`) and the top 5's mean tokens, over `texts`."
    import bm25s
    import numpy as np
    from ragnb.trim import estimate_tokens
    vecs = emb.embed_documents(texts, progress=False)
    bm = bm25s.BM25()
    bm.index(bm25s.tokenize(texts, stopwords=None, show_progress=False), show_progress=False)
    hits, tokens = {'dense': {}, 'hybrid': {}}, []
    for q in questions:
        sims = vecs @ emb.embed_query(q['question'])
        dense = list(np.argsort(-sims)[:50])
        found, _ = bm.retrieve(bm25s.tokenize([q['question']], stopwords=None, show_progress=False),
                               k=min(50, len(texts)), show_progress=False)
        rrf = {}
        for ranking in (dense, list(found[0])):
            for r, i in enumerate(ranking, 1): rrf[int(i)] = rrf.get(int(i), 0) + 1 / (60 + r)
        for mode, top in (('dense', dense[:5]), ('hybrid', sorted(rrf, key=lambda i: -rrf[i])[:5])):
            got = any(q['answer'].lower() in texts[i].lower() for i in top)
            hits[mode][q['lang']] = hits[mode].get(q['lang'], 0) + got
        tokens.append(estimate_tokens([texts[i] for i in dense[:5]]))
    return hits, sum(tokens) / len(tokens)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--questions', default='debian_questions.jsonl', help='a file in bench/')
    ap.add_argument('--speed-only', action='store_true', help='no answers (no model)')
    a = ap.parse_args()
    docs = [(str(p), p.read_text(encoding='utf-8')) for p in corpus_files()]
    mb = sum(len(t.encode()) for _, t in docs) / 1e6
    qs, emb = [], None
    if not a.speed_only:
        from ragnb.embed import Embedder
        qs = [json.loads(x) for x in (ROOT / 'bench' / a.questions).read_text().splitlines() if x.strip()]
        emb = Embedder.from_pretrained(MODEL)
    langs = sorted({q['lang'] for q in qs})
    print(f'\nDebian Reference corpus: {len(docs)} files, {mb:.2f} MB; best of {a.repeat} runs'
          + (f'; {len(qs)} questions of {a.questions} ({", ".join(langs)}), {MODEL.split("/")[-1]}' if qs else '')
          + '\n')
    per = ' / '.join(langs)
    extra = f' answer@5 dense ({per}) | answer@5 hybrid ({per}) | top-5 tokens |' if qs else ''
    print('| chunker | MB/s | chunks | p10 chars | p50 chars | p90 chars | max chars |' + extra)
    print('|---|---|---|---|---|---|---|' + '---|' * (3 if qs else 0))
    speeds = {}
    for name, fn in [('ragnb documental', ragnb_chunks), ('LangChain header+recursive(1500,200)', langchain_chunks),
                     ('chonkie RecursiveChunker(1500)', chonkie_chunks)]:
        try: fn(docs[:1])                          # warm imports
        except ImportError as e:
            print(f'| {name} | not installed ({e.name}) | | | | | |')
            continue
        best, out = float('inf'), None
        for _ in range(a.repeat):
            t = time.perf_counter()
            out = fn(docs)
            best = min(best, time.perf_counter() - t)
        sizes = [len(x) for x in out]
        speeds[name] = mb / best
        cells = ''
        if qs:
            hits, tokens = answers(fn(docs, embedded=True) if fn is ragnb_chunks else out, qs, emb)
            share = {m: ' / '.join(f"{h.get(g, 0) / sum(q['lang'] == g for q in qs):.2f}" for g in langs)
                     for m, h in hits.items()}
            cells = f" {share['dense']} | {share['hybrid']} | {tokens:.0f} |"
        print(f'| {name} | {mb / best:.1f} | {len(out)} | {pct(sizes, 10)} | {pct(sizes, 50)} | {pct(sizes, 90)} '
              f'| {max(sizes)} |' + cells)
    if 'ragnb documental' in speeds and len(speeds) > 1:
        lc = speeds.get('LangChain header+recursive(1500,200)')
        if lc: print(f'\nragnb / LangChain speed: {speeds["ragnb documental"] / lc:.2f}x')


if __name__ == '__main__':
    main()
