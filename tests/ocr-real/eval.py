#!/usr/bin/env python3
"""Reads every image of a real-image OCR set and scores the lines read.

    tests/ocr-real/eval.py [--cmd 'COMMAND {image}'] [--min-char A]
                           [--min-exact E] [--jobs N] [-v] [DIR]

DIR (default tests/data/ocr-real) holds images (.png, .jpg) and beside
each one NAME.txt, its ground truth: one text line per line; lines starting
with '#' are comments (they name the text left out of the truth); a line
starting with '~' is compared without case (stylised lettering whose case
cannot be told).

COMMAND (default: pipelines/ocr-file.sh {image} {out}) is run once per
image through /bin/sh; {image} is replaced by the image's path and {out}
by a scratch file name.  Every line it prints on stdout is one text line
read; only the part before the first tab counts (ocr-file.sh prints
text<TAB>score<TAB>corners; tesseract prints plain lines).

Scoring.  Texts are normalised (Unicode NFC, typographic quotes to ASCII
quotes, the ellipsis character to '...', runs of spaces to one space,
stripped).  Ground-truth lines and lines read are matched one to one by
greedy best assignment: repeatedly the pair with the smallest edit
distance relative to the ground-truth line's length is taken (ties: the
earlier line).  A ground-truth line left without a partner counts as fully
wrong.  Lines read that match no ground-truth line are not counted (the
truth leaves out some text on purpose).  Per line, character accuracy =
1 - min(distance, length) / length; an image's and the whole set's
character accuracy are 1 - sum(min(distance, length)) / sum(length) over
their lines, and "exact" is the fraction of ground-truth lines read
exactly.  Prints one row per image and the overall figures; exits 1 when
--min-char or --min-exact is given and not reached, 2 on a usage error or
when the command fails on an image.
"""

import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile
import unicodedata

IMAGE_EXTS = ('.png', '.jpg', '.jpeg')
SUBST = {'\u2019': "'", '\u2018': "'", '\u201c': '"', '\u201d': '"',
         '\u2026': '...', '\u00a0': ' '}


def normalise(text):
    text = unicodedata.normalize('NFC', text)
    for a, b in SUBST.items():
        text = text.replace(a, b)
    return ' '.join(text.split())


def distance(a, b):
    """Levenshtein distance between strings a and b."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1,
                           prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def read_truth(path):
    """[(text, nocase)] of a ground-truth file."""
    lines = []
    with open(path, encoding='utf-8') as f:
        for raw in f:
            raw = raw.rstrip('\n')
            if not raw.strip() or raw.startswith('#'):
                continue
            nocase = raw.startswith('~')
            text = normalise(raw[1:] if nocase else raw)
            if text:
                lines.append((text, nocase))
    return lines


def match(truth, read):
    """One (truth line, read line or None, distance) per truth line."""
    pairs = []
    for i, (t, nocase) in enumerate(truth):
        for j, r in enumerate(read):
            d = distance(t.lower(), r.lower()) if nocase else distance(t, r)
            pairs.append((d / len(t), i, j, d))
    pairs.sort()
    used_t, used_r, result = set(), set(), {}
    for _, i, j, d in pairs:
        if i in used_t or j in used_r:
            continue
        used_t.add(i)
        used_r.add(j)
        result[i] = (read[j], d)
    out = []
    for i, (t, _) in enumerate(truth):
        r, d = result.get(i, (None, len(t)))
        out.append((t, r, min(d, len(t))))
    return out


def run_one(cmd, image):
    with tempfile.TemporaryDirectory() as tmp:
        line = cmd.replace('{image}', image).replace(
            '{out}', os.path.join(tmp, 'out.png'))
        proc = subprocess.run(line, shell=True, capture_output=True,
                              text=True, errors='replace')
    if proc.returncode != 0:
        raise RuntimeError('%s: exit %d: %s' % (line, proc.returncode,
                                                 proc.stderr.strip()[-500:]))
    read = []
    for raw in proc.stdout.splitlines():
        text = normalise(raw.split('\t', 1)[0])
        if text:
            read.append(text)
    return read


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('dir', nargs='?',
                    default=os.path.join(root, 'tests', 'data', 'ocr-real'))
    ap.add_argument('--cmd', default=os.path.join(root, 'pipelines',
                                                  'ocr-file.sh') +
                    ' {image} {out}')
    ap.add_argument('--min-char', type=float)
    ap.add_argument('--min-exact', type=float)
    ap.add_argument('--jobs', type=int, default=1)
    ap.add_argument('-v', '--verbose', action='store_true',
                    help='print every line that is not read exactly')
    args = ap.parse_args()

    images = sorted(f for f in os.listdir(args.dir)
                    if f.lower().endswith(IMAGE_EXTS))
    if not images:
        print('eval.py: no image in %s' % args.dir, file=sys.stderr)
        return 2
    truths = {}
    for name in images:
        gt = os.path.join(args.dir, os.path.splitext(name)[0] + '.txt')
        if not os.path.isfile(gt):
            print('eval.py: %s has no ground truth %s' % (name, gt),
                  file=sys.stderr)
            return 2
        truths[name] = read_truth(gt)

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {name: pool.submit(run_one, args.cmd,
                                     os.path.join(args.dir, name))
                   for name in images}
        try:
            reads = {name: f.result() for name, f in futures.items()}
        except RuntimeError as e:
            print('eval.py: %s' % e, file=sys.stderr)
            return 2

    tot_len = tot_err = tot_lines = tot_exact = 0
    print('%-28s %5s %6s %6s' % ('image', 'lines', 'char', 'exact'))
    for name in images:
        rows = match(truths[name], reads[name])
        n = sum(len(t) for t, _, _ in rows)
        err = sum(d for _, _, d in rows)
        exact = sum(1 for _, _, d in rows if d == 0)
        tot_len += n
        tot_err += err
        tot_lines += len(rows)
        tot_exact += exact
        print('%-28s %5d %6.3f %6.3f' % (name, len(rows), 1 - err / n,
                                         exact / len(rows)))
        if args.verbose:
            for t, r, d in rows:
                if d:
                    print('    %r -> %r' % (t, r))
    char = 1 - tot_err / tot_len
    exact = tot_exact / tot_lines
    print('%-28s %5d %6.3f %6.3f' % ('ALL', tot_lines, char, exact))
    ok = True
    if args.min_char is not None and char < args.min_char:
        print('eval.py: character accuracy %.3f < %.3f' % (char,
                                                            args.min_char),
              file=sys.stderr)
        ok = False
    if args.min_exact is not None and exact < args.min_exact:
        print('eval.py: exact lines %.3f < %.3f' % (exact, args.min_exact),
              file=sys.stderr)
        ok = False
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
