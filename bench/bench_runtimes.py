"""The fastest runtime per model, by measurement (issue 37.2): torch bf16 (what `Embedder` ran before OpenVINO), torch
fp32,
ONNX Runtime fp32 (the graph `ragnb.model_build.export_onnx` makes for queries) and ONNX Runtime int8 (that graph
through `onnxruntime.quantization.quantize_dynamic`, int8 weights, activations quantized per call): with its default
settings, and with per-channel weight scales on the MatMul nodes only (the best of five settings tried on MiniLM:
cosine to fp32 0.993 against 0.927); and OpenVINO on the same graph, bf16 and fp32 (the runtime `Embedder`
now embeds documents with, `ragnb.embed.OpenVinoEncoder`, in bf16 where the CPU computes bf16).

    python bench/bench_runtimes.py [--models minilm,e5] [--threads 2]

For each model, every runtime embeds the same Debian Reference chunk texts (with the model's document prompt, cut at
its max length, in the same length-sorted batches of 32) and the dev and held-out questions. Reports chunks/s, the
cosine of each chunk vector to torch fp32's (p50 and minimum), and dense answer@5 over those vectors (each runtime's
questions against its own chunks; es and en; dev 56, held-out 88). Prints one table.
"""
import argparse, json, sys, tempfile, time
from pathlib import Path

import numpy as np
from machine import machine  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
sys.path.insert(0, str(ROOT))
MODELS = {'minilm': 'sentence-transformers/all-MiniLM-L6-v2', 'e5': 'intfloat/multilingual-e5-small'}


class OpenVinoSession:
    "OpenVINO's compiled graph behind ONNX Runtime's `run(None, feed)`, so `OnnxQueryEncoder` can drive it."
    def __init__(self, onnx_file, threads, precision):
        import openvino as ov
        self.model = ov.Core().compile_model(str(onnx_file), 'CPU', {
            'INFERENCE_PRECISION_HINT': precision, 'INFERENCE_NUM_THREADS': threads, 'PERFORMANCE_HINT': 'LATENCY'})
    def run(self, _, feed): return [self.model(feed)[0]]


def onnx_runtime(emb, onnx_file, threads, session=None):
    "A function texts → unit vectors on ONNX Runtime (or `session`), in `emb`'s length batches."
    from ragnb.embed import OnnxQueryEncoder, _length_batches, model_location, resolve_model
    folder = resolve_model(model_location(emb.name))[0]
    enc = OnnxQueryEncoder(folder, emb.tokenizer, pooling=emb.pooling, max_length=emb.max_length, threads=threads,
                           onnx_file=onnx_file)
    if session is not None: enc._sessions[threads] = session      # the session `enc.session` opens for `threads`

    def run(texts):
        ids = emb.tokenizer(texts, truncation=True, max_length=emb.max_length)['input_ids']
        out = np.zeros((len(texts), emb.dim), np.float32)
        for idx in _length_batches(ids, emb.batch_size, emb.batch_tokens)[0]:
            out[idx] = enc([texts[i] for i in idx])
        return out
    return run


def quantized(src:Path, **kw) -> Path:
    "`src` through `quantize_dynamic` with int8 weights (and `kw`), in a temporary folder."
    from onnxruntime.quantization import QuantType, quantize_dynamic
    dest = Path(tempfile.mkdtemp(prefix='bench-int8-')) / 'model.int8.onnx'
    quantize_dynamic(str(src), str(dest), weight_type=QuantType.QInt8, **kw)
    return dest


def answer_at5(chunk_vecs, texts, qvecs, qs):
    out = {}
    for q, v in zip(qs, qvecs):
        top = np.argsort(-(chunk_vecs @ v))[:5]
        r = out.setdefault(q['lang'], [0, 0])
        r[0] += any(q['answer'].lower() in texts[i].lower() for i in top)
        r[1] += 1
    return out


def main():
    from corpus import corpus_dir
    from ragnb.chunking import chunk_file
    from ragnb.embed import Embedder, export_query_onnx, model_location, resolve_model
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--models', default='minilm,e5')
    ap.add_argument('--threads', type=int, default=2)
    a = ap.parse_args()
    files = sorted(corpus_dir().glob('*/*.md'))
    chunks = [c for f in files for c in chunk_file(f, source=f.resolve().as_posix())]
    texts = [c.text for c in chunks]
    load = lambda n: [json.loads(x) for x in (ROOT / 'bench' / n).read_text().splitlines() if x.strip()]
    sets = {'dev': load('debian_questions.jsonl'), 'held-out': load('debian_questions_heldout.jsonl')}
    rows = []
    for key in a.models.split(','):
        name = MODELS[key]
        bf16 = Embedder.from_pretrained(name, threads=a.threads, query_runtime='torch', document_runtime='torch')
        fp32 = Embedder.from_pretrained(name, threads=a.threads, dtype='fp32', query_runtime='torch',
                                        document_runtime='torch')
        graph = export_query_onnx(resolve_model(model_location(name))[0])
        runtimes = {'torch fp32': lambda t, e=fp32: e._embed(t), 'torch bf16': lambda t, e=bf16: e._embed(t),
                    'ONNX Runtime fp32': onnx_runtime(bf16, graph, a.threads),
                    'ONNX Runtime int8 (dynamic)': onnx_runtime(bf16, quantized(graph), a.threads),
                    'ONNX Runtime int8 (dynamic, per channel, MatMul only)': onnx_runtime(
                        bf16, quantized(graph, per_channel=True, op_types_to_quantize=['MatMul']), a.threads)}
        try:
            for precision in ('bf16', 'f32'):
                runtimes[f'OpenVINO {precision}'] = onnx_runtime(bf16, graph, a.threads,
                                                                 OpenVinoSession(graph, a.threads, precision))
        except ImportError: print('OpenVINO: not installed (pip install openvino), not measured', file=sys.stderr)
        ref = None
        for label, run in runtimes.items():
            run([bf16.document_prompt + t for t in texts[:32]])            # warm up
            t0 = time.perf_counter()
            vecs = run([bf16.document_prompt + t for t in texts])
            secs = time.perf_counter() - t0
            if ref is None: ref = vecs
            cos = (vecs * ref).sum(1)
            quality = {}
            for s, qs in sets.items():
                qv = run([bf16.query_instruction + q['question'] for q in qs])
                quality[s] = answer_at5(vecs, texts, qv, qs)
            rows.append((key, label, len(texts) / secs, np.percentile(cos, 50), cos.min(), quality))
            print(f'{key} {label}: {len(texts) / secs:.1f} chunks/s', file=sys.stderr)
    print(f'Debian Reference, {len(texts)} chunks; {a.threads} threads; {machine()}; dense answer@5 '
          '(es / en), each runtime\'s questions against its own chunk vectors\n')
    print('| model | runtime | chunks/s | vs bf16 | cosine to fp32 p50 / min | dev es / en | held-out es / en |')
    print('|---|---|---|---|---|---|---|')
    base = {x[0]: x[2] for x in rows if x[1].startswith('torch bf16')}
    for key, label, cps, p50, lo, q in rows:
        cell = lambda s: ' / '.join(f"{q[s][l][0]}/{q[s][l][1]}" for l in ('es', 'en'))
        print(f'| {key} | {label} | {cps:.1f} | {cps / base[key]:.2f}x | {p50:.4f} / {lo:.4f} | {cell("dev")} '
              f'| {cell("held-out")} |')


if __name__ == '__main__':
    main()
