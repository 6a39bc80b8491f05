"ragnb.eval end to end: the `ragnb eval` command against the library, bad question files, calibration to 'auto'."
import json, re, subprocess, sys, time
from pathlib import Path

import pytest

from inprocess import ragnb_main
from ragnb.eval import eval_retrieval, bundled_questions
from ragnb.ingest import index_paths
from ragnb.trim import default_trim_threshold

DATA = Path(__file__).resolve().parent.parent / 'data'


def ragnb(*args): return ragnb_main(*args, text=True)


def ragnb_process(*args):
    "A real subprocess, where stderr must hold what `logging` writes (pytest captures it in this process)."
    return subprocess.run([sys.executable, '-m', 'ragnb.cli', *args], capture_output=True, text=True)


@pytest.fixture(scope='module')
def store_dir(tmp_path_factory):
    from ragnb.index import Store
    d = tmp_path_factory.mktemp('eval') / 'store'
    with Store.open(d) as s: index_paths(s, [DATA])
    return d


def test_cli_numbers_match_the_library(store_dir):
    r = ragnb('eval', '--store', str(store_dir), '--json', '--threshold', '0.38', '--window', '1')
    assert r.returncode == 0, r.stderr
    assert 'eval' in r.stderr                                   # the progress bar, on stderr
    cli = json.loads(r.stdout)
    from ragnb.index import Store
    with Store.open(store_dir, readonly=True) as s:
        lib = eval_retrieval(s, bundled_questions(), trim_threshold=0.38, trim_window=1, progress=False)
    assert cli['summary'] == lib.summary
    assert cli['summary']['n_questions'] == 60 and cli['labelling_errors'] == []
    # the per-question rows say which answers were lost
    lost = [row['question'] for row in cli['rows'] if row['answer_in_baseline'] and not row['answer_in_variant']]
    assert len(lost) == round(60 * (cli['summary']['answer_in_baseline'] - cli['summary']['answer_retention']))


def test_bad_lines_and_labelling_errors_are_reported(store_dir, tmp_path):
    q = tmp_path / 'q.jsonl'
    q.write_text('{"question": "How long are audit logs kept?", "relevant": ["docs/en/data-retention.md"], '
                 '"answer": "2 years"}\n'
                 '{"question": "truncated...\n'
                 '{"question": "When is the change freeze?", "relevant": ["docs/en/no-such-file.md"], '
                 '"answer": "December 20"}\n',
                 encoding='utf-8')
    r = ragnb_process('eval', '--store', str(store_dir), '--questions', str(q), '--json')
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out['bad_lines'][0][0] == 2 and 'q.jsonl:2' in r.stderr
    assert out['labelling_errors'] == [['When is the change freeze?', 'docs/en/no-such-file.md']]
    assert out['summary']['n_questions'] == 2 and out['summary']['n_labelled'] == 1     # not scored as a miss
    r = ragnb('eval', '--store', str(store_dir), '--questions', str(tmp_path / 'missing.jsonl'))
    assert r.returncode == 2 and 'no such questions file' in r.stderr


def test_sweep_plot_save_then_auto(store_dir, tmp_path):
    png = tmp_path / 'sweep.png'
    r = ragnb('eval', '--store', str(store_dir), '--sweep', '--plot', str(png), '--save')
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    cals = json.loads((store_dir / 'manifest.json').read_text())['trim_calibration']['windows']
    assert f'undo: ragnb eval --store {store_dir} --forget' in r.stdout
    assert sorted(cals) == ['0', '1', 'structured:0', 'structured:1']          # each policy and window its own
    saved = f"saved by `ragnb eval --save` on {time.strftime('%Y-%m-%d')}, 60 questions"
    for key, cal in cals.items():
        p, w = cal['policy'], str(cal['window'])
        assert key == (w if p == 'fixed' else f'{p}:{w}')
        assert cal['answer_retention'] >= 0.95 * cal['answer_in_baseline']
        assert f"{p}, window {w}: calibrated threshold {cal['threshold']:.2f}" in r.stdout
        was = default_trim_threshold(cal['model'], int(w), p)           # what `auto` meant, said with the change
        assert f"  {p}, window {w}: {cal['threshold']:.2f} (was {was:.2f}, the model's default)" in r.stdout
        r2 = ragnb('ask', 'How long are audit logs kept?', '--store', str(store_dir), '--policy', p, '--window', w)
        assert f"{p}, threshold {cal['threshold']:g} (auto: {saved}), window {w}" in r2.stdout
    r = ragnb('eval', '--store', str(store_dir), '--forget')
    assert r.returncode == 0 and 'forgot 4 saved thresholds' in r.stdout, r.stderr
    assert json.loads((store_dir / 'manifest.json').read_text())['trim_calibration']['windows'] == {}
    r2 = ragnb('ask', 'How long are audit logs kept?', '--store', str(store_dir), '--policy', 'fixed', '--window', '0')
    fixed = default_trim_threshold(cal['model'], 0, 'fixed')
    assert f"fixed, threshold {fixed:g} (auto: the model's default)" in r2.stdout


def test_sweep_target_retention_picks_the_most_aggressive(store_dir):
    rows, cal = {}, {}
    for target in ('0.8', '1'):
        r = ragnb('eval', '--store', str(store_dir), '--policy', 'structured', '--window', '0',
                  '--target-retention', target, '--json')
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        rows[target], cal[target] = out['sweep'], out['calibration']['structured:0']
        assert {row['policy'] for row in out['sweep']} == {'structured'}
    ok = lambda row, t: row['answer_retention'] >= t * row['answer_in_baseline'] - 1e-12
    for target, t in (('0.8', 0.8), ('1', 1.0)):
        good = [row for row in rows[target] if ok(row, t)]
        if not good:
            assert cal[target]['threshold'] is None
            continue
        best = max(good, key=lambda row: row['token_reduction_pct'])
        assert cal[target]['threshold'] == best['threshold'] and cal[target]['target_retention'] == t
    if cal['1']['threshold'] is None: return
    assert cal['0.8']['token_reduction_pct'] >= cal['1']['token_reduction_pct']
    assert ragnb('eval', '--store', str(store_dir), '--target-retention', '1.5').returncode == 2


def test_hyde_variant_overlap(store_dir):
    from ragnb.index import Store
    gen = lambda _prompt: '{"passage": "Faro retains audit logs for two years and application logs for 14 days."}'
    with Store.open(store_dir, readonly=True) as s:
        rep = eval_retrieval(s, [{'question': 'logs?', 'relevant': ['docs/en/data-retention.md'], 'answer': '14 days'}],
                             hyde=True, hyde_options={'generator': gen}, progress=False)
    [row] = rep.rows
    assert row['hyde'] == 'ok'
    assert row['overlap_vs_baseline'] == len(set(row['baseline_ids']) & set(row['variant_ids'])) / 5
    assert rep.summary['avg_overlap_vs_baseline'] == row['overlap_vs_baseline']
    assert rep.summary['hyde_used'] == 1 and 'HyDE used' in str(rep)


def test_hyde_without_a_key_is_reported_as_fallback(store_dir, monkeypatch):
    for k in ('GOOGLE_AI_API_KEY', 'GEMINI_API_KEY'): monkeypatch.delenv(k, raising=False)
    r = ragnb('eval', '--store', str(store_dir), '--hyde', '-k', '3')
    assert r.returncode == 0, r.stderr
    assert re.search(r'HyDE used\s+0/60', r.stdout)
    assert 'HyDE fell back on 60 questions: HydeNoKey: no API key' in r.stdout


def test_explorer_display_data_carries_static_html(store_dir):
    "Issue 19.9: the display data a notebook saves holds the rendering as text/html beside the widget view."
    from IPython.core.interactiveshell import InteractiveShell
    from ragnb.eval import Explorer
    from ragnb.index import Store
    with Store.open(store_dir, readonly=True) as s:
        data, _ = InteractiveShell.instance().display_formatter.format(Explorer(s, 'How long are audit logs kept?'))
    assert 'application/vnd.jupyter.widget-view+json' in data
    assert '<mark title="score' in data['text/html'] and 'data-retention.md:' in data['text/html']
