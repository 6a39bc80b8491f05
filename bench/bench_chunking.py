"""Chunking speed and sizes: ragnb documental vs LangChain (header splitter + recursive 1500/200) vs chonkie.

Usage: python bench/bench_chunking.py [--repeat 3]
Prints one markdown table, all measured in this run on the Debian Reference corpus. Peers: pip install -e .[bench]
"""
import argparse, sys, time, pathlib
sys.path.insert(0, str(pathlib.Path(__file__).parent))
from corpus import corpus_files


def ragnb_chunks(docs):
    from ragnb.chunking import chunk_markdown
    return [c.body for name, text in docs for c in chunk_markdown(text, source=name)]


def langchain_chunks(docs):
    from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter
    heads = MarkdownHeaderTextSplitter([('#', 'h1'), ('##', 'h2'), ('###', 'h3'), ('####', 'h4')])
    rec = RecursiveCharacterTextSplitter(chunk_size=1500, chunk_overlap=200)
    return [d.page_content for name, text in docs for d in rec.split_documents(heads.split_text(text))]


def chonkie_chunks(docs):
    from chonkie import RecursiveChunker
    ch = RecursiveChunker(chunk_size=1500)
    return [c.text for name, text in docs for c in ch.chunk(text)]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--repeat', type=int, default=3)
    a = ap.parse_args()
    docs = [(str(p), p.read_text(encoding='utf-8')) for p in corpus_files()]
    mb = sum(len(t.encode()) for _, t in docs) / 1e6
    print(f'\nDebian Reference corpus: {len(docs)} files, {mb:.2f} MB; best of {a.repeat} runs\n')
    print('| chunker | MB/s | chunks | p10 chars | p50 chars | p90 chars | max chars |')
    print('|---|---|---|---|---|---|---|')
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
        print(f'| {name} | {mb / best:.1f} | {len(out)} | {pct(sizes, 10)} | {pct(sizes, 50)} | {pct(sizes, 90)} '
              f'| {max(sizes)} |')
    if 'ragnb documental' in speeds and len(speeds) > 1:
        lc = speeds.get('LangChain header+recursive(1500,200)')
        if lc: print(f'\nragnb / LangChain speed: {speeds["ragnb documental"] / lc:.2f}x')


if __name__ == '__main__':
    main()
