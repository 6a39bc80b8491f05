"""Chunking time on giant inputs: seconds per MB from 1 to 64 MB must stay flat (linear time).

Usage: python bench/bench_long_lines.py [--sizes 1 2 4 8 16 32 64]
Shapes: one line of sentences (no newline at all), one paragraph of many short lines (no blank line), and a
single line that starts with '#'. LangChain's RecursiveCharacterTextSplitter (1500/200) runs on the same text
when installed (pip install -e .[bench]).
"""
import argparse, time

from ragnb.chunking import chunk_text

SENT = 'The retrieval service keeps logs for fourteen days and rotates keys every ninety days. '
LINE = 'The service keeps logs for fourteen days and rotates\n'
SHAPES = {'one line of sentences': lambda n: SENT * (n // len(SENT)),
          'one paragraph of short lines': lambda n: LINE * (n // len(LINE)),
          "one line starting with '#'": lambda n: '# ' + 'word ' * (n // 5)}


def langchain():
    try: from langchain_text_splitters import RecursiveCharacterTextSplitter
    except ImportError: return None
    return RecursiveCharacterTextSplitter(chunk_size=1500, chunk_overlap=200).split_text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sizes', type=float, nargs='+', default=[1, 2, 4, 8, 16, 32, 64])
    a = ap.parse_args()
    peer = langchain()
    print('| shape | MB | ragnb s | ragnb s/MB | chunks | longest chunk | LangChain s/MB |')
    print('|---|---|---|---|---|---|---|')
    for name, make in SHAPES.items():
        for mb in a.sizes:
            text = make(int(mb * 2**20))
            t = time.perf_counter()
            cs = chunk_text(text, 'long.md')
            dt = time.perf_counter() - t
            lc = '-'
            if peer and mb <= 16:                     # LangChain is kept to 16 MB to bound the run
                t = time.perf_counter()
                peer(text)
                lc = f'{(time.perf_counter() - t) / mb:.3f}'
            print(f'| {name} | {mb:g} | {dt:.2f} | {dt / mb:.3f} | {len(cs)} | {max(len(c.text) for c in cs)} | {lc} |',
                  flush=True)


if __name__ == '__main__':
    main()
