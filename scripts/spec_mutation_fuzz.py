"""Spec mutation fuzzing of the local commands: each spec in ``models/`` is mutated at random
(wrong types, missing required keys, unknown keys, misspelt op/layer/activation names, negative
and zero sizes, shape mismatches, cycles, dangling inputs, duplicate names, bad dtypes, YAML
anchors/aliases/merge keys, huge numbers, NaN strings, unicode names, empty files, a directory
instead of a file, binary junk, truncation) and put through ``validate``, ``inspect``, ``train
--steps 2`` and, where validate passes, ``export``, each as a real subprocess. It flags:

- ``traceback``: a Python traceback or an ``internal error`` line (a bug that escaped the checks);
- ``passes-then-fails``: validate exits 0 on a spec that ``train``/``export``/``inspect`` then
  rejects (validation should have said so; a failure with the data's own message is still flagged);
- ``no-location``: an error about the spec's contents whose line names no ``FILE:LINE``;
- ``long-message``: one message over 2 lines on stderr (several problems, one line each, are fine);
- ``hang``: a command running over 60 s;
- ``silent``: a non-zero exit with nothing on stderr, or a usage exit (2) for a spec problem.

    PYTHONPATH=. python scripts/spec_mutation_fuzz.py [--seed 0] [--count 60] [--jobs 2]
        [--model digits_mlp] [--kind cycle] [--keep DIR]

Mutated specs are written into a scratch copy of ``models/`` (so data paths resolve); with
``--keep DIR`` each flagged one is kept there with its commands and outputs. Exit 1 when anything
was flagged. The mutations are seeded: ``--seed S --count N`` repeats exactly.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
HANG_S = 60

# --- the mutations: each takes (tree, rng) and returns (new tree or raw text, what it did) ----------


def _paths(node, prefix=()):
    """Every (path, value) in a parsed spec, depth first."""
    yield prefix, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _get(tree, path):
    for p in path:
        tree = tree[p]
    return tree


def _set(tree, path, value):
    _get(tree, path[:-1])[path[-1]] = value


def _pick(rng, tree, pred):
    cands = [(p, v) for p, v in _paths(tree) if p and pred(p, v)]
    return rng.choice(cands) if cands else (None, None)


def _where(path) -> str:
    return ".".join(str(p) for p in path)


def m_wrong_type(tree, rng):
    path, v = _pick(rng, tree, lambda p, v: not isinstance(v, (dict, list)) or rng.random() < 0.3)
    if path is None:
        return None
    choices = [[1, 2], {"a": 1}, "abc", 7, 2.5, True, None, ""]
    new = rng.choice([c for c in choices if type(c) is not type(v)])
    _set(tree, path, new)
    return tree, f"{_where(path)}: {v!r} -> {new!r}"


def m_missing_key(tree, rng):
    path, _ = _pick(rng, tree, lambda p, v: isinstance(p[-1], str))
    if path is None:
        return None
    del _get(tree, path[:-1])[path[-1]]
    return tree, f"removed {_where(path)}"


def m_unknown_key(tree, rng):
    path, v = _pick(rng, tree, lambda p, v: isinstance(v, dict) and v)
    if path is None:
        return None
    key = rng.choice(list(v))
    bad = rng.choice([key + "s", key[:-1] or "x", key.upper(), "extra_" + str(key), "bogus"])
    if bad in v:
        return None
    v[bad] = v[key] if rng.random() < 0.5 else 1
    if rng.random() < 0.5:
        del v[key]
    return tree, f"{_where(path)}: added key {bad!r}"


def _misspell(rng, s: str) -> str:
    if len(s) < 2:
        return s + "x"
    i = rng.randrange(len(s))
    op = rng.choice(["drop", "swap", "case", "dup"])
    if op == "drop":
        return s[:i] + s[i + 1:]
    if op == "swap" and i + 1 < len(s):
        return s[:i] + s[i + 1] + s[i] + s[i + 2:]
    if op == "case":
        return s[:i] + s[i].swapcase() + s[i + 1:]
    return s[:i] + s[i] + s[i:]


def m_misspell(tree, rng):
    names = {"op", "layer", "activation", "initializer", "padding", "data_format", "optimizer",
             "builtin", "kernel_initializer", "schedule"}
    path, v = _pick(rng, tree, lambda p, v: isinstance(v, str) and p[-1] in names)
    if path is None:
        path, v = _pick(rng, tree, lambda p, v: isinstance(v, str))
        if path is None:
            return None
    new = _misspell(rng, v)
    _set(tree, path, new)
    return tree, f"{_where(path)}: {v!r} -> {new!r}"


def m_bad_size(tree, rng):
    path, v = _pick(rng, tree, lambda p, v: isinstance(v, int) and not isinstance(v, bool))
    if path is None:
        return None
    new = rng.choice([0, -1, -5, -(2**31)])
    _set(tree, path, new)
    return tree, f"{_where(path)}: {v} -> {new}"


def m_huge(tree, rng):
    path, v = _pick(rng, tree, lambda p, v: isinstance(v, (int, float)) and not isinstance(v, bool))
    if path is None:
        return None
    new = rng.choice([2**63, 2**64 + 1, 10**30, 1e308, 2**31, 10**400])
    _set(tree, path, new)
    return tree, f"{_where(path)}: {v} -> {new}"


def m_nan(tree, rng):
    path, v = _pick(rng, tree, lambda p, v: isinstance(v, (int, float)) and not isinstance(v, bool))
    if path is None:
        return None
    new = rng.choice([float("nan"), float("inf"), float("-inf"), "NaN", "nan", "inf", "1e"])
    _set(tree, path, new)
    return tree, f"{_where(path)}: {v} -> {new!r}"


def m_shape(tree, rng):
    path, v = _pick(rng, tree, lambda p, v: p[-1] in ("shape", "units", "filters", "kernel_size", "input_dim",
                                                       "output_dim", "axis", "num_heads", "key_dim") )
    if path is None:
        return None
    if isinstance(v, list):
        new = list(v)
        if new and rng.random() < 0.6:
            i = rng.randrange(len(new))
            new[i] = rng.choice([1, 3, 7, None, 0, -2])
        elif rng.random() < 0.5:
            new.append(rng.choice([1, 5]))
        else:
            new = new[:-1]
    else:
        new = rng.choice([1, 3, 7, 100, -1])
    _set(tree, path, new)
    return tree, f"{_where(path)}: {v!r} -> {new!r}"


def _nodes(tree):
    n = tree.get("nodes") if isinstance(tree, dict) else None
    return n if isinstance(n, dict) and n else None


def m_cycle(tree, rng):
    nodes = _nodes(tree)
    if not nodes or len(nodes) < 2:
        return None
    names = list(nodes)
    i = rng.randrange(len(names) - 1)
    j = rng.randrange(i + 1, len(names))
    a, b = names[i], names[j]
    if not isinstance(nodes[a], dict):
        return None
    ins = nodes[a].get("inputs")
    ins = list(ins) if isinstance(ins, list) else []
    if ins and rng.random() < 0.6:
        ins[rng.randrange(len(ins))] = b
    else:
        ins.append(b)
    nodes[a]["inputs"] = ins
    return tree, f"nodes.{a}.inputs: now reads the later node {b!r} (a cycle when {b} depends on {a})"


def m_dangling(tree, rng):
    nodes = _nodes(tree)
    if not nodes:
        return None
    a = rng.choice(list(nodes))
    if not isinstance(nodes[a], dict):
        return None
    bad = rng.choice([_misspell(rng, a), "nowhere", f"{a}:9", "^ghost", "ghost:0", ":1", ""])
    ins = nodes[a].get("inputs")
    ins = list(ins) if isinstance(ins, list) else []
    if ins:
        ins[rng.randrange(len(ins))] = bad
    else:
        ins = [bad]
    nodes[a]["inputs"] = ins
    return tree, f"nodes.{a}.inputs: a reference {bad!r}"


def m_dtype(tree, rng):
    path, v = _pick(rng, tree, lambda p, v: p[-1] in ("dtype", "to", "DstT", "out_type", "output_type", "label_dtype"))
    if path is None:
        return None
    new = rng.choice(["float33", "int", "object", "str", "Float32", "bfloat16", "qint8", "resource", "variant", 32])
    _set(tree, path, new)
    return tree, f"{_where(path)}: {v!r} -> {new!r}"


def m_unicode(tree, rng):
    nodes = _nodes(tree)
    if not nodes:
        return None
    a = rng.choice(list(nodes))
    new = rng.choice(["héllo", "名字", "a\u200bb", "x\u202eevil", "dense\u0000", "emoji😀", "a b", "1abc", "a/b"])
    items = [(new if k == a else k, v) for k, v in nodes.items()]
    if rng.random() < 0.5:  # also rename the references, so the name itself is what is judged
        for _, v in items:
            if isinstance(v, dict) and isinstance(v.get("inputs"), list):
                v["inputs"] = [new if x == a else x for x in v["inputs"]]
    tree["nodes"] = dict(items)
    return tree, f"nodes: renamed {a!r} -> {new!r}"


MUTATIONS = {
    "wrong-type": m_wrong_type, "missing-key": m_missing_key, "unknown-key": m_unknown_key,
    "misspell": m_misspell, "bad-size": m_bad_size, "huge": m_huge, "nan": m_nan, "shape": m_shape,
    "cycle": m_cycle, "dangling": m_dangling, "dtype": m_dtype, "unicode": m_unicode,
}

# --- text mutations: the YAML itself --------------------------------------------------------------


def t_duplicate(text, rng):
    lines = text.splitlines(keepends=True)
    idx = [i for i, ln in enumerate(lines) if re.match(r"^  [A-Za-z_][\w.-]*:", ln)]
    if not idx:
        return None
    i = rng.choice(idx)
    lines.insert(i + 1, lines[i])
    return "".join(lines), f"line {i + 1} duplicated (a duplicate key)"


def t_anchor(text, rng):
    lines = text.splitlines(keepends=True)
    kind = rng.choice(["alias-loop", "merge", "laughs", "undefined", "merge-list"])
    if kind == "laughs":
        bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
            f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
        return bomb + text, "billion laughs prepended"
    if kind == "undefined":
        return text.replace("inputs: [", "inputs: [*nothere, ", 1), "alias of an undefined anchor"
    idx = [i for i, ln in enumerate(lines) if re.match(r"^  [A-Za-z_][\w.-]*: \{", ln)]
    if len(idx) < 2:
        return None
    i, j = rng.sample(idx, 2)
    name_i = lines[i].split(":")[0].strip()
    if kind == "alias-loop":
        lines[i] = lines[i].replace(": {", ": &loop {", 1).rstrip("}\n") + ", self: *loop}\n"
        return "".join(lines), f"node {name_i} aliases itself (&loop ... *loop)"
    lines[i] = lines[i].replace(": {", ": &base {", 1)
    merge = "<<: *base" if kind == "merge" else "<<: [*base, {op: Identity}]"
    name_j = lines[j].split(":")[0].strip()
    lines[j] = lines[j].replace(": {", ": {" + merge + ", ", 1)
    return "".join(lines), f"node {name_j} merges {name_i} ({merge})"


def t_tag(text, rng):
    tag = rng.choice(["!!python/object/apply:os.system ['touch PWNED']", "!!binary aGVsbG8=", "!!set {a, b}",
                      "!custom 1", "!!timestamp 2001-12-14", "!!python/name:os.system"])
    return text.replace("name:", f"x_tag: {tag}\nname:", 1), f"a tagged value {tag!r}"


def t_truncate(text, rng):
    n = rng.randrange(1, max(2, len(text)))
    return text[:n], f"truncated at byte {n}"


def t_junk(text, rng):
    kind = rng.choice(["binary", "empty", "bom", "tabs", "nul", "scalar", "list", "utf16"])
    if kind == "binary":
        return bytes(rng.randrange(256) for _ in range(300)), "300 bytes of binary junk"
    if kind == "empty":
        return "", "empty file"
    if kind == "bom":
        return "\ufeff" + text, "UTF-8 BOM first"
    if kind == "tabs":
        return text.replace("  ", "\t", 3), "tabs for indentation"
    if kind == "nul":
        k = rng.randrange(len(text))
        return text[:k] + "\x00" + text[k:], f"a NUL byte at {k}"
    if kind == "utf16":
        return text.encode("utf-16"), "UTF-16 encoded"
    if kind == "scalar":
        return "42\n", "a scalar document"
    return "- a\n- b\n", "a list document"


TEXT_MUTATIONS = {"duplicate": t_duplicate, "anchor": t_anchor, "tag": t_tag, "truncate": t_truncate,
                  "junk": t_junk, "directory": None}

# --- running and judging --------------------------------------------------------------------------


def run(args, cwd, timeout=HANG_S):
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200", SPECFLOW_DEBUG="")
    env.pop("SPECFLOW_DEBUG")
    t0 = time.monotonic()
    try:
        p = subprocess.run([sys.executable, "-m", "specflow.cli", *args], cwd=cwd, env=env, capture_output=True,
                           text=True, errors="replace", timeout=timeout)
        return p.returncode, p.stdout, p.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired as e:
        return None, e.stdout or "", e.stderr or "", time.monotonic() - t0


def judge(cmd, rc, stdout, stderr, spec_name, located) -> list[str]:
    """What is wrong with one command's outcome (nothing: [])."""
    flags = []
    text = stdout + stderr if isinstance(stderr, str) else ""
    if rc is None:
        return ["hang"]
    if "Traceback (most recent call last)" in text or "internal error" in text:
        flags.append("traceback")
    if rc not in (0, 1, 2, 130):
        flags.append(f"exit-{rc}")
    if rc != 0:
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        if not lines:
            flags.append("silent")
        messages: list[list[str]] = []  # each error:/warning: line starts one; others continue it
        for ln in lines:
            if ln.startswith(("error:", "warning:")) or not messages:
                messages.append([ln])
            else:
                messages[-1].append(ln)
        if any(len(m) > 2 for m in messages):
            flags.append("long-message")
        if rc == 2:
            flags.append("usage-exit")
        errs = [ln for ln in lines if ln.startswith("error:")]
        if located and errs and not any(re.search(re.escape(spec_name) + r":\d+", ln) for ln in errs):
            flags.append("no-location")
    return flags


def one_case(i, model, seed, kinds, work: Path):
    rng = random.Random(f"{seed}:{i}:{model.name}")
    text = model.read_text()
    kind = rng.choice(kinds)
    located = False
    out_path = work / "models" / f"mut_{i}_{model.stem}.yaml"
    if kind in MUTATIONS:
        tree = yaml.safe_load(text)
        r = MUTATIONS[kind](copy.deepcopy(tree), rng)
        if r is None:
            return None
        new, what = r
        body = yaml.safe_dump(new, sort_keys=False, allow_unicode=True)
        out_path.write_text(body, encoding="utf-8")
        located = True
    elif kind == "directory":
        out_path.mkdir()
        what = "a directory instead of a file"
    else:
        r = TEXT_MUTATIONS[kind](text, rng)
        if r is None:
            return None
        new, what = r
        located = kind in ("duplicate", "anchor", "tag")
        if isinstance(new, bytes):
            out_path.write_bytes(new)
        else:
            out_path.write_text(new, encoding="utf-8")
    rel = str(out_path.relative_to(work))
    logdir = work / "runs" / f"mut_{i}"
    results = {}
    cmds = [("validate", [rel]), ("inspect", [rel, "--format", "json"])]
    # A spec without a train: section (or one a mutation removed) is not trained: refusing is right.
    written = out_path.read_bytes() if out_path.is_file() else b""
    trains = b"\ntrain:" in written or written.startswith(b"train:") or (kind != "directory" and not written)
    if trains:
        cmds.append(("train", [rel, "--steps", "2", "--logdir", str(logdir)]))
    for name, a in cmds:
        results[name] = run([name, *a], work)
    if trains and results["validate"][0] == 0 and results["train"][0] == 0:
        results["export"] = run(["export", rel, "--logdir", str(logdir), "--out", str(work / "exports" / f"mut_{i}")],
                                work)
    flags = {}
    for name, (rc, so, se, _) in results.items():
        f = judge(name, rc, so, se, out_path.name, located)
        if name == "inspect" and "no-location" in f:
            f.remove("no-location")  # inspect errors are validate's (checked there)
        if f:
            flags[name] = f
    vrc = results["validate"][0]
    if vrc == 0:
        for name in ("inspect", "train", "export"):
            if name in results and results[name][0] not in (0, None):
                flags.setdefault(name, []).append("passes-then-fails")
    elif trains and results["train"][0] == 0:
        flags.setdefault("train", []).append("validate-fails-train-passes")
    return {"case": i, "model": model.name, "kind": kind, "what": what, "file": rel, "flags": flags,
            "results": {k: {"rc": v[0], "stderr": v[2][-1500:], "secs": round(v[3], 1)} for k, v in results.items()},
            "path": out_path}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=60)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--model", action="append", help="only these models (stem), repeatable")
    ap.add_argument("--kind", action="append", help="only these mutations, repeatable: "
                    + ", ".join([*MUTATIONS, *TEXT_MUTATIONS]))
    ap.add_argument("--keep", type=Path, help="copy each flagged spec and its outputs here")
    ap.add_argument("--json", action="store_true", help="print every case as JSON lines")
    a = ap.parse_args(argv)
    models = sorted(MODELS.glob("*.yaml"))
    if a.model:
        models = [m for m in models if m.stem in a.model]
    kinds = a.kind or [*MUTATIONS, *TEXT_MUTATIONS]
    work = Path(tempfile.mkdtemp(prefix="specfuzz-"))
    try:
        shutil.copytree(MODELS, work / "models")
        jobs = [(i, models[i % len(models)]) for i in range(a.count)]
        with ThreadPoolExecutor(a.jobs) as pool:
            cases = [c for c in pool.map(lambda j: one_case(j[0], j[1], a.seed, kinds, work), jobs) if c]
        bad = [c for c in cases if c["flags"]]
        for c in cases:
            if a.json:
                print(json.dumps({k: v for k, v in c.items() if k != "path"}))
        for c in bad:
            print(f"#{c['case']} {c['model']} [{c['kind']}] {c['what']}")
            for name, f in c["flags"].items():
                r = c["results"][name]
                last = (r["stderr"].strip().splitlines() or ["(nothing)"])[-1][:300]
                print(f"    {name}: {', '.join(f)} (rc {r['rc']}, {r['secs']} s): {last}")
            if a.keep:
                a.keep.mkdir(parents=True, exist_ok=True)
                dst = a.keep / c["path"].name
                if c["path"].is_file():
                    shutil.copy(c["path"], dst)
                (a.keep / (c["path"].stem + ".json")).write_text(
                    json.dumps({k: v for k, v in c.items() if k != "path"}, indent=1))
        print(f"{len(cases)} mutated specs, {len(bad)} flagged "
              f"({', '.join(sorted({f for c in bad for fl in c['flags'].values() for f in fl})) or 'nothing'})")
        return 1 if bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
