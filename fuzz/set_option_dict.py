#!/usr/bin/env python3
"""A libFuzzer dictionary for the set_option target: every field the shipped presets
set, as `device.<field>=` or `host.<field>=`, and values at the edges of what fields
take. Made from presets/ each time, so it follows the presets.

usage: python3 fuzz/set_option_dict.py > set_option.dict
       cargo +nightly fuzz run ... set_option CORPUS -- -dict=set_option.dict ...
"""
import glob
import os
import tomllib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# Values at the edges: zero, negative, huge, units, non-numbers, the enums' words.
EDGES = ["0", "1", "-1", "true", "false", "0B", "1GiB", "18446744073709551615",
         "4294967296", "0us", "1ns", "1e30", "nan", "dedicated", "shared"]


def fields(prefix, table, out):
    for key, value in table.items():
        if key in ("estimates", "sources"):
            continue  # provenance tables, not settable fields
        if isinstance(value, dict):
            fields(f"{prefix}{key}.", value, out)
        else:
            out.add(f"{prefix}{key}")


keys = set()
for kind in ("device", "host"):
    for path in glob.glob(os.path.join(ROOT, "presets", f"{kind}s", "*.toml")):
        with open(path, "rb") as f:
            fields(f"{kind}.", tomllib.load(f), keys)
for key in sorted(keys):
    print(f'"{key}="')
for value in EDGES:
    print(f'"{value}"')
