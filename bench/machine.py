"""The machine a benchmark ran on, in one line, for the header of its table.

Timings here differ by CPU far more than by code: on one 2-core machine with AMX the Debian Reference's forward pass
ran at about 58 chunks/s with MiniLM, on a 2-core AMD EPYC with AVX2 alone at 13 (`bench/RESULTS.md`, 2026-12-07).
The instruction sets named are those that decide ragnb's runtimes: native bf16 (`ragnb.embed.cpu_has_bf16`: documents
in bf16, else f32) and int8 dot products (VNNI), which the int8 options lean on.

    python bench/machine.py
"""
import os, platform, re
from pathlib import Path

FLAGS = ('amx_bf16', 'avx512_bf16', 'avx512_vnni', 'avx_vnni', 'avx512f', 'avx2')


def cpu_model(cpuinfo:str) -> str:
    "The CPU's model name from /proc/cpuinfo's text, else the platform's processor string."
    m = re.search(r'^model name\s*:\s*(.+)$', cpuinfo, re.M)
    return ' '.join(m.group(1).split()) if m else platform.processor() or platform.machine()


def cpu_flags(cpuinfo:str) -> list[str]:
    "Those of `FLAGS` the CPU has, in `FLAGS`' order (best first)."
    m = re.search(r'^flags\s*:\s*(.+)$', cpuinfo, re.M)
    have = set(m.group(1).split()) if m else set()
    return [f for f in FLAGS if f in have]


def machine() -> str:
    "One line: cores this process may use, the CPU's model and its instruction sets that matter here."
    try: info = Path('/proc/cpuinfo').read_text()
    except OSError: info = ''
    cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
    from ragnb.embed import cpu_has_bf16          # the very test that picks bf16 or f32 for documents
    bf16 = 'native bf16' if cpu_has_bf16() else 'no native bf16'
    return f"{cores} cores, {cpu_model(info)} ({', '.join(cpu_flags(info)) or 'no AVX2'}; {bf16})"


if __name__ == '__main__':
    print(machine())
