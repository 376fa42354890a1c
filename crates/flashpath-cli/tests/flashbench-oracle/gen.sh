#!/bin/sh
# Regenerates the oracle fixtures from flashbench's own code.
#
#   gen.sh FLASHBENCH_SRC
#
# FLASHBENCH_SRC: a checkout of flashbench at the commit Debian packages as version 62,
# bradfa/flashbench 2e30b19 ("flashbench: use only one out of 12 erase blocks", the
# 62nd commit; Debian's binary prints the same messages and takes --findfat). It builds
# flashbench.c and vm.c with fake_dev.c in place of dev.c (no device: each access is
# logged and gets a time computed from its index and position), runs every line of
# cases.txt, and writes cases/NAME.txt; and builds formats.c for formats.txt and
# lfsr.txt. Needs gcc on x86-64 (the float behaviour flashbench's -i output shows is
# x86-64's). The committed files were made with gcc 12.2 and glibc 2.36 (Debian 12),
# whose getopt messages the parse cases hold. The flashbench sources are not part of
# flashpath: fetch them (git clone https://github.com/bradfa/flashbench; git checkout
# 2e30b19).
set -eu
src=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$src"/flashbench.c "$src"/vm.c "$src"/vm.h "$src"/dev.h "$work"/
cp "$here"/fake_dev.c "$here"/formats.c "$work"/
cd "$work"
# flashbench 62 writes the scatter output "to stdout" with fdopen(0, "w"): to file
# descriptor 0 (fixed upstream in 7ec66d0, fdopen(1, "w")). flashpath writes it to
# standard output in program order, as the fixed flashbench does on a terminal; the
# oracle does the same with one stream.
grep -q 'return fdopen(0, "w"); /\* write to stdout \*/' flashbench.c
sed -i 's|return fdopen(0, "w"); /\* write to stdout \*/|return stdout;|' flashbench.c
cflags="-O2 -Wno-unused-result -Wno-format-truncation"
gcc $cflags -o flashbench flashbench.c vm.c fake_dev.c -lrt
gcc $cflags -o formats formats.c fake_dev.c -lrt
./formats > "$here"/formats.txt
./formats lfsr > "$here"/lfsr.txt
mkdir -p "$here"/cases
rm -f "$here"/cases/*.txt
grep -v '^#' "$here"/cases.txt | grep -v '^$' | while IFS='|' read -r name size args; do
	name=$(echo $name)
	size=$(echo $size)
	out="$here/cases/$name.txt"
	rm -f log out.bin
	set +e
	# shellcheck disable=SC2086
	FB_SIZE=$size FB_LOG=log PATH="$work:$PATH" flashbench $args > stdout 2> stderr
	rc=$?
	set -e
	[ -s log ] || echo "accesses 0 fnv cbf29ce484222325" > log
	{
		echo "args: $(echo $args)"
		echo "size: $size"
		echo "status: $rc"
		echo "stdout $(wc -c < stdout)"
		cat stdout
		echo
		echo "stderr $(wc -c < stderr)"
		cat stderr
		echo
		if [ -f out.bin ]; then
			echo "file $(wc -c < out.bin)"
			cat out.bin
			echo
		fi
		cat log
	} > "$out"
done
