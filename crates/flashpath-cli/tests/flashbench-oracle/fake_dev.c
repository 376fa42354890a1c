/*
 * A stand-in for flashbench's dev.c (same interface, dev.h), for checking flashpath's
 * port of flashbench against flashbench's own code: no device is opened; each timed
 * access takes a time that is a fixed function of its index, direction, position and
 * length (flashpath's oracle tests compute the same function). At exit FB_LOG gets the
 * number of accesses, the FNV-1a 64 digest of their lines ("R pos len 0" or
 * "W pos len fill", pos before flashbench's wrap), and the first 200 lines.
 * Written for flashpath; not part of flashbench.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "dev.h"

#define MAX_BUFSIZE (64 * 1024 * 1024)

static unsigned long long seq;
static const char *log_name;
static unsigned long long digest = 0xcbf29ce484222325ull;
static char head[200][64];

static void write_log(void)
{
	FILE *f = fopen(log_name, "w");
	unsigned long long i;

	if (!f)
		return;
	fprintf(f, "accesses %llu fnv %016llx\n", seq, digest);
	for (i = 0; i < seq && i < 200; i++)
		fputs(head[i], f);
	fclose(f);
}

static unsigned long long mix(unsigned long long x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Mostly microseconds, some nanoseconds, milliseconds and seconds. */
static long long fake_ns(unsigned long long i, int fill, unsigned long long pos,
			 unsigned long long len)
{
	unsigned long long h = mix(i ^ mix(pos ^ mix(len ^ (unsigned long long)(fill + 1))));
	unsigned long long r = h / 20;

	switch (h % 20) {
	case 0:
		return 1 + r % 999;
	case 13: case 14: case 15: case 16: case 17: case 18:
		return 1000000 + r % 999000000;
	case 19:
		return 1000000000 + r % 9000000000ull;
	default:
		return 1000 + r % 999000;
	}
}

static long long timed(int fill, off_t pos, size_t size)
{
	if (size > MAX_BUFSIZE)
		return -ENOMEM;
	char line[64];
	const char *c;

	snprintf(line, sizeof(line), "%c %lld %llu %d\n", fill < 0 ? 'R' : 'W',
		 (long long)pos, (unsigned long long)size, fill < 0 ? 0 : fill);
	for (c = line; *c; c++)
		digest = (digest ^ (unsigned char)*c) * 0x100000001b3ull;
	if (seq < 200)
		snprintf(head[seq], sizeof(head[seq]), "%s", line);
	return fake_ns(seq++, fill, (unsigned long long)pos, size);
}

long long time_read(struct device *dev, off_t pos, size_t size)
{
	return timed(-1, pos, size);
}

long long time_write(struct device *dev, off_t pos, size_t size, enum writebuf which)
{
	static const int fill[] = { 0x00, 0xff, 0x5a };
	return timed(fill[which], pos, size);
}

long long time_erase(struct device *dev, off_t pos, size_t size)
{
	fprintf(stderr, "fake_dev: erase is not used by flashbench's tests\n");
	exit(99);
}

int setup_dev(struct device *dev, const char *filename)
{
	const char *size = getenv("FB_SIZE");

	dev->fd = -1;
	dev->size = size ? strtoll(size, NULL, 0) : 1ll << 30;
	log_name = getenv("FB_LOG");
	if (log_name)
		atexit(write_log);
	return 0;
}
