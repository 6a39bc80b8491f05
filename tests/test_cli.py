"""The `ragnb` console command as a user runs it: through `main` in this process (the same parsing, output and exit
codes, without a fresh interpreter and model load per call), and as a real subprocess where the process is the
point (standard input, a cold start, the environment at import)."""
import json, os, re, shlex, subprocess, sys

import pytest

from faults import HashEmbedder
from inprocess import ragnb_main as ragnb
from ragnb.cli import main
from ragnb.index import Store
from ragnb.retrieve import RRF_K
from ragnb import ingest


def ragnb_process(*args, input=None):
    return subprocess.run([sys.executable, '-m', 'ragnb.cli', *args], input=input, capture_output=True)


def test_sentences_stdin_plain_and_json():
    doc = '## Despliegue\nEl Sr. Pérez instaló la v1.2.3. ¿Funciona?\n\n| a | b |\n'.encode()
    r = ragnb_process('sentences', '-', input=doc)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines() == ['## Despliegue', 'El Sr. Pérez instaló la v1.2.3.', '¿Funciona?',
                                              '| a | b |']
    r = ragnb_process('sentences', '--json', '-', input=doc)
    rows = [json.loads(l) for l in r.stdout.decode().splitlines()]
    text = doc.decode()
    assert [text[x['start']:x['end']] for x in rows] == [x['text'] for x in rows]


def test_sentences_bad_input(tmp_path):
    (tmp_path / 'sjis.md').write_bytes('ファイルです。'.encode('shift_jis'))
    r = ragnb('sentences', str(tmp_path / 'sjis.md'))
    assert r.returncode == 2 and b'not valid UTF-8' in r.stderr and b'sjis.md' in r.stderr
    r = ragnb('sentences', str(tmp_path / 'missing.md'))
    assert r.returncode == 2 and b'no such file' in r.stderr
    r = ragnb_process('sentences', '-', input=b'')
    assert r.returncode == 0 and r.stdout == b''


def test_index_then_ask_with_filters(tmp_path):
    docs = tmp_path / 'docs'
    (docs / 'a').mkdir(parents=True)
    (docs / 'a' / 'logs.md').write_text('# Logs\n\nApplication logs are kept for 14 days in Loki.', encoding='utf-8')
    (docs / 'a' / 'keys.md').write_text('# Keys\n\nRotate API keys every 90 days.', encoding='utf-8')
    store = tmp_path / 'store'
    r = ragnb('index', str(docs), '--store', str(store), '--meta', 'tenant=t1', '--quiet')
    assert r.returncode == 0, r.stderr
    assert b'added 2' in r.stdout
    r = ragnb('index', str(docs), '--store', str(store), '--meta', 'tenant=t1', '--quiet')
    assert b'added 0, updated 0, removed 0, unchanged 2' in r.stdout
    r = ragnb('ask', 'How long are logs kept?', '--store', str(store), '-k', '1', '--json')
    out = json.loads(r.stdout)
    assert out['chunks'][0]['display_path'] == 'docs/a/logs.md' and out['chunks'][0]['start_line'] == 1
    assert out['tokens_in_context'] > 0
    r = ragnb('ask', 'How long are logs kept?', '--store', str(store), '--filter', 'tenant=t2', '--json')
    assert json.loads(r.stdout)['chunks'] == []
    for filters, found in [(['tenant!=t1'], []),
                           (['tenant!=t2', 'source^=docs/a/'], ['docs/a/keys.md', 'docs/a/logs.md'])]:
        r = ragnb('ask', 'How long are logs kept?', '--store', str(store), *[f'--filter={f}' for f in filters],
                  '--json')
        assert sorted(c['display_path'] for c in json.loads(r.stdout)['chunks']) == found, r.stderr
    r = ragnb('ask', 'logs', '--store', str(tmp_path / 'nothing'))
    assert r.returncode == 2 and b'no store here' in r.stderr


def test_ask_trim_prints_the_saving(tmp_path):
    (tmp_path / 'logs.md').write_text('# Logs\n\nApplication logs are kept for 14 days in Loki. '
                                      'Our office has a blue door. The canteen serves paella on Thursdays. '
                                      'Lunch is at two.', encoding='utf-8')
    store = tmp_path / 'store'
    assert ragnb('index', str(tmp_path / 'logs.md'), '--store', str(store), '--quiet').returncode == 0
    r = ragnb('ask', 'How long are application logs kept?', '--store', str(store), '-k', '1', '--policy', 'fixed')
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr
    assert 'Application logs are kept for 14 days in Loki. [...]' in out and 'paella' not in out
    before, after, pct = re.search(r'Tokens: (\d+) → (\d+) \((-\d+)%\)', out).groups()
    assert int(after) < int(before) and int(pct) == round(100 * (int(after) - int(before)) / int(before))
    assert "· fixed, threshold 0.38 (auto: the model's default), window 0 ·" in out
    r = ragnb('ask', 'How long are application logs kept?', '--store', str(store), '-k', '1', '--json')
    assert 'paella' in json.loads(r.stdout)['chunks'][0]['text']                  # off by default
    r = ragnb('ask', 'logs', '--store', str(store), '--threshold', '3')
    assert r.returncode == 2 and b'between -1 and 1' in r.stderr


def test_ask_trim_json_has_kept_spans(tmp_path):
    (tmp_path / 'a.md').write_text('# A\n\nLogs are kept for 14 days. The canteen serves paella. Keys rotate yearly.',
                                   encoding='utf-8')
    store = tmp_path / 'store'
    assert ragnb('index', str(tmp_path / 'a.md'), '--store', str(store), '--quiet').returncode == 0
    out = json.loads(ragnb('ask', 'How long are logs kept?', '--store', str(store), '-k', '1', '--policy', 'fixed',
                           '--json').stdout)
    c = out['chunks'][0]
    assert c['tokens_after'] < c['tokens_before'] and out['info']['trim']['threshold'] == 0.38
    assert 'Logs are kept for 14 days.' in c['text'] and 'paella' not in c['text'] and len(c['kept_spans']) >= 1


def test_ask_structured_and_budget(tmp_path):
    (tmp_path / 'a.md').write_text('# Logs\n\nKeep this in mind:\n\n| log | kept |\n|---|---|\n| audit | 2 years |\n'
                                   '| application | 14 days |\n\nThe canteen serves paella on Thursdays. '
                                   'Lunch is at two. The office has a blue door. Bikes go in the basement.\n',
                                   encoding='utf-8')
    store = tmp_path / 'store'
    assert ragnb('index', str(tmp_path / 'a.md'), '--store', str(store), '--quiet').returncode == 0
    out = json.loads(ragnb('ask', 'How long are application logs kept?', '--store', str(store), '-k', '1', '--trim',
                           '--json').stdout)
    text, trim = out['chunks'][0]['text'], out['info']['trim']
    assert trim['policy'] == 'structured' and trim['budget'] is None
    assert '| application | 14 days |' in text and '| log | kept |\n|---|---|' in text     # the row brings its header
    assert 'Bikes' not in text and out['tokens_in_context'] < out['tokens_before']
    r = ragnb('ask', 'How long are application logs kept?', '--store', str(store), '-k', '1', '--budget', '25')
    assert r.returncode == 0, r.stderr
    assert '14 days' in r.stdout.decode() and '· budget 25 tokens ·' in r.stdout.decode()
    assert int(re.search(r'Tokens: \d+ → (\d+)', r.stdout.decode()).group(1)) <= 25
    assert ragnb('ask', 'logs', '--store', str(store), '--budget', '0').returncode == 2
    assert ragnb('ask', 'logs', '--store', str(store), '--policy', 'smart').returncode == 2


def test_index_reports_binaries_once_and_lists_them_only_when_verbose(tmp_path):
    docs = tmp_path / 'docs'
    docs.mkdir()
    (docs / 'a.md').write_text('# A\n\nLogs are kept for 14 days.', encoding='utf-8')
    for i in range(3): (docs / f'img{i}.png').write_bytes(b'\x89PNG\r\n\x1a\n' + bytes(50))
    (docs / 'blob.dat2').write_bytes(b'\x00\x01binary')
    (docs / 'sjis.md').write_bytes('ファイルです。'.encode('shift_jis'))
    (docs / 'latin1.md').write_bytes('Canción.'.encode('latin-1'))
    r = ragnb('index', str(docs), '--store', str(tmp_path / 's'), '--quiet')
    out, err = r.stdout.decode(), r.stderr.decode()
    assert r.returncode == 0
    assert 'skipped 4 files with no text to index: images 3, other 1 (list them with --verbose)' in out
    assert 'img0.png' not in out + err and err.count('sjis.md') == 1        # each unreadable file once
    assert 'read 1 files as Windows-1252 where they are not UTF-8' in out and 'latin1.md' not in err
    r = ragnb('index', str(docs), '--store', str(tmp_path / 's'), '--quiet', '--verbose')
    assert all(f'img{i}.png' in r.stderr.decode() for i in range(3))


def test_missing_path_bogus_model_empty_store_and_passages_are_one_line_errors(tmp_path):
    r = ragnb('index', str(tmp_path / 'nope'), '--store', str(tmp_path / 's'))
    assert r.returncode == 2 and str(tmp_path / 'nope') in r.stderr.decode() and not (tmp_path / 's').exists()
    (tmp_path / 'a.md').write_text('# A\n\nText.', encoding='utf-8')
    r = ragnb('index', str(tmp_path / 'a.md'), '--store', str(tmp_path / 's'), '--model', str(tmp_path / 'no-model'))
    assert r.returncode == 2 and "cannot load the model" in r.stderr.decode() and 'Traceback' not in r.stderr.decode()
    (tmp_path / 'empty').mkdir()
    r = ragnb('index', str(tmp_path / 'empty'), '--store', str(tmp_path / 'e'), '--quiet')
    assert r.returncode == 1 and 'nothing could be indexed from' in r.stderr.decode(), r.stderr
    assert 'was not kept' in r.stderr.decode() and not (tmp_path / 'e').exists()     # no empty store left behind
    assert ragnb('index', str(tmp_path / 'a.md'), '--store', str(tmp_path / 'e'), '--quiet').returncode == 0
    assert ragnb('remove', str(tmp_path / 'a.md'), '--store', str(tmp_path / 'e')).returncode == 0
    r = ragnb('ask', 'anything?', '--store', str(tmp_path / 'e'))
    assert r.returncode == 2 and 'the store is empty' in r.stderr.decode()
    r = ragnb('index', str(tmp_path / 'empty'), '--store', str(tmp_path / 'e'), '--quiet')
    assert r.returncode == 1 and (tmp_path / 'e' / 'manifest.json').exists()         # a store it did not make stays
    assert ragnb('index', str(tmp_path / 'a.md'), '--store', str(tmp_path / 'e'), '--quiet').returncode == 0
    r = ragnb('ask', 'anything?', '--store', str(tmp_path / 'e'), '--hyde-passages', '0')
    assert r.returncode == 2 and '--hyde-passages must be from 1 to 8' in r.stderr.decode()


def test_check_reports_a_sound_store_and_a_tampered_one(tmp_path):
    import sqlite3
    (tmp_path / 'a.md').write_text('# A\n\nLogs are kept for 14 days. Keys rotate yearly.', encoding='utf-8')
    store = tmp_path / 's'
    assert ragnb('index', str(tmp_path / 'a.md'), '--store', str(store), '--quiet').returncode == 0
    r = ragnb('check', '--store', str(store))
    assert r.returncode == 0 and 'the store is sound' in r.stdout.decode(), r.stdout
    assert '| filter index | built |' in r.stdout.decode()
    db = sqlite3.connect(store / 'chunks.sqlite')                  # as a store of an older ragnb has it
    db.execute("update meta set value = 'chunk-meta-v1' where key = 'filter_index'")
    db.commit()
    r = ragnb('check', '--store', str(store))
    assert r.returncode == 0 and "filters read each chunk's metadata" in r.stdout.decode(), r.stdout
    assert ragnb('index', str(tmp_path / 'a.md'), '--store', str(store), '--quiet').returncode == 0
    assert '| filter index | built |' in ragnb('check', '--store', str(store)).stdout.decode()
    db.execute("update chunks set text = replace(text, '14', '41')")
    db.commit()
    db.close()
    r = ragnb('check', '--store', str(store))
    assert r.returncode == 1 and 'do not match their hash' in r.stdout.decode(), r.stdout
    r = ragnb('ask', 'How long are logs kept?', '--store', str(store))
    assert r.returncode == 2 and 'does not match its hash' in r.stderr.decode()       # never served as-is


def test_same_named_folders_are_separate_sources(tmp_path):
    "Issue 19.1: `col/A/docs` and `col/B/docs` both hold readme.md; the second run must add, not overwrite."
    for t in 'AB':
        (tmp_path / 'col' / t / 'docs').mkdir(parents=True)
        (tmp_path / 'col' / t / 'docs' / 'readme.md').write_text(f'# Team {t}\n\nTeam {t} deploys on Tuesdays.',
                                                                 encoding='utf-8')
    store = str(tmp_path / 'S')
    r = ragnb('index', str(tmp_path / 'col/A/docs'), '--store', store, '--meta', 'tenant=a', '--quiet')
    assert r.returncode == 0 and b'added 1' in r.stdout, r.stderr
    r = ragnb('index', str(tmp_path / 'col/B/docs'), '--store', store, '--meta', 'tenant=b', '--quiet')
    assert b'added 1, updated 0, removed 0' in r.stdout and b'store has 2 chunks' in r.stdout, r.stdout
    for t in 'ab':
        out = json.loads(ragnb('ask', 'When do teams deploy?', '--store', store, '--filter', f'tenant={t}',
                               '--json').stdout)
        assert [c['display_path'] for c in out['chunks']] == ['docs/readme.md']
        assert out['chunks'][0]['source'].endswith(f'/col/{t.upper()}/docs/readme.md')
    r = ragnb('index', str(tmp_path / 'col/A/docs'), '--store', store, '--meta', 'tenant=a', '--quiet')
    assert b'unchanged 1' in r.stdout and b'store has 2 chunks' in r.stdout     # re-indexing A leaves B alone


def test_a_store_with_relative_source_keys_is_refused_on_index(tmp_path):
    import sqlite3
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'docs' / 'a.md').write_text('# A\n\nSome text.', encoding='utf-8')
    store = tmp_path / 'S'
    assert ragnb('index', str(tmp_path / 'docs'), '--store', str(store), '--quiet').returncode == 0
    with sqlite3.connect(store / 'chunks.sqlite') as db: db.execute("update sources set source='docs/a.md'")
    r = ragnb('index', str(tmp_path / 'docs'), '--store', str(store), '--quiet')
    assert r.returncode == 2 and b'keyed files by relative path' in r.stderr
    assert b're-index into a new store' in r.stderr
    assert ragnb('ask', 'text?', '--store', str(store), '--json').returncode == 0     # reading it still works


def test_cold_ask_reports_the_model_load_apart_and_hides_the_weights_bar(tmp_path):
    "Issue 19.11: the load is its own figure, not inside 'embed'; the loading bar only with --verbose."
    (tmp_path / 'a.md').write_text('# A\n\nLogs are kept for 14 days.', encoding='utf-8')
    store = str(tmp_path / 'store')
    assert ragnb('index', str(tmp_path / 'a.md'), '--store', store, '--quiet').returncode == 0
    r = ragnb_process('ask', 'How long are logs kept?', '--store', store, '-k', '1')
    load, embed = map(int, re.search(r'load (\d+) ms, embed (\d+) ms', r.stdout.decode()).groups())
    assert load > embed and b'Loading weights' not in r.stderr
    out = json.loads(ragnb_process('ask', 'logs?', '--store', store, '--json', '--threads', '1').stdout)
    assert out['timings_ms']['load'] > out['timings_ms']['embed']
    torch_path = dict(os.environ, RAGNB_QUERY_RUNTIME='torch')           # the ONNX path loads no weights at all
    r = subprocess.run([sys.executable, '-m', 'ragnb.cli', 'ask', 'logs?', '--store', store, '--verbose'],
                       capture_output=True, env=torch_path)
    assert b'Loading weights' in r.stderr
    r = ragnb_process('ask', 'logs?', '--store', store, '--threads', '0')
    assert r.returncode == 2 and b'--threads' in r.stderr and b'whole number >= 1' in r.stderr


def test_ask_modes_and_check_show_the_lexical_index(tmp_path):
    (tmp_path / 'a.md').write_text('# Deploy\n\nRoll back with `faroctl rollback --env prod`.', encoding='utf-8')
    (tmp_path / 'b.md').write_text('# Logs\n\nApplication logs are kept for 14 days.', encoding='utf-8')
    store = str(tmp_path / 'store')
    assert ragnb('index', str(tmp_path / 'a.md'), str(tmp_path / 'b.md'), '--store', store, '--quiet').returncode == 0
    out = json.loads(ragnb('ask', 'faroctl', '--store', store, '--mode', 'lexical', '--json').stdout)
    assert [c['display_path'] for c in out['chunks']] == [str(tmp_path / 'a.md')]     # only the chunk with the word
    assert out['info']['ranks'][0]['lexical_rank'] == 1 and out['info']['ranks'][0]['dense_rank'] is None
    out = json.loads(ragnb('ask', 'faroctl', '--store', store, '--json').stdout)       # hybrid by default
    assert len(out['chunks']) == 2 and out['info']['fusion']['k'] == RRF_K
    assert out['chunks'][0]['display_path'].endswith('a.md')
    r = ragnb('ask', 'faroctl', '--store', store, '--mode', 'bm25')
    assert r.returncode == 2 and b'invalid choice' in r.stderr
    r = ragnb('check', '--store', store)
    assert r.returncode == 0 and b'| lexical index rows | 2 |' in r.stdout


class StopsAtCall(HashEmbedder):
    "A model-free embedder that is interrupted (Ctrl-C) at its `n`-th call to embed documents."
    def __init__(self, n): super().__init__(), setattr(self, 'calls', 0), setattr(self, 'n', n)
    def embed_documents(self, texts, progress=None):
        self.calls += 1
        if self.calls == self.n: raise KeyboardInterrupt
        return super().embed_documents(texts, progress)


@pytest.fixture
def hash_model(monkeypatch):
    "In-process CLI runs with the model-free embedder, for new stores and for stores that load their model."
    monkeypatch.setattr('ragnb.index._default_embedder', HashEmbedder)
    monkeypatch.setattr('ragnb.embed.Embedder.for_queries', classmethod(lambda *_, **__: HashEmbedder()))
    monkeypatch.setattr('ragnb.ingest.new_store_model', lambda _: (None, 'the test model'))   # no corpus choice


def bundled_copy(tmp_path):
    import shutil
    shutil.copytree(ingest.bundled_data_dir() / 'docs', tmp_path / 'docs')
    return tmp_path / 'docs'


def test_ctrl_c_keeps_the_whole_files_embedded_and_the_next_run_does_the_rest(tmp_path, monkeypatch):
    "Issue 31.7: Ctrl-C while indexing commits the files already embedded; re-running finishes the job."
    docs = bundled_copy(tmp_path)
    monkeypatch.setattr(ingest, 'INDEX_BATCH', 8)              # several batches from 20 small files
    with Store.open(tmp_path / 'clean', embedder=HashEmbedder()) as s: clean = ingest.index_paths(s, [docs])
    with Store.open(tmp_path / 'st', embedder=StopsAtCall(5)) as s:       # 2 calls a batch: chunks, sentences
        first = ingest.index_paths(s, [docs])
        kept = s.sources()
        assert first.interrupted and 0 < len(first.added) == len(kept) < len(clean.added)
        assert first.chunks == s.stats()['chunks'] == sum(r.n_chunks for r in kept.values())
        assert s.verify()['problems'] == []
    with Store.open(tmp_path / 'st', embedder=HashEmbedder()) as s:
        rest = ingest.index_paths(s, [docs])
        assert not rest.interrupted and sorted(first.added + rest.added) == sorted(clean.added)
        assert sorted(rest.unchanged) == sorted(first.added)
        assert s.stats()['chunks'] == clean.chunks and s.verify()['problems'] == []


@pytest.mark.usefixtures('hash_model')
def test_ctrl_c_is_one_line_and_exit_130(tmp_path, monkeypatch, capsys):
    (tmp_path / 'a.md').write_text('# A\n\nText.', encoding='utf-8')
    def interrupted(*_, **__): raise KeyboardInterrupt
    monkeypatch.setattr(ingest, 'index_paths', interrupted)
    assert main(['index', str(tmp_path / 'a.md'), '--store', str(tmp_path / 's'), '--quiet']) == 130
    assert capsys.readouterr().err == 'ragnb index: interrupted; nothing more was written\n'


@pytest.mark.usefixtures('hash_model')
def test_a_folder_with_nothing_readable_exits_1_and_says_why(tmp_path, capsys):
    "Issue 31.8: binaries and unreadable files only: exit 1, one line that counts them; one good file: exit 0."
    docs = tmp_path / 'docs'
    docs.mkdir()
    (docs / 'logo.png').write_bytes(b'\x89PNG\r\n\x1a\n' + bytes(64))
    (docs / 'sjis.md').write_bytes('ファイルです。'.encode('shift_jis'))
    assert main(['index', str(docs), '--store', str(tmp_path / 's'), '--quiet']) == 1
    err = capsys.readouterr().err
    assert (f'nothing could be indexed from {docs}: no readable file of a kind ragnb reads (text and code, HTML, PDF, '
            'office files, e-books, e-mail, notebooks, archives of them) (1 unreadable') in err
    assert '1 binary' in err and 'sjis.md' in err
    (docs / 'ok.md').write_text('# Ok\n\nReadable.', encoding='utf-8')
    assert main(['index', str(docs), '--store', str(tmp_path / 's'), '--quiet']) == 0
    assert main(['index', str(docs), '--store', str(tmp_path / 's'), '--quiet']) == 0    # all unchanged: fine


@pytest.mark.usefixtures('hash_model')
def test_ask_names_a_chunk_without_a_heading_by_its_page_title(tmp_path, capsys):
    "A docs-as-code page with front matter and no heading: `ask` shows its title, not `[]`; a Word owner file is quiet."
    docs = tmp_path / 'docs'
    docs.mkdir()
    (docs / 'copias.md').write_text('---\ntitle: Copias de seguridad\nsidebar_position: 2\n---\n\nLas copias se '
                                    'hacen cada noche.\n', encoding='utf-8')
    (docs / '~$informe.docx').write_bytes(b'\x05Ana  ' + bytes(150))
    assert main(['index', str(docs), '--store', str(tmp_path / 's'), '--quiet']) == 0
    out, err = capsys.readouterr()
    assert 'backups and temporary files 1' in out and '~$informe.docx' not in err
    assert main(['ask', 'copias', '--store', str(tmp_path / 's')]) == 0
    out = capsys.readouterr().out
    assert 'docs/copias.md:6-6  [Copias de seguridad]' in out and 'sidebar_position' not in out


def test_an_unknown_model_fails_at_once_without_retries(tmp_path):
    "Issue 31.6: a hub name that cannot be downloaded is one line, before transformers tries (and retries)."
    (tmp_path / 'a.md').write_text('# A\n\nText.', encoding='utf-8')
    closed = dict(os.environ, HF_ENDPOINT='http://127.0.0.1:9')          # nothing listens: refused at once
    r = subprocess.run([sys.executable, '-m', 'ragnb.cli', 'index', str(tmp_path / 'a.md'), '--store',
                        str(tmp_path / 's'), '--model', 'no-such-org/no-such-model'], capture_output=True, env=closed)
    err = r.stderr.decode()
    assert r.returncode == 2 and 'the Hugging Face hub cannot be reached' in err and 'Retry' not in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / 's' / 'manifest.json').exists()


@pytest.mark.usefixtures('hash_model')
def test_a_model_that_does_not_match_the_store_is_refused_before_loading(tmp_path, monkeypatch, capsys):
    (tmp_path / 'a.md').write_text('# A\n\nText.', encoding='utf-8')
    assert main(['index', str(tmp_path / 'a.md'), '--store', str(tmp_path / 's'), '--quiet']) == 0
    def no_loading(*_, **__): raise AssertionError('a model was loaded')
    monkeypatch.setattr('ragnb.embed.Embedder.from_pretrained', no_loading)
    assert main(['ask', 'x', '--store', str(tmp_path / 's'), '--model', 'intfloat/multilingual-e5-small']) == 2
    assert ('was built with test/hash-embedder, not intfloat/multilingual-e5-small: leave out --model'
            in capsys.readouterr().err)


def test_a_new_store_gets_the_model_of_its_corpus_languages(tmp_path, capsys):
    "Issue 34.1: English text gets all-MiniLM-L6-v2, text that is not English multilingual-e5-small; said on stderr."
    from ragnb.stores import store_model
    (tmp_path / 'es').mkdir()
    (tmp_path / 'es' / 'guardia.md').write_text('# Guardia\n\nLa persona de guardia atiende las alertas de la noche '
                                                'y avisa al equipo de plataforma.', encoding='utf-8')
    for folder, model in [(ingest.bundled_data_dir() / 'docs' / 'en', 'sentence-transformers/all-MiniLM-L6-v2'),
                          (tmp_path / 'es', 'intfloat/multilingual-e5-small')]:
        store = tmp_path / f'store-{folder.name}'
        assert main(['index', str(folder), '--store', str(store), '--quiet']) == 0
        assert f'model for the new store: {model} (' in capsys.readouterr().err and store_model(store) == model
        assert main(['index', str(folder), '--store', str(store), '--quiet']) == 0      # an existing store: its own
        assert 'model for the new store' not in capsys.readouterr().err
    assert main(['index', str(tmp_path / 'es'), '--store', str(tmp_path / 'chosen'), '--quiet',
                 '--model', 'sentence-transformers/all-MiniLM-L6-v2']) == 0
    assert 'model for the new store' not in capsys.readouterr().err
    assert store_model(tmp_path / 'chosen') == 'sentence-transformers/all-MiniLM-L6-v2'


def test_logs_in_a_folder_are_left_out_and_counted_and_one_given_alone_is_read(tmp_path):
    "A test suite's log beside the docs (gdb's check.log.gz in /usr/share/doc) floods a store; asked for, it is read."
    import gzip
    kb = tmp_path / 'kb'
    kb.mkdir()
    (kb / 'guia.md').write_text('# Copias\n\nLa copia nocturna se guarda en la cinta del armario B3.\n')
    (kb / 'check.log.gz').write_bytes(gzip.compress(b''.join(b'PASS: gdb.base/t%d.exp: copia cinta armario\n' % i
                                                            for i in range(3000))))
    (kb / 'app.log.1').write_text('2026-12-05 10:00:01 INFO copia iniciada\n')
    r = ragnb('index', str(kb), '--store', str(tmp_path / 's'), '--verbose', text=True)
    assert r.returncode == 0 and 'left out 2 log files, machine output rather than documents' in r.stdout, r.stdout
    assert 'left out (log): ' in r.stderr and 'check.log.gz' in r.stderr
    r = ragnb('ask', '¿Dónde se guarda la copia nocturna?', '--store', str(tmp_path / 's'), '--json', text=True)
    assert {c['cite'].split(':')[0] for c in json.loads(r.stdout)['chunks']} == {'kb/guia.md'}, r.stdout[:400]
    r = ragnb('index', str(kb / 'app.log.1'), '--store', str(tmp_path / 's'), text=True)
    assert r.returncode == 0 and 'log files' not in r.stdout and 'added 1' in r.stdout, r.stdout


def test_a_warning_is_one_line_naming_the_file(tmp_path):
    "A Python 2 script in a docs folder (git's contrib): chunked by lines, said in one line, not Python's warning."
    kb = tmp_path / 'kb'
    kb.mkdir()
    (kb / 'import-zips.py').write_text('import sys\nprint "importing", sys.argv[1]\n')
    r = ragnb('index', str(kb), '--store', str(tmp_path / 's'), '--quiet', text=True)
    assert r.returncode == 0, r.stderr
    assert re.search(r'^ragnb index: warning: \S*import-zips\.py: could not parse as python; chunked by line windows '
                     r'instead$', r.stderr, re.M), r.stderr
    assert 'UserWarning' not in r.stderr and 'warnings.warn' not in r.stderr


def test_ask_json_gives_a_read_that_opens_at_the_very_chunk(tmp_path):
    """A long HTML section's chunks share one citation (its anchor): `ragnb read CITE` opens at the section's start,
    so `ask --json` gives each later one a `read` that `ragnb read` opens at that chunk itself."""
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'docs' / 'guide.html').write_text('<html><body><h1 id="top">Guide</h1><h2 id="backups">Backups</h2>'
                                                  + ''.join(f'<p>Step {i}: copy {i} is kept on volume {i} for {i} '
                                                            'days and checked with restic check.</p>'
                                                            for i in range(60)) + '</body></html>')
    store = str(tmp_path / 'store')
    assert ragnb('index', str(tmp_path / 'docs'), '--store', store, '--quiet').returncode == 0
    hits = json.loads(ragnb('ask', 'Where is copy 50 kept?', '--store', store, '-k', '4', '--json').stdout)['chunks']
    assert sorted(h.get('read', '').split('~')[0] for h in hits) == ['', '', 'docs/guide.html#chunk=2',
                                                                     'docs/guide.html#chunk=3']
    for h in hits:
        r = ragnb('read', h.get('read', h['cite']), '--store', store, '--max-tokens', '1', '--json')
        assert json.loads(r.stdout)['chunks'][0]['text'] == h['text'], (h['cite'], h.get('read'))
    shown = ragnb('ask', 'Where is copy 50 kept?', '--store', store, '-k', '4', text=True).stdout
    reads = re.findall(r'^    read on from this chunk: (.+)$', shown, re.M)       # the same handles, as commands
    handles = sorted(['ragnb', 'read', h['read']] for h in hits if 'read' in h)
    assert sorted(shlex.split(x)[:3] for x in reads) == handles, shown
    assert shlex.split(reads[0])[3:] == ['--store', store]
