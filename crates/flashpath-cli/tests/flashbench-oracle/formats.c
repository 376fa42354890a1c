/*
 * Prints flashbench's formatting of many values, from flashbench's own functions
 * (flashbench.c's format_ns, vm.c's format_value), for flashpath's oracle tests:
 * one line per value, tab-separated:
 *   value  format_ns  R_NS  R_BYTE  R_BPS  "%f" of value/1e6  "%g" of 512/(value/1000.0)
 * Built by gen.sh against flashbench's sources. Written for flashpath.
 */
#define main flashbench_main
#define lfsr flashbench_lfsr
#include "flashbench.c"
#undef lfsr
#undef main
#define lfsr vm_lfsr
#include "vm.c"
#undef lfsr

static unsigned long long mix(unsigned long long x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void row(long long v)
{
	char ns[8];
	res_t r = { .l = v };
	res_t a = format_value(r, R_NS, 0, 0);
	res_t b = format_value(r, R_BYTE, 0, 0);
	res_t c = format_value(r, R_BPS, 0, 0);

	format_ns(ns, v);
	printf("%lld\t%s\t%s\t%s\t%s\t%f\t%g\n", v, ns, a.s, b.s, c.s,
	       v / 1000000.0, 512 / (v / 1000.0));
}

/* Both LFSRs for every width: the first 64 values from 0 and a digest of 2^bits + 5 steps. */
static void lfsrs(void)
{
	unsigned int bits, k, v;

	for (bits = 8; bits <= 16; bits++) {
		unsigned long long d1 = 0, d2 = 0;
		unsigned int a = 0, b = 0;

		printf("lfsr %u", bits);
		for (k = 0, v = 0; k < 64; k++) {
			v = flashbench_lfsr(v, bits);
			printf(" %u", v);
		}
		printf("\nvm_lfsr %u", bits);
		for (k = 0, v = 0; k < 64; k++) {
			v = vm_lfsr(v, bits);
			printf(" %u", v);
		}
		for (k = 0; k < (1u << bits) + 5; k++) {
			a = flashbench_lfsr(a, bits);
			b = vm_lfsr(b, bits);
			d1 = d1 * 31 + a;
			d2 = d2 * 31 + b;
		}
		printf("\ndigest %u %llu %llu\n", bits, d1, d2);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		lfsrs();
		return 0;
	}

	static const long long edges[] = {
		0, 1, -1, 9, 10, 99, 100, 999, 1000, 1001, 1023, 1024, 1025, 1536,
		9999, 10000, 99499, 99500, 99949, 99950, 99999, 100000, 100499, 100500,
		101500, 999000, 999499, 999500, 999949, 999950, 999999, 1000000,
		1000500, 1048575, 1048576, 1048577, 9995000, 99950000, 999499999,
		999500000, 999999999, 1000000000, 1073741823, 1073741824, 1073741825,
		9999500000ll, 99995000000ll, 1234567890123ll, 9223372036854775807ll,
		-9223372036854775807ll - 1, -12, -999, -1000, -12345, -1234567, -99999999,
	};
	unsigned long long i;

	for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		row(edges[i]);
	/* Decimal and binary unit edges, and values around them. */
	for (i = 0; i < 40; i++) {
		long long p10 = 1, p2 = 1ll << i, k;
		for (k = 0; k < (long long)(i % 19); k++)
			p10 *= 10;
		for (k = -3; k <= 3; k++) {
			row(p10 * 5 + k);
			row(p2 + k);
			row(p2 * 3 / 2 + k);
		}
	}
	/* Pseudo-random values of every magnitude. */
	for (i = 0; i < 1000; i++) {
		unsigned long long h = mix(i);
		int bits = 1 + (int)(h % 62);
		row((long long)(mix(h) >> (64 - bits)));
	}
	return 0;
}
