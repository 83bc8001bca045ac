#!/usr/bin/env python3
"""Mutation fuzzing of the scenario loader: random edits of tests/bad_input/valid/base.yaml.

Every run must end with exit 0 or exit 2 plus an `error:` line, and never with a crash or a
sanitizer report; the exit status is 1 when any run did not. scripts/setup.sh test runs a fixed
seed against the sanitizer build; to run more cases against one yourself:

    cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug -DDTSIM_SANITIZE=address,undefined
    ninja -C build-sanitize dtsim
    tests/fuzz/mutate_scenarios.py build-sanitize/cli/dtsim SEED CASES

FUZZ_BASE=scenarios/FILE.yaml starts from another scenario. Each case is written to a scratch
folder of the run, removed at its end; failing inputs are kept in a folder of their own,
dtsim-fuzz-crashes-* in the temp folder, whose path the run prints. Seeds 7 (400 cases, normal build) and 11 (250 cases, ASan+UBSan with leak
detection) found nothing on 2026-11-29. From a 3D base (TP 2 with SP, CP 2, PP 2 interleaved,
ZeRO-1, TP overlap, FlashAttention) seed 23 (250 cases) found an internal failure for
interleaving without a pipeline, now bad input (tests/bad_input/interleaved_without_pipeline.yaml);
seed 29 (300 cases) and, from a Mixtral EP 4 base, seed 31 (200 cases) found nothing. Seed 41 (100 cases, ASan+UBSan) found, on 2026-12-05, a line starting with a
comma on which yaml-cpp's multi-document loader never ends (tests/bad_input/yaml_reads_as_nothing.yaml).
"""
import random, subprocess, sys, os, shutil, tempfile
random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
# FUZZ_BASE names another starting scenario (e.g. a 3D-parallel one from scenarios/).
base = open(os.environ.get('FUZZ_BASE') or os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'bad_input', 'valid', 'base.yaml')).read().splitlines()
dtsim = sys.argv[1]
tokens = ['0', '-1', '1e30', '.nan', 'null', '[]', '{}', '"x"', 'auto', '8GiB', '400Gbps', '1e-30us', '~', '&a', '*a', '!!binary', '? ', '- ', ': ', '{a: [1, {b: 2}]}', "'", '"', '\\t', '%YAML 1.2', '---', '...', '|', '>']
crashes = 0
scratch = tempfile.mkdtemp(prefix=f'dtsim-test-fuzz-{os.getpid()}-')
kept = None  # the folder of failing inputs, made at the first one
try:
    for i in range(int(sys.argv[3]) if len(sys.argv) > 3 else 300):
        lines = list(base)
        for _ in range(random.randint(1, 4)):
            op = random.random()
            k = random.randrange(len(lines))
            if op < 0.3 and ':' in lines[k]:
                key = lines[k].split(':')[0]
                lines[k] = key + ': ' + random.choice(tokens)
            elif op < 0.45:
                del lines[k]
            elif op < 0.6:
                lines.insert(k, lines[random.randrange(len(lines))])
            elif op < 0.75:
                lines[k] = ' ' * random.randint(0, 6) + lines[k].lstrip()
            elif op < 0.9:
                pos = random.randrange(len(lines[k]) + 1)
                lines[k] = lines[k][:pos] + random.choice(tokens) + lines[k][pos:]
            else:
                lines[k] = lines[k][::-1]
        path = os.path.join(scratch, 'case.yaml')
        open(path, 'w').write('\n'.join(lines) + '\n')
        verb = random.choice(['simulate', 'validate'])
        args = [dtsim, verb, path] + (['--engine', 'analytic'] if verb == 'simulate' and random.random() < 0.7 else [])
        try:
            r = subprocess.run(args, capture_output=True, text=True, timeout=60, env=dict(os.environ, ASAN_OPTIONS='detect_leaks=1'))
            bad = r.returncode not in (0, 2) or 'Sanitizer' in r.stderr or 'runtime error' in r.stderr
            if r.returncode == 2 and 'error:' not in r.stderr: bad = True
        except subprocess.TimeoutExpired:
            # A run that never ends is a bad outcome like a crash (a 1.3B scenario validates in
            # well under a second, even under the sanitizers).
            r = subprocess.CompletedProcess(args, 'timeout', '', 'no answer within 60 s')
            bad = True
        if bad:
            crashes += 1
            if kept is None:
                kept = tempfile.mkdtemp(prefix='dtsim-fuzz-crashes-')
            open(os.path.join(kept, f'case{i}.yaml'), 'w').write('\n'.join(lines) + '\n')
            print(f'case {i}: rc={r.returncode} verb={verb}\n{r.stderr[-600:]}')
finally:
    shutil.rmtree(scratch, ignore_errors=True)
print(f'{crashes} bad outcomes' + (f'; their inputs are in {kept}' if kept else ''))
sys.exit(1 if crashes else 0)
