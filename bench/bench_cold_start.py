"""Cold start of `ragnb ask`, stage by stage, each run a fresh process on an existing store: importing ragnb,
importing torch and transformers, loading the model, opening the store, the first query; then the whole command's
wall time. Prints one table (medians of --runs).

    python bench/bench_cold_start.py [--runs 5]
"""
import argparse, json, os, pathlib, statistics, subprocess, sys, tempfile, time

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
import ragnb.cli, ragnb.retrieve
t1 = time.perf_counter()
import torch, transformers
t2 = time.perf_counter()
from ragnb.index import Store
from ragnb.retrieve import retrieve
store = Store.open(sys.argv[1], readonly=True)
t3 = time.perf_counter()
store.embedder
t4 = time.perf_counter()
res = retrieve(store, 'How do I roll back a production deployment?', top_k=5)
t5 = time.perf_counter()
heavy = [m for m in ('sentence_transformers', 'sklearn', 'scipy', 'pandas', 'google.genai') if m in sys.modules]
print(json.dumps(dict(ragnb=t1 - t0, torch=t2 - t1, open=t3 - t2, load=t4 - t3, query=t5 - t4, heavy=heavy)))
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--runs', type=int, default=5)
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory() as d:
        store = pathlib.Path(d) / 'store'
        subprocess.run([sys.executable, '-m', 'ragnb.cli', 'index', str(ROOT / 'data' / 'docs'), str(ROOT / 'data' / 'code'),
                        '--store', str(store), '--quiet'], check=True, env=env, capture_output=True)
        stages = [json.loads(subprocess.run([sys.executable, '-c', CHILD, str(store)], check=True, env=env,
                                            capture_output=True, text=True).stdout) for _ in range(args.runs)]
        walls, loads = [], []
        for _ in range(args.runs):
            t = time.perf_counter()
            out = subprocess.run([sys.executable, '-m', 'ragnb.cli', 'ask', 'How do I roll back?', '--store', str(store),
                                  '--json'], check=True, env=env, capture_output=True, text=True)
            walls.append(time.perf_counter() - t)
            loads.append(json.loads(out.stdout)['timings_ms'])
    med = lambda k: statistics.median(s[k] for s in stages) * 1e3
    print(f'{args.runs} fresh processes each, {os.cpu_count()} cores; modules a query does not need that were imported: '
          f'{sorted(set(m for s in stages for m in s["heavy"])) or "none"}\n')
    print('| stage | median ms |\n|---|---|')
    for k, name in (('ragnb', 'import ragnb (cli, retrieve)'), ('torch', 'import torch + transformers'),
                    ('open', 'open the store'), ('load', 'load the model (transformers modules + weights)'),
                    ('query', 'first query (embed + search)')):
        print(f'| {name} | {med(k):.0f} |')
    print(f"| total of the stages | {sum(med(k) for k in ('ragnb', 'torch', 'open', 'load', 'query')):.0f} |")
    print(f"| `ragnb ask --json`, wall (as reported: load {statistics.median(x['load'] for x in loads):.0f}, "
          f"embed {statistics.median(x['embed'] for x in loads):.0f}) | {statistics.median(walls) * 1e3:.0f} |")


if __name__ == '__main__':
    main()
