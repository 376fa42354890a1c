#!/usr/bin/env python3
"""libFuzzer dictionaries for the targets that simulate, made from the repository each
time so that they follow it:

- set_option: every field the shipped presets set, as `device.<field>=` or
  `host.<field>=`;
- fio_run: every option fio 3.33 knows, as `--<name>=` (the parser's own table,
  crates/flashpath-fio/src/parse/table/options.tsv), and the words its word options
  take;

each with values at the edges of what fields and options take.

usage: python3 fuzz/dict.py set_option > set_option.dict
       cargo +nightly fuzz run ... set_option CORPUS -- -dict=set_option.dict ...
"""
import glob
import os
import sys
import tomllib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# Values at the edges: zero, negative, huge, units, non-numbers, the enums' words.
EDGES = ["0", "1", "-1", "true", "false", "0B", "1GiB", "18446744073709551615",
         "4294967296", "0us", "1ns", "1e30", "nan", "dedicated", "shared"]


def preset_fields():
    def walk(prefix, table, out):
        for key, value in table.items():
            if key in ("estimates", "sources"):
                continue  # provenance tables, not settable fields
            if isinstance(value, dict):
                walk(f"{prefix}{key}.", value, out)
            else:
                out.add(f"{prefix}{key}")

    keys = set()
    for kind in ("device", "host"):
        for path in glob.glob(os.path.join(ROOT, "presets", f"{kind}s", "*.toml")):
            with open(path, "rb") as f:
                walk(f"{kind}.", tomllib.load(f), keys)
    return [f"{k}=" for k in sorted(keys)]


def fio_options():
    table = os.path.join(ROOT, "crates/flashpath-fio/src/parse/table/options.tsv")
    names, words = set(), set()
    with open(table) as f:
        for line in f:
            if line.startswith("#"):
                continue
            cols = line.rstrip("\n").split("\t")
            names.add(cols[0])
            names.update(a for a in cols[1].split(",") if a)  # its aliases
            words.update(w for w in cols[7].split("|") if w)  # a word option's words
    return [f"--{n}=" for n in sorted(names)] + sorted(words)


TARGETS = {"set_option": preset_fields, "fio_run": fio_options}
if len(sys.argv) != 2 or sys.argv[1] not in TARGETS:
    sys.exit(f"usage: dict.py {'|'.join(TARGETS)}")
for entry in TARGETS[sys.argv[1]]() + EDGES:
    print('"' + entry.replace("\\", "\\\\").replace('"', '\\"') + '"')
