"""ragnb.hyde with the real google-genai SDK against a real HTTP server on 127.0.0.1 that speaks generateContent.
Nothing here contacts any other host."""
import json, socket, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from inprocess import ragnb_main

from ragnb.hyde import (HydeCache, HydeError, HydeNoKey, HydeTimeout, build_query_vec, generate_hyde, hyde_prompt)

KEY = 'test-key-do-not-log-42'


def answer(text):
    return 200, {'candidates': [{'content': {'role': 'model', 'parts': [{'text': text}]}, 'finishReason': 'STOP',
                                 'index': 0}],
                 'usageMetadata': {'promptTokenCount': 10, 'candidatesTokenCount': 20, 'totalTokenCount': 30}}


class FakeGemini(ThreadingHTTPServer):
    daemon_threads = True
    def __init__(self):
        super().__init__(('127.0.0.1', 0), Handler)
        self.requests, self.reply, self.delay, self.drip = [], lambda _n: answer('{"passage": "ok"}'), 0.0, 0.0
        self.chunked, self.gate = 0, None       # gate: a `threading.Barrier` each request waits at
    @property
    def url(self): return f'http://127.0.0.1:{self.server_address[1]}'


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
        srv = self.server
        req = dict(path=self.path, headers={k.lower(): v for k, v in self.headers.items()},
                   body=json.loads(body or b'{}'), start=time.perf_counter())
        srv.requests.append(req)
        if srv.gate is not None:                          # held until as many requests are open at once
            try: srv.gate.wait(timeout=30)
            except threading.BrokenBarrierError: pass
        status, payload, *extra = srv.reply(len(srv.requests))
        if srv.delay: time.sleep(srv.delay)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header('Content-Type', 'application/json')
            for k, v in (extra[0] if extra else {}).items(): self.send_header(k, v)
            if srv.chunked:                               # no length: the body in chunks of `chunked` bytes
                self.send_header('Transfer-Encoding', 'chunked')
                self.end_headers()
                for i in range(0, len(data), srv.chunked):
                    part = data[i:i + srv.chunked]
                    self.wfile.write(f'{len(part):x}\r\n'.encode() + part + b'\r\n')
                self.wfile.write(b'0\r\n\r\n')
                req['end'] = time.perf_counter()
                return
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            if srv.drip:                                   # one byte every `drip` seconds
                for i in range(len(data)):
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()
                    time.sleep(srv.drip)
            else: self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError): pass
        req['end'] = time.perf_counter()


@pytest.fixture
def server():
    s = FakeGemini()
    t = threading.Thread(target=s.serve_forever, daemon=True)
    t.start()
    yield s
    s.shutdown()
    s.server_close()


@pytest.fixture
def client(server):
    from google import genai
    from google.genai import types
    return genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=server.url))


@pytest.fixture(scope='module')
def emb():
    from ragnb.embed import Embedder
    return Embedder.from_pretrained()


@pytest.fixture(autouse=True)
def no_env_keys(monkeypatch):
    for k in ('GOOGLE_AI_API_KEY', 'GEMINI_API_KEY', 'RAGNB_HYDE_MODEL'): monkeypatch.delenv(k, raising=False)


def test_exact_request_and_good_passage(server, client):
    server.reply = lambda _n: answer('{"passage": "  Ejecuta kubectl rollout undo sobre el deployment.  "}')
    q = '¿Cómo hago un rollback en producción?'
    assert generate_hyde(q, client=client,
                         model='gemma-3-27b-it') == 'Ejecuta kubectl rollout undo sobre el deployment.'
    [r] = server.requests
    assert r['path'] == '/v1/models/gemma-3-27b-it:generateContent'     # google-genai 3.x speaks v1 by default
    assert r['headers']['x-goog-api-key'] == KEY
    assert r['body']['contents'] == [{'role': 'user', 'parts': [{'text': hyde_prompt(q)}]}]
    prompt = r['body']['contents'][0]['parts'][0]['text']
    assert prompt.startswith('Escribe un breve pasaje hipotético de documentación (2-4 frases)')
    assert r['body']['generationConfig'] == {
        'temperature': 1.0, 'topP': 0.95, 'topK': 64, 'maxOutputTokens': 220, 'responseMimeType': 'application/json',
        'responseSchema': {'type': 'OBJECT', 'properties': {'passage': {'type': 'STRING'}}, 'required': ['passage']}}


def test_key_and_model_from_environment(server, monkeypatch):
    monkeypatch.setenv('GEMINI_API_KEY', KEY)
    monkeypatch.setenv('RAGNB_HYDE_MODEL', 'gemini-env-model')
    assert generate_hyde('How do I rotate the API key?', base_url=server.url) == 'ok'
    r = server.requests[-1]
    assert r['path'] == '/v1/models/gemini-env-model:generateContent' and r['headers']['x-goog-api-key'] == KEY
    prompt = r['body']['contents'][0]['parts'][0]['text']
    assert prompt.startswith('Write a short hypothetical documentation passage (2-4 sentences)')
    monkeypatch.setenv('GOOGLE_AI_API_KEY', 'the-other-key')        # GOOGLE_AI_API_KEY wins over GEMINI_API_KEY
    generate_hyde('How do I rotate the API key?', base_url=server.url)
    assert server.requests[-1]['headers']['x-goog-api-key'] == 'the-other-key'


@pytest.mark.parametrize('text, want', [
    ('```json\n{"passage": "Fenced passage."}\n```', 'Fenced passage.'),
    ('\ufeff{"passage": "After a BOM."}', 'After a BOM.'),
    ('{"passage": "broken', '{"passage": "broken'),
    ('  not json at all  ', 'not json at all'),
])
def test_answer_parsing(server, client, text, want):
    server.reply = lambda _n: answer(text)
    assert generate_hyde('how to rotate keys', client=client) == want


def test_empty_candidates(server, client, emb):
    server.reply = lambda _n: (200, {'candidates': []})
    assert generate_hyde('how to rotate keys', client=client) == ''
    vec, info = build_query_vec('how to rotate keys', emb, hyde=True, client=client)
    assert info['hyde'] == 'fallback' and 'empty passage' in info['reason']
    assert np.array_equal(vec, emb.embed_query('how to rotate keys'))


@pytest.mark.parametrize('status', [400, 429, 500])
def test_http_errors(server, client, emb, status):
    server.reply = lambda _n: (status, {'error': {'code': status, 'message': 'nope', 'status': 'X'}})
    with pytest.raises(HydeError, match=f'HyDE generation failed: HTTP {status}'):
        generate_hyde('how to rotate keys', client=client)
    assert len(server.requests) == 1                                   # no hidden retries
    vec, info = build_query_vec('how to rotate keys', emb, hyde=True, client=client)
    assert info['hyde'] == 'fallback' and f'HTTP {status}' in info['reason'] and KEY not in json.dumps(info)


def test_slow_server_times_out_and_falls_back_quickly(server, client, emb):
    server.delay = 3.0
    with pytest.raises(HydeTimeout):
        generate_hyde('how to rotate keys', client=client, timeout_s=0.5)
    t = time.perf_counter()
    vec, info = build_query_vec('how to rotate keys', emb, hyde=True, client=client, timeout_s=0.5)
    assert time.perf_counter() - t < server.delay          # it gave up, it did not wait for the slow answer
    assert info['hyde'] == 'fallback' and 'HydeTimeout' in info['reason']
    assert np.array_equal(vec, emb.embed_query('how to rotate keys'))


def test_refused_connection(emb):
    with socket.socket() as s:                    # a port that was free a moment ago: nothing listens there
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    with pytest.raises(HydeError, match='HyDE generation failed') as e:
        generate_hyde('how to rotate keys', api_key=KEY, base_url=f'http://127.0.0.1:{port}', timeout_s=2)
    assert KEY not in str(e.value)
    vec, info = build_query_vec('how to rotate keys', emb, hyde=True, api_key=KEY, base_url=f'http://127.0.0.1:{port}',
                                timeout_s=2)
    assert info['hyde'] == 'fallback' and KEY not in json.dumps(info)


def test_missing_key_falls_back_with_reason(emb):
    with pytest.raises(HydeNoKey):
        generate_hyde('how to rotate keys')
    vec, info = build_query_vec('how to rotate keys', emb, hyde=True)
    assert info['hyde'] == 'fallback' and 'GOOGLE_AI_API_KEY or GEMINI_API_KEY' in info['reason']


def test_cache_saves_the_second_request(server, client, emb, tmp_path):
    server.reply = lambda _n: answer('{"passage": "Rotate keys in the console under Settings."}')
    cache = HydeCache(tmp_path / 'hyde.sqlite')
    v1, i1 = build_query_vec('how to rotate keys', emb, hyde=True, client=client, cache=cache)
    v2, i2 = build_query_vec('how to rotate keys', emb, hyde=True, client=client, cache=cache)
    assert len(server.requests) == 1 and (i1['cached'], i2['cached']) == (0, 1) and np.array_equal(v1, v2)
    v3, i3 = build_query_vec('how to rotate keys', emb, hyde=True, client=client,
                             cache=HydeCache(tmp_path / 'hyde.sqlite'))
    assert len(server.requests) == 1 and i3['cached'] == 1                 # the SQLite file outlives the process's LRU
    build_query_vec('how to rotate keys', emb, hyde=True, client=client, cache=cache, model='another-model')
    assert len(server.requests) == 2                                        # keyed by model too


def test_three_passages_are_concurrent_and_averaged(server, client, emb):
    server.gate = threading.Barrier(3)                 # no answer until all three requests are open at once
    server.reply = lambda n: answer(json.dumps({'passage': f'Passage number {n} about rotating API keys.'}))
    vec, info = build_query_vec('how to rotate keys', emb, hyde=True, client=client, n_passages=3)
    assert len(server.requests) == 3 and info['hyde'] == 'ok' and len(info['passages']) == 3
    assert not server.gate.broken                      # concurrent, whatever the machine's load: none timed out
    want = np.vstack([emb.embed_query('how to rotate keys')[None], emb.embed_documents(info['passages'])]).mean(0)
    assert np.allclose(vec, want / np.linalg.norm(want), atol=2e-3)


def test_cli_ask_hyde_prints_the_passage(server, tmp_path, monkeypatch):
    (tmp_path / 'deploy.md').write_text('# Deploy\n\nRoll back with kubectl rollout undo deployment/faro. '
                                        'It takes two minutes.', encoding='utf-8')
    (tmp_path / 'food.md').write_text('# Canteen\n\nThe canteen serves paella on Thursdays.', encoding='utf-8')
    store = tmp_path / 'store'
    def run(*a, **env):
        for k, v in env.items(): monkeypatch.setenv(k, v)
        return ragnb_main(*a, text=True)
    assert run('index', str(tmp_path), '--store', str(store), '--quiet').returncode == 0
    server.reply = lambda _n: answer('{"passage": "Use kubectl rollout undo to return to the previous release."}')
    r = run('ask', 'go back?', '--store', str(store), '-k', '1', '--hyde', GEMINI_API_KEY=KEY,
            RAGNB_HYDE_BASE_URL=server.url)
    assert r.returncode == 0, r.stderr
    assert 'HyDE: used' in r.stdout and 'Use kubectl rollout undo to return to the previous release.' in r.stdout
    assert 'deploy.md' in r.stdout and KEY not in r.stdout + r.stderr
    r = run('ask', 'go back?', '--store', str(store), '-k', '1', '--hyde', GEMINI_API_KEY=KEY,
            RAGNB_HYDE_BASE_URL=server.url)
    assert 'cached' in r.stdout and len(server.requests) == 1            # the passage cache next to the store
    server.reply = lambda _n: (500, {'error': {'code': 500, 'message': 'boom', 'status': 'INTERNAL'}})
    r = run('ask', 'another question?', '--store', str(store), '-k', '1', '--hyde', GEMINI_API_KEY=KEY,
            RAGNB_HYDE_BASE_URL=server.url)
    assert r.returncode == 0
    assert 'HyDE: not used, searched with the plain question (HydeError: HyDE generation failed: HTTP 500)' in r.stdout


# --- a hostile endpoint -------------------------------------------------------------------------------------------

def test_cross_origin_redirect_is_refused_and_the_key_stays_home(server, monkeypatch):
    other = FakeGemini()
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        server.reply = lambda _n: (307, {}, {'Location': other.url + '/v1/models/m:generateContent'})
        monkeypatch.setenv('GEMINI_API_KEY', KEY)
        with pytest.raises(HydeError, match='refused a redirect to another origin') as e:
            generate_hyde('how to rotate keys', base_url=server.url, timeout_s=5)
        assert other.requests == [] and KEY not in str(e.value)
    finally:
        other.shutdown()
        other.server_close()


def test_a_dripping_server_is_cut_at_the_total_deadline(server, monkeypatch):
    server.drip = 0.4
    server.reply = lambda _n: answer('{"passage": "' + 'x' * 50 + '"}')
    monkeypatch.setenv('GEMINI_API_KEY', KEY)
    t = time.perf_counter()
    with pytest.raises(HydeTimeout, match='in all'):
        generate_hyde('how to rotate keys', base_url=server.url, timeout_s=1.5)
    assert time.perf_counter() - t < server.drip * 50      # cut: the answer has over 100 bytes, one every 0.4 s


def test_huge_answers_are_refused_and_long_passages_capped(server, monkeypatch):
    from ragnb.hyde import MAX_PASSAGE_CHARS, MAX_RESPONSE_BYTES
    monkeypatch.setenv('GEMINI_API_KEY', KEY)
    server.reply = lambda _n: answer('{"passage": "' + 'y' * (MAX_RESPONSE_BYTES + 10) + '"}')
    with pytest.raises(HydeError, match='answer too large'):
        generate_hyde('how to rotate keys', base_url=server.url)
    server.reply = lambda _n: answer(json.dumps({'passage': 'Rotate the key. ' * 1000}))
    p = generate_hyde('how to rotate keys', base_url=server.url)
    assert len(p) <= MAX_PASSAGE_CHARS and p.startswith('Rotate the key.')


def test_bodies_are_capped_as_they_stream_decoded(server, monkeypatch):
    "Issue 32.4: a chunked answer with no length, and a gzip bomb with a small one, are cut at the cap, decoded."
    import gzip
    from ragnb.hyde import MAX_RESPONSE_BYTES
    monkeypatch.setenv('GEMINI_API_KEY', KEY)
    big = lambda _n: answer('{"passage": "' + 'z' * (5 * MAX_RESPONSE_BYTES) + '"}')
    server.reply, server.chunked = big, 64 * 1024
    with pytest.raises(HydeError, match='answer too large'):
        generate_hyde('how to rotate keys', base_url=server.url)
    server.chunked = 0
    bomb = gzip.compress(json.dumps(big(1)[1]).encode(), 9)
    assert len(bomb) < MAX_RESPONSE_BYTES // 50
    server.reply = lambda _n: (200, bomb, {'Content-Encoding': 'gzip'})
    with pytest.raises(HydeError, match='answer too large'):
        generate_hyde('how to rotate keys', base_url=server.url)
    server.reply = lambda _n: (200, gzip.compress(json.dumps(answer('{"passage": "Rotate it."}')[1]).encode()),
                               {'Content-Encoding': 'gzip'})
    assert generate_hyde('how to rotate keys', base_url=server.url) == 'Rotate it.'    # a normal gzip answer


def test_a_timed_out_answer_is_closed_and_not_downloaded_on(server, monkeypatch):
    "Issue 32.4: at the deadline the connection is closed: the server sees it go long before its answer ends."
    server.drip = 0.2
    server.reply = lambda _n: answer('{"passage": "' + 'x' * 200 + '"}')        # over 60 s of dripping
    monkeypatch.setenv('GEMINI_API_KEY', KEY)
    with pytest.raises(HydeTimeout):
        generate_hyde('how to rotate keys', base_url=server.url, timeout_s=1.0)
    t = time.perf_counter()
    while 'end' not in server.requests[-1] and time.perf_counter() - t < 30: time.sleep(0.1)
    assert server.requests[-1]['end'] - server.requests[-1]['start'] < 30       # cut: the whole answer takes > 60 s


def test_the_fallback_error_keeps_no_sdk_context(server, client):
    server.reply = lambda _n: (500, {'error': {'code': 500, 'message': f'bad key {KEY}', 'status': 'X'}})
    with pytest.raises(HydeError) as e:
        generate_hyde('how to rotate keys', client=client)
    assert e.value.__context__ is None and e.value.__cause__ is None and KEY not in str(e.value)


@pytest.mark.parametrize('n', [0, 9, 10000, True, 1.5])
def test_n_passages_is_validated(emb, n):
    with pytest.raises(ValueError, match='n_passages must be an integer from 1 to 8'):
        build_query_vec('how to rotate keys', emb, hyde=True, n_passages=n, generator=lambda _p: 'x')
