"""Fault injection against ragnb stores, with the full trial counts: prints one table of tried / survived / lost.

Usage: python bench/fault_injection.py [--kills 20] [--queries 1000] [--flips 200] [--resource-queries 2000]
                                      [--ray-kills 3] [--tree-kills 12]

Cases (tests/faults.py holds them; tests/test_store_faults.py runs each with fewer trials):
- kill -9 at a random moment of `ragnb index` on the bundled corpus, after edits that add, update and remove
  sources; after each kill the store must open with `Store.verify()` clean, and a final run must equal a store
  built once, uninterrupted, from the same files; the same with runs alternating `--mode documental` and `--mode
  jerarquico`, so that each switches every file between flat chunks and a tree, the tree's rows compared too;
- a long-lived reader answering queries while another process re-indexes and removes sources in a loop;
- single-byte flips in each store file, each file in a child process so a segfault would show;
- index files crafted to make hnswlib read out of bounds, with the database's size and SHA-256 updated to match;
- a store on a small tmpfs written until the disk is full (needs root to mount; otherwise skipped);
- one reader's RSS and open file descriptors over many queries;
- a folder that becomes unreadable (644, 600, 000, 311) to the user who indexes it: nothing under it is removed;
- bytes flipped in the index file with its mtime set back (refused), and a 1e30 vector in a re-sealed file;
- `Store.verify` (`ragnb check`) while another process commits: no false alarm;
- a file swapped for a FIFO right after the listing checked it, and a file that grows while it is read;
- kill -9 of `ragnb index --ray --shards 2`; a killed writer's -wal cut, emptied or flipped; the MCP tools while a
  writer churns; a disk that fills at each step of a commit;
- a client pinned to one tenant asking with another tenant's words: every answer equals a store of its own.
"""
import argparse, json, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'tests'))
import faults


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--kills', type=int, default=20)
    ap.add_argument('--queries', type=int, default=1000)
    ap.add_argument('--flips', type=int, default=200)
    ap.add_argument('--resource-queries', type=int, default=2000)
    ap.add_argument('--ray-kills', type=int, default=3)
    ap.add_argument('--tree-kills', type=int, default=12)
    ap.add_argument('--json', action='store_true', help='also print the details as JSON')
    a = ap.parse_args()
    rows, details = [], {}

    def run(name, f, note):
        t = time.perf_counter()
        r = f()
        details[name] = r
        rows.append((name, r['tried'], r['survived'], r['lost'], note(r), time.perf_counter() - t))

    run('kill -9 during `ragnb index`', lambda: faults.kill_during_index(trials=a.kills),
        lambda r: f"final run equals a clean build: {r['final_state_equal']}; kills at 0.2–{r['full_run_s']} s")
    run('kill -9 during `ragnb index` switching every file between `--mode documental` and `jerarquico`',
        lambda: faults.kill_during_index(trials=a.tree_kills, seed=7, modes=('documental', 'jerarquico')),
        lambda r: f"final run ({r['tree_leaves']} tree leaves) equals a clean build: {r['final_state_equal']}")
    run('reader during a writer (queries)', lambda: faults.readers_during_writer(queries=a.queries),
        lambda r: f"{r['reloads']} generation reloads, {r['short_results']} short results, "
                  f"{len(r['exceptions'])} exceptions")
    flips = faults.fuzz_store_files(flips=a.flips)
    for name, r in flips.items():
        details[f'flips {name}'] = r
        crashed = r.get('crashed', 0) + ('signal_or_exit' in r) * r['tried']
        survived = r['tried'] - crashed - r.get('changed', 0)
        rows.append((f'byte flips in {name}', r['tried'], survived, r['tried'] - survived,
                     f"detected {r.get('detected', 0)}, unchanged results {r.get('same', 0)}, "
                     f"silently changed {r.get('changed', 0)}, crashed {crashed}", float('nan')))
    run('crafted index files (matching SHA)', faults.crafted_index_files,
        lambda r: ', '.join(k for k, v in r['variants'].items() if v != 'detected') or 'all raise StoreCorruptedError')
    run('kill -9 during `ragnb index --ray --shards 2`', lambda: faults.kill_during_ray_index(trials=a.ray_kills),
        lambda r: f"each shard old or new; final run equals a clean build: {r['final_state_equal']}")
    run('damaged -wal of a killed writer', faults.wal_damage,
        lambda r: ', '.join(f"{k}: {'/'.join(v)}" for k, v in r['outcomes'].items()))
    run('MCP tools while a writer churns', faults.server_during_writer,
        lambda r: f"{r['generations']} generations seen; errors {len(r['errors'])}, short answers {r['short']}")
    run('disk full during the commit', faults.disk_full_at_commit,
        lambda r: r.get('skipped') or f"free space swept over a {r['commit_bytes']} B commit; "
                                      f"{r['full']} refused, the rest fitted")
    run('disk full (tmpfs)', faults.disk_full,
        lambda r: r.get('skipped') or f"message: {r['message'][0][-95:] if r['message'] else '-'}")
    run('hostile entries in a folder', faults.hostile_entries,
        lambda r: 'failed: ' + ', '.join(r['failed']) if r.get('failed') else 'each reported, the run completes')
    run('files that change while read', faults.entries_that_change_while_read,
        lambda r: 'the run hung' if r['hung'] else 'failed: ' + ', '.join(r['failed']) if r['failed'] else
                  'a FIFO swapped in after the listing skipped, a growing file read to its size at open')
    run('hostile HyDE endpoint', faults.hostile_hyde,
        lambda r: 'failed: ' + ', '.join(r['failed']) if r['failed'] else
                  'redirect, drip, 2 MB, 5 MB chunked, gzip bomb, key echo: refused')
    run('`ragnb check` while a writer commits', lambda: faults.check_during_writer(runs=40, slow_s=0.3),
        lambda r: f"{r['generations']} generations checked; false alarms {len(r['alarms'])}, errors {len(r['errors'])}")
    run('silent bit rot in the index file', lambda: faults.silent_bit_rot(flips=20),
        lambda r: 'failed: ' + ', '.join(r['failed']) if r['failed'] else
                  'flips with the mtime set back refused, a 1e30 vector reported by check')
    run('a folder that cannot be read', faults.unreadable_folders,
        lambda r: r.get('skipped') or ', '.join(f"{m}: {'kept' if c['kept'] else 'LOST'}"
                                                for m, c in r['cases'].items()))
    run('a pinned client asks with another tenant\'s words', faults.pinned_tenant_oracle,
        lambda r: f"{r['words']} words of tenant globex's files; answers unlike a store of acme's own: {r['lost']}")
    run('one reader, RSS and fds', lambda: faults.reader_resources(queries=a.resource_queries),
        lambda r: f"RSS growth {r['rss_growth_mb']} MB, fds {r['fds_before']} → {r['fds_after']}")
    print('\n| case | tried | survived | lost | notes | seconds |')
    print('|---|---|---|---|---|---|')
    for name, t, s, l, note, sec in rows: print(f'| {name} | {t} | {s} | {l} | {note} | {sec:.0f} |')
    if a.json: print(json.dumps(details, indent=1, default=str))
    return 0 if all(l == 0 for _, _, _, l, _, _ in rows) else 1


if __name__ == '__main__':
    sys.exit(main())
