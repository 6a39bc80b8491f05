"""`ragnb serve` overhead and throughput: `ask` through the MCP SDK's own client (stdio, and streamable HTTP with 1, 4
and 16 concurrent clients) against the same call in-process, on a store of the bundled docs, in the same run. Prints
one table; the HTTP rows give requests/s and its ratio to one client's (issue 37.5 asks 4 clients for >= 1.6x).

    python bench/bench_serve.py [--rounds 5]
"""
import argparse, json, os, socket, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def pct(xs, p): return sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]


def row(name, lat, wall=None, n=None, base=None):
    tput = f'{n / wall:.0f}' if wall else ''
    vs = f'{n / wall / base:.2f}x' if wall and base else ''
    return f'| {name} | {len(lat)} | {pct(lat, .5):.1f} | {pct(lat, .95):.1f} | {pct(lat, .99):.1f} | {tput} | {vs} |'


def server_cmd(store, *extra):
    return [sys.executable, '-m', 'ragnb.cli', 'serve', '--store', str(store), *extra]


async def stdio_run(store, qs, rounds):
    from mcp import StdioServerParameters
    from mcp.client.client import Client
    lat = []
    async with Client(StdioServerParameters(command=sys.executable, args=server_cmd(store)[1:]),
                      read_timeout_seconds=120) as c:
        await c.call_tool('ask', {'question': qs[0]})
        for _ in range(rounds):
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
            for q in qs[i::clients] * 3:
                t = time.perf_counter()
                await c.call_tool('ask', {'question': q, 'k': 5, 'trim': True})
                lat.append((time.perf_counter() - t) * 1e3)

    t = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(clients): tg.start_soon(one, i)
    return lat, time.perf_counter() - t


def main():
    import anyio, httpx
    import concurrent.futures as cf
    from ragnb.index import Store
    from ragnb.ingest import default_corpus, index_paths
    from ragnb.serve import RetrievalService
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--rounds', type=int, default=5)
    args = ap.parse_args()
    qs = [json.loads(x)['question'] for x in (ROOT / 'data' / 'eval' / 'questions.jsonl').read_text().splitlines()]
    store_dir = Path(tempfile.mkdtemp()) / 'store'
    with Store.open(store_dir) as w: index_paths(w, default_corpus(), progress=False)
    svc = RetrievalService(Store.open(store_dir, readonly=True))
    svc.ask(qs[0])
    lat_in = []
    for _ in range(args.rounds):
        for q in qs:
            t = time.perf_counter()
            svc.ask(q, k=5, trim=True)
            lat_in.append((time.perf_counter() - t) * 1e3)
    lat_stdio = anyio.run(stdio_run, store_dir, qs, args.rounds)
    t = time.perf_counter()
    with cf.ThreadPoolExecutor(8) as ex: lat8 = list(ex.map(lambda q: _timed(svc, q), qs * 3))
    wall_threads = time.perf_counter() - t
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(server_cmd(store_dir, '--http', f'127.0.0.1:{port}'), stderr=subprocess.DEVNULL)
    url = f'http://127.0.0.1:{port}/mcp'
    for _ in range(600):
        try:
            httpx.get(url, timeout=0.5)
            break
        except httpx.TransportError: time.sleep(0.1)
    try:
        anyio.run(http_run, url, qs[:4], 1)                       # warm: the server's first asks load the model
        http = {n: anyio.run(http_run, url, qs, n) for n in (1, 4, 16)}
    finally: proc.terminate()
    d_p50 = pct(lat_stdio, .5) - pct(lat_in, .5)
    print(f'ask(k=5, trim=True) on the bundled docs ({svc.store.stats()["chunks"]} chunks), {len(qs)} questions, '
          f'{os.cpu_count()} cores; model {svc.store.manifest["model"]}\n')
    print('| path | calls | p50 ms | p95 ms | p99 ms | asks/s | vs 1 client |')
    print('|---|---|---|---|---|---|---|')
    print(row('in-process `RetrievalService.ask`', lat_in))
    print(row('MCP stdio client → `ragnb serve`', lat_stdio))
    print(row('in-process, 8 threads', lat8, wall_threads, len(lat8)))
    one = len(http[1][0]) / http[1][1]
    for n, (lat, wall) in http.items():
        print(row(f'MCP streamable HTTP, {n} concurrent client{"s" * (n > 1)}', lat, wall, len(lat), one))
    print(f'\nstdio overhead at p50: {d_p50:.1f} ms (target < 5 ms)')


def _timed(svc, q):
    t = time.perf_counter()
    svc.ask(q, k=5, trim=True)
    return (time.perf_counter() - t) * 1e3


if __name__ == '__main__':
    sys.path.insert(0, str(ROOT))
    main()
