"""Cold start of `ragnb ask --trim`, stage by stage, each run a fresh process on an existing store: importing ragnb,
opening the store, the embedder, the first trimmed query; then the whole command's wall time, and a fresh writer's
small add (`ragnb index` after one line is added to one file); the model through torch against the default (ONNX
Runtime for queries, OpenVINO for documents). Prints one table (medians of --runs).

    python bench/bench_cold_start.py [--runs 5]
"""
import argparse, json, os, pathlib, shutil, statistics, subprocess, sys, tempfile, time
from machine import machine  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
import ragnb.cli, ragnb.retrieve
t1 = time.perf_counter()
from ragnb.index import Store
from ragnb.retrieve import RetrieveOpts, retrieve
store = Store.open(sys.argv[1], readonly=True)
t2 = time.perf_counter()
store.embedder
t3 = time.perf_counter()
res = retrieve(store, 'How do I roll back a production deployment?', top_k=5, opts=RetrieveOpts(trim=True))
t4 = time.perf_counter()
heavy = [m for m in ('torch', 'transformers', 'sentence_transformers', 'sklearn', 'scipy', 'pandas', 'google.genai')
         if m in sys.modules]
print(json.dumps(dict(ragnb=t1 - t0, open=t2 - t1, load=t3 - t2, query=t4 - t3, heavy=heavy)))
'''
STAGES = (('ragnb', 'import ragnb (cli, retrieve)'), ('open', 'open the store'),
          ('load', 'the embedder (`store.embedder`)'), ('query', 'first query, trimmed (embed + search + trim)'))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--runs', type=int, default=5)
    args = ap.parse_args()
    base = dict(os.environ, PYTHONPATH=str(ROOT))
    rows = {}
    with tempfile.TemporaryDirectory() as d:
        store, corpus = pathlib.Path(d) / 'store', pathlib.Path(d) / 'corpus'
        for part in ('docs', 'code'): shutil.copytree(ROOT / 'data' / part, corpus / part)
        index = [sys.executable, '-m', 'ragnb.cli', 'index', str(corpus / 'docs'), str(corpus / 'code'),
                 '--store', str(store), '--quiet']
        subprocess.run(index, check=True, env=base, capture_output=True)
        changed = corpus / 'docs' / 'en' / 'deployment.md'
        for runtime in ('torch', 'auto'):
            env = dict(base, RAGNB_QUERY_RUNTIME=runtime)
            stages = [json.loads(subprocess.run([sys.executable, '-c', CHILD, str(store)], check=True, env=env,
                                                capture_output=True, text=True).stdout) for _ in range(args.runs)]
            walls = []
            for _ in range(args.runs):
                t = time.perf_counter()
                subprocess.run([sys.executable, '-m', 'ragnb.cli', 'ask', 'How do I roll back?', '--store', str(store),
                                '--trim', '--json'], check=True, env=env, capture_output=True, text=True)
                walls.append(time.perf_counter() - t)
            adds = []
            for i in range(args.runs):
                with open(changed, 'a') as f: f.write(f'\nA line added by the benchmark ({runtime} {i}).\n')
                t = time.perf_counter()
                subprocess.run(index, check=True, env=env, capture_output=True)
                adds.append(time.perf_counter() - t)
            rows[runtime] = {k: statistics.median(s[k] for s in stages) * 1e3 for k, _ in STAGES}
            rows[runtime]['wall'] = statistics.median(walls) * 1e3
            rows[runtime]['add'] = statistics.median(adds) * 1e3
            rows[runtime]['heavy'] = sorted(set(m for s in stages for m in s['heavy'])) or ['none']
    print(f'{args.runs} fresh processes each, {machine()}; median ms. The model through torch '
          '(RAGNB_QUERY_RUNTIME=torch) against the default (ONNX Runtime for queries and OpenVINO for documents '
          'where the model has a graph).\n')
    print('| stage | torch | default |\n|---|---|---|')
    for k, name in STAGES: print(f"| {name} | {rows['torch'][k]:.0f} | {rows['auto'][k]:.0f} |")
    print(f"| total of the stages | {sum(rows['torch'][k] for k, _ in STAGES):.0f} | "
          f"{sum(rows['auto'][k] for k, _ in STAGES):.0f} |")
    print(f"| `ragnb ask --trim --json`, wall | {rows['torch']['wall']:.0f} | {rows['auto']['wall']:.0f} |")
    print(f"| `ragnb index` after one line added to one file, wall | {rows['torch']['add']:.0f} | "
          f"{rows['auto']['add']:.0f} |")
    print(f"| heavy modules imported | {', '.join(rows['torch']['heavy'])} | {', '.join(rows['auto']['heavy'])} |")


if __name__ == '__main__':
    main()
