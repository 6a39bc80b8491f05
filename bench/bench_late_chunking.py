"""Sentence vectors from the chunk's own forward pass ("late chunking") against one pass per sentence (issue 37.1).

    python bench/bench_late_chunking.py [--model NAME] [--files N]

On the Debian Reference corpus (es + en; `--files` keeps the first N files), with one model:
1. time: chunk vectors alone, the sentence texts embedded one by one (today's second pass), and one pass over each
   chunk's tokens in windows of the model's length, pooling each sentence's tokens (late chunking);
2. how close the two kinds of sentence vectors are (cosine, per sentence);
3. what trimming keeps with each: two stores with the same chunks and chunk vectors, one per kind of sentence vector,
   asked the 56 Debian dev questions with `retrieve(trim=True)` (structured policy, the default threshold):
   answers kept among those in the untrimmed top 5, and tokens before and after.
Prints one table. Measurement only: the store does not compute late vectors yet.
"""
import argparse, json, shutil, sys, tempfile, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
sys.path.insert(0, str(ROOT))


def late_vectors(emb, texts:list[str], spans:list[list[tuple[int, int]]], prompt:str='') -> tuple:
    """Chunk vectors (mean over every token of every window) and sentence vectors (mean over each sentence's tokens)
    from one forward pass over each text's tokens, in windows of the model's length."""
    import torch
    from ragnb.embed import embedding_threads, torch_threads
    tok, width = emb.tokenizer, emb.max_length - 2
    enc = tok([prompt + t for t in texts], add_special_tokens=False, return_offsets_mapping=True, truncation=False)
    windows = [(i, lo) for i, ids in enumerate(enc['input_ids']) for lo in range(0, max(len(ids), 1), width)]
    windows.sort(key=lambda w: len(enc['input_ids'][w[0]][w[1]:w[1] + width]))
    states = [np.zeros((len(ids), emb.dim), np.float32) for ids in enc['input_ids']]
    cls, sep, pad = tok.cls_token_id, tok.sep_token_id, tok.pad_token_id or 0
    with torch_threads(embedding_threads(len(texts), emb.threads)), torch.inference_mode():
        for b in range(0, len(windows), emb.batch_size):
            part = windows[b:b + emb.batch_size]
            rows = [[cls, *enc['input_ids'][i][lo:lo + width], sep] for i, lo in part]
            n = max(map(len, rows))
            ids = torch.tensor([r + [pad] * (n - len(r)) for r in rows])
            mask = torch.tensor([[1] * len(r) + [0] * (n - len(r)) for r in rows])
            h = emb.model(input_ids=ids, attention_mask=mask).last_hidden_state.float().numpy()
            for (i, lo), r, hs in zip(part, rows, h): states[i][lo:lo + len(r) - 2] = hs[1:len(r) - 1]
    chunk, sent = np.zeros((len(texts), emb.dim), np.float32), []
    for i, (st, offs) in enumerate(zip(states, enc['offset_mapping'])):
        chunk[i] = st.mean(0) if len(st) else 0
        starts = np.array([a for a, _ in offs]) - len(prompt)
        for s, e in spans[i]:
            pick = (starts >= s) & (starts < e)
            sent.append(st[pick].mean(0) if pick.any() else chunk[i])
    unit = lambda v: v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)
    return unit(chunk), unit(np.array(sent, np.float32).reshape(-1, emb.dim))


def trim_run(store, questions):
    from ragnb.retrieve import RetrieveOpts, retrieve
    kept = asked = before = after = 0
    for q in questions:
        full = retrieve(store, q['question'], top_k=5)
        if not any(q['answer'].lower() in c.text.lower() for c in full.chunks): continue
        res = retrieve(store, q['question'], top_k=5, opts=RetrieveOpts(trim=True))
        asked += 1
        kept += any(q['answer'].lower() in c.text.lower() for c in res.chunks)
        before, after = before + res.tokens_before, after + res.tokens_in_context
    return kept, asked, before, after


def main():
    from corpus import corpus_dir
    from ragnb.chunking import chunk_file
    from ragnb.embed import Embedder
    from ragnb.index import Store
    from ragnb.sentence_file import chunk_sentence_spans, sentence_texts
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--model', default='sentence-transformers/all-MiniLM-L6-v2')
    ap.add_argument('--files', type=int, default=0)
    a = ap.parse_args()
    emb = Embedder.from_pretrained(a.model)
    files = sorted(corpus_dir().glob('*/*.md'))
    files = files[:a.files] if a.files else files
    chunks = [c for f in files for c in chunk_file(f, source=f.resolve().as_posix())]
    spans = [chunk_sentence_spans(c) for c in chunks]
    texts = [c.text for c in chunks]
    emb.embed_documents(texts[:16])                                   # warm up
    t = time.perf_counter()
    cv = emb.embed_documents(texts)
    t_chunks = time.perf_counter() - t
    t = time.perf_counter()
    sv = emb.embed_documents(sentence_texts(chunks))
    t_sent = time.perf_counter() - t
    t = time.perf_counter()
    cv_late, sv_late = late_vectors(emb, texts, spans, emb.document_prompt)
    t_late = time.perf_counter() - t
    cos = (sv * sv_late).sum(1)
    chunk_cos = (cv * cv_late).sum(1)
    qs = [json.loads(x) for x in (ROOT / 'bench' / 'debian_questions.jsonl').read_text().splitlines()]
    d = Path(tempfile.mkdtemp(prefix='bench-late-'))
    rows = {}
    try:
        for name, s_vecs in (('own pass', sv), ('late', sv_late)):
            with Store.open(d / name.replace(' ', '-'), embedder=emb) as s:
                s.add_documents(chunks, cv, sentence_vectors=s_vecs)
                rows[name] = {lang: trim_run(s, [q for q in qs if q['lang'] == lang]) for lang in ('es', 'en')}
    finally: shutil.rmtree(d, ignore_errors=True)
    n = len(chunks)
    print(f'{len(files)} files, {n} chunks, {len(sv)} sentences; model {emb.name}, max length {emb.max_length}\n')
    print('| sentence vectors | embed s (chunks + sentences) | chunks/s | vs chunks alone | es kept | en kept '
          '| tokens before → after |')
    print('|---|---|---|---|---|---|---|')
    for name, secs in (('one pass per sentence (today)', t_chunks + t_sent), ('late: the chunk\'s own pass', t_late),
                       ('none (chunk vectors alone)', t_chunks)):
        key = 'own pass' if 'today' in name else 'late' if 'late' in name else None
        cells = ['', '', '']
        if key:
            r = rows[key]
            cells = [f'{r["es"][0]}/{r["es"][1]}', f'{r["en"][0]}/{r["en"][1]}',
                     f'{r["es"][2] + r["en"][2]} → {r["es"][3] + r["en"][3]}']
        print(f'| {name} | {secs:.1f} | {n / secs:.1f} | {t_chunks / secs:.2f}x | ' + ' | '.join(cells) + ' |')
    print(f'\nlate vs own-pass sentence vectors: cosine p10/p50/p90 {np.percentile(cos, 10):.3f} / '
          f'{np.percentile(cos, 50):.3f} / {np.percentile(cos, 90):.3f}; late chunk vectors (all windows pooled) '
          f'vs today\'s (truncated at {emb.max_length} tokens): p10/p50 {np.percentile(chunk_cos, 10):.3f} / '
          f'{np.percentile(chunk_cos, 50):.3f}')


if __name__ == '__main__':
    main()
