"""`ragnb serve` overhead and throughput: `ask` through the MCP SDK's own client (stdio, and streamable HTTP with 1, 4
and 16 concurrent clients) against the same call in-process, on a store of the bundled docs, in the same run. The HTTP
server runs as one process and as `--workers N` (default: one per core), each driven by the SDK's client and by a
light one (raw JSON-RPC posts over keep-alive connections, one thread per client), whose own cost is small enough not
to hide the server's. Prints one table; the HTTP rows give requests/s and its ratio to one client's on the same server
(issue 37.5 asks 4 clients for >= 1.6x). Every ask embeds its question, as written: the benchmark, its servers and
its processes keep no questions' vectors (`$RAGNB_QUERY_CACHE=0`).

    python bench/bench_serve.py [--rounds 5] [--repeats 1] [--workers N] [--model NAME]

On a machine shared with others, `--repeats 3` runs the HTTP rows three times in turn and gives each row's median
asks/s, and its median ratio to the one-client row of the same repeat.
"""
import argparse, http.client, json, os, socket, statistics, subprocess, sys, tempfile, threading, time
import concurrent.futures as cf
from functools import partial
from pathlib import Path
from machine import machine  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def pct(xs, p): return sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]


def row(name, lat, wall=None, n=None, base=None, cpu=None, rate=None, ratio=None):
    "One table row; `rate` and `ratio`, when given, are the asks/s and the ratio to one client (medians of repeats)."
    rate = rate or (n / wall if wall else None)
    tput = f'{rate:.0f}' if rate else ''
    vs = f'{ratio:.2f}x' if ratio else f'{rate / base:.2f}x' if rate and base else ''
    per = f'{cpu / n * 1e3:.1f}' if cpu is not None else ''
    return (f'| {name} | {len(lat)} | {pct(lat, .5):.1f} | {pct(lat, .95):.1f} | {pct(lat, .99):.1f} | {tput} | {vs} '
            f'| {per} |')


def server_cmd(store, *extra):
    return [sys.executable, '-m', 'ragnb.cli', 'serve', '--store', str(store), *extra]


async def stdio_run(store, qs):
    from mcp import StdioServerParameters
    from mcp.client.client import Client
    lat = []
    async with Client(StdioServerParameters(command=sys.executable, args=server_cmd(store)[1:]),
                      read_timeout_seconds=120) as c:
        await c.call_tool('ask', {'question': qs[0]})
        for q in qs:
            t = time.perf_counter()
            r = await c.call_tool('ask', {'question': q, 'k': 5, 'trim': True})
            lat.append((time.perf_counter() - t) * 1e3)
            assert not r.is_error, r.content[0].text
    return lat


async def http_run(url, qs, clients):
    import anyio
    from mcp.client.client import Client
    lat = []

    async def one(i):
        async with Client(url, read_timeout_seconds=120) as c:
            for q in qs[i::clients]:
                t = time.perf_counter()
                await c.call_tool('ask', {'question': q, 'k': 5, 'trim': True})
                lat.append((time.perf_counter() - t) * 1e3)

    t = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(clients): tg.start_soon(one, i)
    return lat, time.perf_counter() - t


def light_session(port):
    "A keep-alive connection that has initialized MCP (and holds its session id when the server keeps sessions)."
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=120)
    h = {'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream'}
    init = {'jsonrpc': '2.0', 'id': 0, 'method': 'initialize', 'params': {
        'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 'bench', 'version': '0'}}}
    c.request('POST', '/mcp', json.dumps(init), h)
    r = c.getresponse()
    sid = r.getheader('mcp-session-id')
    r.read()
    if sid:
        h.update({'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18'})
        c.request('POST', '/mcp', json.dumps({'jsonrpc': '2.0', 'method': 'notifications/initialized'}), h)
        c.getresponse().read()
    return c, h


def light_ask(c, h, q, i):
    body = {'jsonrpc': '2.0', 'id': i, 'method': 'tools/call',
            'params': {'name': 'ask', 'arguments': {'question': q, 'k': 5, 'trim': True}}}
    c.request('POST', '/mcp', json.dumps(body), h)
    r = c.getresponse()
    text = r.read().decode()
    data = next((x[6:] for x in text.splitlines() if x.startswith('data: ')), text)
    assert r.status == 200 and not json.loads(data)['result'].get('isError'), text[:300]


def asked(qs, times=3):
    """Each question `times` times, as written. Every process this benchmark runs keeps no questions' vectors
    (`$RAGNB_QUERY_CACHE=0`, set in `main`), so every ask embeds its question. (Until 2026-12-07 each ask was made
    new with a tag appended instead, `[L4w2r0-12]`, which made e5's questions about 45% longer in tokens.)"""
    return qs * times


def light_run(port, qs, clients):
    lat, lock = [], threading.Lock()

    def one(i):
        c, h = light_session(port)
        for j, q in enumerate(qs[i::clients]):
            t = time.perf_counter()
            light_ask(c, h, q, j)
            with lock: lat.append((time.perf_counter() - t) * 1e3)
        c.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    t = time.perf_counter()
    for x in threads: x.start()
    for x in threads: x.join()
    return lat, time.perf_counter() - t


def http_server(store_dir, workers):
    "Start `ragnb serve --http` with `workers` processes; (process, port) once it answers."
    import httpx
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(server_cmd(store_dir, '--http', f'127.0.0.1:{port}', '--workers', str(workers)),
                            stderr=subprocess.DEVNULL)
    url = f'http://127.0.0.1:{port}/mcp'
    for _ in range(600):
        try:
            httpx.get(url, timeout=0.5)
            break
        except httpx.TransportError: time.sleep(0.1)
    return proc, port


def server_cpu(proc):
    "CPU seconds (user + system) the server has used so far, its worker processes included (from /proc)."
    total, tick = 0, os.sysconf('SC_CLK_TCK')
    for stat in Path('/proc').glob('[0-9]*/stat'):
        try: f = stat.read_text().rsplit(') ', 1)[1].split()
        except (OSError, IndexError): continue
        if int(stat.parent.name) == proc.pid or int(f[1]) == proc.pid: total += int(f[11]) + int(f[12])
    return total / tick


def http_rows(store_dir, qs, workers, times=3, repeats=1):
    """{(client, clients): (latencies, [asks/s of each repeat], server CPU s)} for one server of `workers` processes,
    warm, each row asking every question `times` times; the rows run `repeats` times in turn (1, 4, 16 clients, then
    again), so that a neighbour's load on a shared machine falls on each count alike."""
    import anyio
    proc, port = http_server(store_dir, workers)
    url = f'http://127.0.0.1:{port}/mcp'
    runs = {'SDK client': lambda qs, n: anyio.run(http_run, url, qs, n), 'light client': partial(light_run, port)}
    try:
        anyio.run(http_run, url, asked(qs[:4]), 1)             # the client's own first-call costs
        out = {(client, n): ([], [], 0.0) for client in runs for n in (1, 4, 16)}
        for r in range(repeats):
            for client, run in runs.items():
                for n in (1, 4, 16):
                    cpu = server_cpu(proc)
                    lat, wall = run(asked(qs, times), n)
                    lats, rates, used = out[client, n]
                    out[client, n] = lats + lat, rates + [len(lat) / wall], used + server_cpu(proc) - cpu
        return out
    finally:
        proc.terminate()
        proc.wait(30)


def main():
    import anyio
    from ragnb.index import Store
    from ragnb.embed import QUERY_CACHE_ENV, Embedder
    from ragnb.ingest import default_corpus, index_paths, new_store_model
    from ragnb.serve import open_service
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--rounds', type=int, default=5, help='times each question is asked in each row')
    ap.add_argument('--workers', type=int, default=len(os.sched_getaffinity(0)),
                    help='worker processes of the second HTTP server (default: one per core)')
    ap.add_argument('--repeats', type=int, default=1, help='times the HTTP rows run in turn; asks/s and the ratio '
                                                           'to one client are the medians')
    ap.add_argument('--model', help="the store's model (default: the one `ragnb index` picks for the bundled docs, "
                                    "as the README's first command builds it)")
    args = ap.parse_args()
    os.environ[QUERY_CACHE_ENV] = '0'    # here, the servers and the processes: every ask embeds its question
    qs = [json.loads(x)['question'] for x in (ROOT / 'data' / 'eval' / 'questions.jsonl').read_text().splitlines()]
    store_dir = Path(tempfile.mkdtemp()) / 'store'
    model = args.model or new_store_model(default_corpus())[0]
    with Store.open(store_dir, embedder=Embedder.from_pretrained(model) if model else None) as w:
        index_paths(w, default_corpus(), progress=False)
    svc = open_service(store_dir)          # as `ragnb serve` opens it: the cores split among asks at once
    svc.ask(qs[0])
    lat_in = [_timed(svc, q) for q in asked(qs, args.rounds)]
    lat_stdio = anyio.run(stdio_run, store_dir, asked(qs, args.rounds))
    t = time.perf_counter()
    with cf.ThreadPoolExecutor(8) as ex: lat8 = list(ex.map(lambda q: _timed(svc, q), asked(qs)))
    wall_threads = time.perf_counter() - t
    procs = {p: in_processes(store_dir, asked(qs), p) for p in sorted({1, args.workers})}
    http = {w: http_rows(store_dir, qs, w, args.rounds, args.repeats) for w in sorted({1, args.workers})}
    d_p50 = pct(lat_stdio, .5) - pct(lat_in, .5)
    print(f'ask(k=5, trim=True) on the bundled docs ({svc.store.stats()["chunks"]} chunks), {len(qs)} questions, '
          f'{machine()}; model {svc.store.manifest["model"]}\n')
    print('| path | calls | p50 ms | p95 ms | p99 ms | asks/s | vs 1 client | server CPU ms/ask |')
    print('|---|---|---|---|---|---|---|---|')
    print(row('in-process `RetrievalService.ask`', lat_in))
    print(row('MCP stdio client → `ragnb serve`', lat_stdio))
    print(row('in-process, 8 threads', lat8, wall_threads, len(lat8)))
    for p, (lat, wall) in procs.items():
        print(row(f'in-process, {p} process{"es" * (p > 1)}', lat, wall, len(lat), len(procs[1][0]) / procs[1][1]))
    for w, runs in http.items():
        server = 'one process' if w == 1 else f'{w} worker processes'
        for (client, n), (lat, rates, cpu) in runs.items():
            ratios = [a / b for a, b in zip(rates, runs[client, 1][1])]      # each repeat against its own 1 client
            print(row(f'HTTP, {server}, {client}, {n} concurrent', lat, n=len(lat), cpu=cpu,
                      rate=statistics.median(rates), ratio=statistics.median(ratios)))
    print(f'\nstdio overhead at p50: {d_p50:.1f} ms (target < 5 ms)')


def _asker(store_dir, qs, barrier, threads):
    "One process of `in_processes`: its own read-only store and service, warm, then its share of the questions."
    os.environ.setdefault('RAGNB_THREADS', str(threads))      # its share of the cores, as `ragnb serve` gives
    from ragnb.serve import open_service
    svc = open_service(store_dir)
    barrier.wait()
    t = time.perf_counter()
    lat = [_timed(svc, q) for q in qs]
    return lat, t, time.perf_counter()


def in_processes(store_dir, qs, n):
    "Asks split over `n` processes that start together: (latencies, wall from the first start to the last end)."
    import multiprocessing as mp
    ctx = mp.get_context('spawn')
    with ctx.Manager() as m, cf.ProcessPoolExecutor(n, mp_context=ctx) as ex:
        barrier = m.Barrier(n)
        threads = max(1, len(os.sched_getaffinity(0)) // n)
        done = list(ex.map(_asker, [store_dir] * n, [qs[i::n] for i in range(n)], [barrier] * n, [threads] * n))
    return [x for lat, _, _ in done for x in lat], max(e for *_, e in done) - min(t for _, t, _ in done)


def _timed(svc, q):
    t = time.perf_counter()
    svc.ask(q, k=5, trim=True)
    return (time.perf_counter() - t) * 1e3


if __name__ == '__main__':
    sys.path.insert(0, str(ROOT))
    main()
