# Generates the bad presets (*.toml) here from the shipped presets, one thing broken in each.
# Then bless the expected messages and read every one:
#   FLASHPATH_BLESS_BAD_PRESETS=1 cargo test -p flashpath-core --test bad_presets
import os, re, random
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../../../.."))
out = os.path.dirname(os.path.abspath(__file__))
D = open(f"{root}/presets/devices/emmc51-hs400-32g.toml").read()
H = open(f"{root}/presets/hosts/sprd-sc9863a.toml").read()

def find(base, dotted):
    table, key = dotted.rsplit(".", 1) if "." in dotted else ("", dotted)
    lines = base.split("\n")
    cur = ""
    hits = []
    for i, l in enumerate(lines):
        s = l.strip()
        if s.startswith("["):
            cur = s.strip("[]").strip()
            continue
        m = re.match(r"([A-Za-z0-9_]+)\s*=", s)
        if m and cur == table and m.group(1) == key:
            hits.append(i)
    assert len(hits) == 1, dotted
    return lines, hits[0]

def setv(base, dotted, value):
    lines, i = find(base, dotted)
    key = dotted.rsplit(".", 1)[-1]
    lines[i] = f"{key} = {value}"
    return "\n".join(lines)

def raw_line(base, dotted, line):
    lines, i = find(base, dotted)
    lines[i] = line
    return "\n".join(lines)

def add_after(base, dotted, extra):
    lines, i = find(base, dotted)
    lines.insert(i + 1, extra)
    return "\n".join(lines)

def drop(base, dotted):
    lines, i = find(base, dotted)
    del lines[i]
    return "\n".join(lines)

def drop_section(base, header):
    lines = base.split("\n")
    i = lines.index(header)
    j = i + 1
    while j < len(lines) and not lines[j].startswith("["):
        j += 1
    return "\n".join(lines[:i] + lines[j:])

def sub(base, old, new):
    assert base.count(old) == 1, old
    return base.replace(old, new)

cases = {
 # device: geometry
 "device-zero-channels": setv(D, "geometry.channels", "0"),
 "device-zero-dies": setv(D, "geometry.dies_per_channel", "0"),
 "device-zero-planes": setv(D, "geometry.planes_per_die", "0"),
 "device-zero-blocks-per-plane": setv(D, "geometry.blocks_per_plane", "0"),
 "device-page-larger-than-block": setv(D, "geometry.pages_per_block", "1"),
 "device-page-size-huge": setv(D, "geometry.page_size", '"8MiB"'),
 "device-page-size-not-4k-multiple": setv(D, "geometry.page_size", '"6KiB"'),
 "device-capacity-above-raw": setv(D, "geometry.capacity", '"64GiB"'),
 "device-capacity-not-sector-multiple": setv(D, "geometry.capacity", '"31268536321B"'),
 "device-capacity-no-over-provisioning": setv(D, "geometry.capacity", '"35000000000B"'),
 "device-channels-u32-max": setv(D, "geometry.channels", "4294967295"),
 "device-planes-u32-max": setv(D, "geometry.planes_per_die", "4294967295"),
 "device-pages-per-block-u32-max": setv(D, "geometry.pages_per_block", "4294967295"),
 "device-blocks-per-plane-u32-max": setv(D, "geometry.blocks_per_plane", "4294967295"),
 # device: timings
 "device-t-read-zero": setv(D, "nand.t_read", '"0us"'),
 "device-t-prog-below-t-read": setv(D, "nand.t_prog", '"40us"'),
 "device-t-read-10s": setv(D, "nand.t_read", '"10s"'),
 "device-t-read-unitless": setv(D, "nand.t_read", '"50"'),
 "device-t-read-furlongs": setv(D, "nand.t_read", '"50 furlongs"'),
 "device-t-read-negative": setv(D, "nand.t_read", '"-54us"'),
 "device-t-erase-below-t-prog": setv(D, "nand.t_erase", '"1ms"'),
 "device-channel-rate-not-per-second": setv(D, "nand.channel_rate", '"400MB"'),
 "device-channel-rate-zero": setv(D, "nand.channel_rate", '"0MB/s"'),
 "device-fw-per-command-2s": setv(D, "controller.fw_per_command", '"2s"'),
 "device-missing-reuse-page-register": drop(D, "controller.reuse_page_register"),
 "device-reuse-page-register-not-bool": setv(D, "controller.reuse_page_register", "\"no\""),
 # device: map cache, buffer, ftl
 "device-map-segment-larger-than-page": setv(D, "map_cache.entries_per_segment", "1000000"),
 "device-map-entry-size-zero": setv(D, "map_cache.entry_size", '"0B"'),
 "device-zero-dirty-limit": setv(D, "map_cache.dirty_limit", "0"),
 "device-write-buffer-zero": setv(D, "write_buffer.size", '"0KiB"'),
 "device-copy-rate-tiny": setv(D, "write_buffer.copy_rate", '"10KB/s"'),
 "device-gc-threshold-one": setv(D, "ftl.gc_threshold_blocks", "1"),
 "device-unknown-gc-copy": setv(D, "ftl.gc_copy", '"dma"'),
 # device: ext_csd (discard registers)
 "device-erase-group-def-two": setv(D, "ext_csd.erase_group_def", "2"),
 "device-hc-erase-grp-size-zero": setv(D, "ext_csd.hc_erase_grp_size", "0"),
 "device-trim-mult-above-byte": setv(D, "ext_csd.trim_mult", "256"),
 "device-erase-timeout-mult-string": setv(D, "ext_csd.erase_timeout_mult", '"1"'),
 "device-csd-erase-grp-mult-above-5-bits": setv(D, "ext_csd.csd_erase_grp_mult", "32"),
 "device-missing-trim-mult": drop(D, "ext_csd.trim_mult"),
 "device-unknown-field-in-ext-csd": add_after(D, "ext_csd.trim_mult", "sec_trim_mult = 2"),
 # device: structure
 "device-unknown-top-level-field": add_after(D, "interface", 'vendor = "acme"'),
 "device-unknown-field-in-nand": add_after(D, "nand.t_erase", 't_read_fast = "20us"'),
 "device-unknown-table": D + '\n[cache]\nsize = "1MiB"\n',
 "device-missing-t-prog": drop(D, "nand.t_prog"),
 "device-missing-ftl-table": drop_section(D, "[ftl]"),
 "device-wrong-kind": setv(D, "kind", '"host"'),
 "device-unknown-interface": setv(D, "interface", '"nvme"'),
 # device: TOML and types
 "device-unterminated-string": setv(D, "nand.t_read", '"54us'),
 "device-unclosed-table-header": sub(D, "\n[nand]\n", "\n[nand\n"),
 "device-duplicate-key": add_after(D, "geometry.channels", "channels = 4"),
 "device-integer-for-string": setv(D, "nand.t_read", "54"),
 "device-string-for-integer": setv(D, "geometry.channels", '"2"'),
 "device-huge-integer": setv(D, "geometry.channels", "99999999999999999999"),
 "device-channels-above-u32": setv(D, "geometry.channels", "5000000000"),
 "device-negative-channels": setv(D, "geometry.channels", "-2"),
 "device-empty": "",
 # host: cpu
 "host-zero-cores": setv(H, "cpu.cores", "0"),
 "host-too-many-cores": setv(H, "cpu.cores", "300"),
 "host-irq-core-out-of-range": setv(H, "cpu.irq_core", "8"),
 "host-cores-above-u32": setv(H, "cpu.cores", "4294967296"),
 "host-negative-irq-core": setv(H, "cpu.irq_core", "-1"),
 # host: costs
 "host-wakeup-5s": setv(H, "costs.wakeup", '"5s"'),
 "host-syscall-unitless": setv(H, "costs.syscall", '"6"'),
 "host-irq-furlongs": setv(H, "costs.irq", '"3 furlongs"'),
 "host-complete-negative": setv(H, "costs.complete", '"-2us"'),
 "host-cmd13-integer-for-string": setv(H, "mmc.cmd13", "3"),
 # host: block, mmc, bus
 "host-unknown-scheduler": setv(H, "block.scheduler", '"bfq"'),
 "host-nr-requests-zero": setv(H, "block.nr_requests", "0"),
 "host-max-sectors-kb-too-small": setv(H, "block.max_sectors_kb", "2"),
 "host-huge-integer": setv(H, "block.nr_requests", "99999999999999999999"),
 "host-unknown-driver": setv(H, "mmc.driver", '"mmc-turbo"'),
 "host-driver-not-modelled": setv(H, "mmc.driver", '"mmc-cqe"'),
 "host-unknown-cmd13-mode": setv(H, "mmc.cmd13_mode", '"poll"'),
 "host-busy-detect-not-bool": setv(H, "mmc.busy_detect", '"yes"'),
 "host-data-rate-zero": setv(H, "bus.data_rate", '"0MB/s"'),
 "host-cmd-clock-unitless": setv(H, "bus.cmd_clock", '"200"'),
 "host-ncr-clocks-absurd": setv(H, "bus.ncr_clocks", "5000"),
 "host-bounce-buffer-below-max-sectors": add_after(H, "mmc.cmd23", 'bounce_buffer = "64KiB"'),
 "host-bounce-buffer-odd-size": add_after(H, "mmc.cmd23", 'bounce_buffer = "1000B"'),
 "host-max-busy-timeout-not-whole-ms": setv(H, "mmc.max_busy_timeout", '"10.5ms"'),
 "host-max-busy-timeout-2h": setv(H, "mmc.max_busy_timeout", '"7200s"'),
 "host-max-busy-timeout-unitless": setv(H, "mmc.max_busy_timeout", '"10737"'),
 "host-need-rsp-busy-not-bool": setv(H, "mmc.need_rsp_busy", '"no"'),
 # host: structure
 "host-wrong-kind": setv(H, "kind", '"device"'),
 "host-unknown-top-level-field": add_after(H, "kind", 'vendor = "unisoc"'),
 "host-unknown-field-in-mmc": add_after(H, "mmc.cmd23", "hsq = true"),
 "host-missing-wakeup": drop(H, "costs.wakeup"),
 "host-missing-bus-table": drop_section(H, "[bus]"),
 "host-sources-not-array": re.sub(r'sources = \[\n(.*\n)*?\]\n', 'sources = "linux-mmc 2019-11"\n', H, count=1),
 "host-description-integer": setv(H, "description", "9863"),
 "host-missing-kernel": drop(H, "kernel"),
 "host-kernel-not-a-version": setv(H, "kernel", '"5.4.0-rc3"'),
 "host-kernel-too-old": setv(H, "kernel", '"2.4"'),
 "host-kernel-number": setv(H, "kernel", "5.4"),
 # host: TOML
 "host-unterminated-string": setv(H, "bus.mode", '"HS400ES'),
 "host-unclosed-table-header": sub(H, "\n[mmc]\n", "\n[mmc\n"),
 "host-empty": "",
}
assert cases["host-sources-not-array"] != H
os.makedirs(out, exist_ok=True)
for name, text in cases.items():
    open(f"{out}/{name}.toml", "w").write(text)
r = random.Random(9863)
for name in ["device-binary-garbage", "host-binary-garbage"]:
    open(f"{out}/{name}.toml", "wb").write(bytes(r.randrange(256) for _ in range(512)))
print(len(cases) + 2)
