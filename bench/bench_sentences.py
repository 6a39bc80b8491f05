"""Sentence splitting speed: ragnb vs pysbd vs blingfire on the Debian Reference corpus, plus adversarial inputs.

Usage: python bench/bench_sentences.py [--adversarial-mb 1.0] [--pysbd-timeout 60]
Prints one markdown table. Peers: pip install -e .[bench]
"""
import argparse, multiprocessing as mp, time, sys, pathlib
sys.path.insert(0, str(pathlib.Path(__file__).parent))
from corpus import corpus_text


def _ragnb(text):
    from ragnb.sentences import split_sentences
    return split_sentences(text)


def _pysbd(text):
    import pysbd
    # one paragraph at a time, as a user would feed it, and clean=False to keep the text as is
    seg, out = pysbd.Segmenter(language='en', clean=False), []
    for para in text.split('\n\n'):
        if para.strip(): out += seg.segment(para)
    return out


def _blingfire(text):
    import blingfire
    return blingfire.text_to_sentences(text).split('\n')


SPLITTERS = {'ragnb': _ragnb, 'pysbd': _pysbd, 'blingfire': _blingfire}


def _worker(name, text, q):
    try:
        t = time.perf_counter()
        n = len(SPLITTERS[name](text))
        q.put(('ok', time.perf_counter() - t, n))
    except ModuleNotFoundError as e:
        q.put(('missing', f'not installed ({e.name})', None))
    except Exception as e:     # a splitter that fails is reported as failing, not as hung
        q.put(('error', f'failed ({type(e).__name__})', None))


def timed(name, text, timeout):
    """Run in a child process so a hang (pysbd on 'f.3022' * N) is cut at `timeout` seconds: `(seconds, units)`, or
    `(why, None)` where there is no time: killed at the timeout, not installed, failed, or died."""
    q = mp.Queue()
    p = mp.Process(target=_worker, args=(name, text, q))
    p.start()
    p.join(timeout)
    if p.is_alive():
        p.kill()
        p.join()
        return f'>{timeout:.0f} (killed)', None
    if q.empty(): return f'died (exit code {p.exitcode})', None
    kind, dt, n = q.get()
    return (dt, n) if kind == 'ok' else (dt, None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--adversarial-mb', type=float, default=1.0)
    ap.add_argument('--timeout', type=float, default=60.0, help='seconds before a run counts as hung')
    a = ap.parse_args()
    text = corpus_text()
    mb = len(text.encode()) / 1e6
    rows = {}
    for name in SPLITTERS:
        dt, n = timed(name, text, a.timeout * 10)
        rows[name] = [f'{mb / dt:.2f}', str(n)] if n is not None else [dt, '']
    n = int(a.adversarial_mb * 1e6)
    adv = {"'f.3022' * N": ('f.3022' * (n // 6 + 1))[:n], 'run of dots': '.' * n,
           '1 MB single line': ('El Sr. Pérez instaló la v1.2.3 en 10.0.0.1 y funcionó ' * (n // 55 + 1))[:n]}
    for label, t in adv.items():
        for name in SPLITTERS:
            dt, units = timed(name, t, a.timeout)
            rows[name].append(f'{dt:.3f}' if units is not None else dt)
    print(f'\nDebian Reference corpus: {mb:.2f} MB; adversarial inputs: {a.adversarial_mb} MB each\n')
    print('| splitter | corpus MB/s | units | ' + ' | '.join(f'{k} (s)' for k in adv) + ' |')
    print('|---|---|---|' + '---|' * len(adv))
    for name, r in rows.items(): print(f'| {name} | ' + ' | '.join(r) + ' |')
    (r, rn), (p, pn) = rows['ragnb'][:2], rows['pysbd'][:2]
    if rn and pn: print(f'\nragnb / pysbd speed: {float(r) / float(p):.0f}x')


if __name__ == '__main__':
    main()
